# ResNorm: set-up, serve, test, build, benchmark.
#   make serve   set everything up, then serve the site on http://127.0.0.1:8000
#   make test    set everything up, then run every test (code blocks, snippets,
#                site build, links, browser, lint, workflows)
#   make test-unit    the unit tier: snippets, build logic, parsers, static checks, lint
#   make test-device  what depends on the device (CI's GPU job): snippets, code blocks,
#                notebooks
#   make build   build the static site into site/ (mkdocs build --strict)
#   make bench   print the site's speed and size figures
#   make bench-gpu  measure the norms on a CUDA GPU and write
#                docs/experiments/results/gpu_norm_speed.json, which the site shows

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SERVE_ADDR ?= 127.0.0.1:8000
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup prereqs browser serve test test-unit test-device build bench bench-gpu clean

setup: $(VENV)/.installed node_modules/.installed

prereqs:
	@scripts/check_prereqs.sh

$(VENV)/.installed: requirements.txt
	@PYTHON=$(PYTHON) scripts/check_prereqs.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

node_modules/.installed: package.json package-lock.json
	@PYTHON=$(PYTHON) scripts/check_prereqs.sh
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

browser:
	@scripts/install_chromium.sh

serve: setup
	$(BIN)/mkdocs serve --dirty -a $(SERVE_ADDR)  # hooks/serve.py keeps dirty rebuilds right

test: setup browser
	$(BIN)/python -m pytest

test-unit: setup
	$(BIN)/python -m pytest -m "not build and not browser and not reader"

test-device: setup
	$(BIN)/python -m pytest -m "not browser" tests/snippets tests/test_devices.py tests/test_codeblocks.py tests/test_notebooks.py

build: setup
	$(BIN)/mkdocs build --strict

bench: setup browser
	$(BIN)/python scripts/bench_site.py

bench-gpu: setup  # needs CUDA: without it, writes nothing and fails
	$(BIN)/python scripts/bench_gpu.py

clean:
	rm -rf site .cache test-artifacts
