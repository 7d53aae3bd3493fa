"""The device fixture covers what the machine has, and REQUIRE_CUDA=1 guards GPU runners."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import ROOT, available_devices


def test_devices_listed():
    devices = available_devices()
    assert devices[0] == "cpu"
    assert ("cuda" in devices) == torch.cuda.is_available()


def test_device_fixture_gives_usable_devices(device):
    x = torch.arange(4.0, device=device)
    assert (x * 2).sum().item() == 12.0


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="CUDA is available: the guard has nothing to stop"
)
def test_require_cuda_fails_without_cuda():
    env = dict(os.environ, REQUIRE_CUDA="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_devices.py::test_devices_listed",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "REQUIRE_CUDA=1 but torch.cuda.is_available() is False" in proc.stdout + proc.stderr
