"""ruff over the Python the project ships: snippets, tests, notebooks, hooks, scripts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

TARGETS = ["snippets", "tests", "docs/notebooks", "hooks", "scripts"]


@pytest.mark.parametrize(
    "command", [["check"], ["format", "--check", "--diff"]], ids=["check", "format"]
)
def test_ruff(command):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *TARGETS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
