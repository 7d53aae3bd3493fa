"""Shared fixtures: the devices to test on, and the built site."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


def available_devices() -> list[str]:
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def pytest_configure(config):
    if os.environ.get("REQUIRE_CUDA") == "1" and not torch.cuda.is_available():
        raise pytest.UsageError(
            "REQUIRE_CUDA=1 but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda}). "
            "A GPU runner must not pass on CPU alone."
        )


def pytest_collection_modifyitems(config, items):
    """A test that reads the built site belongs to the end-to-end tier (``-m build``),
    whichever fixture brings the site in; the unit tier is ``-m "not build and not
    browser and not reader"`` (the README's ``make test-unit``)."""
    for item in items:
        if "built_site" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.build)


def pytest_report_header(config):
    return f"torch {torch.__version__}; devices under test: {', '.join(available_devices())}"


@pytest.fixture(params=available_devices())
def device(request) -> torch.device:
    """Every test that takes ``device`` runs once per available device."""
    return torch.device(request.param)


@pytest.fixture
def one_thread():
    """One intra-op thread for tests on tiny tensors (threads only add synchronization, and
    waiting on a busy machine); the previous setting is restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def mkdocs_build(
    site_dir: Path, config_file: Path | None = None, cache: Path | None = None
) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` from the repository root, as the README runs it; with
    ``cache``, the build keeps its notebook runs, diagrams and search entries there
    (RESNORM_CACHE_DIR) instead of in the repository's .cache/."""
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]
    if config_file is not None:
        cmd += ["--config-file", str(config_file)]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    if cache is not None:
        env["RESNORM_CACHE_DIR"] = str(cache)
    # A first build runs every notebook; on two busy cores that took more than 15 minutes.
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=1800)


BILINGUAL = """site_name: t
theme: {{name: material, language: en, font: false}}
{extensions}plugins:
{plugins}  - i18n:
      docs_structure: suffix
      reconfigure_material: false
      languages:
        - {{locale: en, default: true, name: English, build: true}}
        - {{locale: zh, name: 中文, build: true, theme: {{language: zh}}}}
hooks:
{hooks}
"""


def bilingual_site(
    root: Path, pages: dict[str, str], hooks: list[str], extensions="", plugins=""
) -> Path:
    """A two-language site (English at /, Chinese at /zh/, as the real one) with ``pages``
    under root/docs and the project's ``hooks``; its mkdocs.yml, for mkdocs_build.
    ``extensions`` and ``plugins``: YAML lines put before the i18n plugin."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    lines = "\n".join(f"  - {ROOT / 'hooks' / h}" for h in hooks)
    config = root / "mkdocs.yml"
    text = BILINGUAL.format(extensions=extensions, plugins=plugins, hooks=lines)
    config.write_text(text, encoding="utf-8")
    return config


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The site, built once per test session with ``--strict``."""
    site = tmp_path_factory.mktemp("site")
    proc = mkdocs_build(site)
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    return site


# --- The built site in a browser ----------------------------------------------------------

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def server(built_site: Path):
    """The built site over HTTP on a free local port; its base address."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium, driven by Playwright."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "Debian's chromium is needed for the browser tests: apt-get install chromium "
            "(the README's test command installs it)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()
