"""Sweep the launch settings of the fused residual add + RMSNorm kernel on a CUDA GPU.

    .venv/bin/python scripts/tune_fused_gpu.py [--sizes 32768x4096 16384x8192]

snippets/fused_add_rms_norm.py launches its forward kernel with the Triton tutorial's
num_warps and its backward with PROGRAMS_PER_SM programs per multiprocessor. This script
launches the same two kernels with other settings and prints, for each, the share of a
copy's bandwidth it reached (bytes the kernel must move / time, over a copy of the same
bytes timed the same way): the figures that choose the module's settings. It writes no
file; `make bench-gpu` measures the settings the module has.

Timed by triton.testing.do_bench (CUDA events, the L2 cleared before every call), median
of its repeats; every setting is timed three times, interleaved, and the spread printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from snippets import fused_add_rms_norm as fa  # noqa: E402

EPS = 1e-5


def size(text: str) -> tuple[int, int]:
    rows, hidden = text.lower().split("x")
    return int(rows), int(hidden)


def forward(x, r, w, y, h, rstd, warps):
    rows, hidden = x.shape
    block = triton.next_power_of_2(hidden)

    def call():
        fa.fused_add_rms_norm_fwd[(rows,)](
            x, r, w, y, h, rstd, x.stride(0), r.stride(0), hidden, EPS,
            BLOCK=block, num_warps=warps,
        )  # fmt: skip

    return call


def backward(dy, dh, h, w, rstd, dx, programs, warps):
    rows, hidden = dy.shape
    block = triton.next_power_of_2(hidden)
    partial = torch.empty((programs, hidden), dtype=torch.float32, device=dy.device)

    def call():
        fa.fused_add_rms_norm_bwd[(programs,)](
            dy, dh, h, w, rstd, dx, partial, dy.stride(0), dh.stride(0), rows, hidden,
            programs, HAS_DH=True, BLOCK=block, num_warps=warps,
        )  # fmt: skip
        return partial.sum(dim=0).to(w.dtype)

    return call


def race(calls: dict, rounds: int = 3) -> dict:
    """{name: [median ms per round]}: every call timed once per round, rounds interleaved."""
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(do_bench(call, warmup=10, rep=50, return_mode="median"))
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=size, default=[(32768, 4096), (16384, 8192)])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "tune_fused_gpu needs a CUDA GPU; torch.cuda.is_available() is False", file=sys.stderr
        )
        return 2
    dtype = getattr(torch, args.dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sms} SMs, triton {triton.__version__}, {dtype}")
    print(f"module: PROGRAMS_PER_SM = {fa.PROGRAMS_PER_SM}, BACKWARD_WARPS = {fa.BACKWARD_WARPS}")
    for rows, hidden in args.sizes:
        t = [torch.randn(rows, hidden, device="cuda", dtype=dtype) for _ in range(4)]
        x, r, dy, dh = t
        w = torch.rand(hidden, device="cuda", dtype=dtype) + 0.5
        y, h, dx = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
        rstd = torch.empty(rows, device="cuda", dtype=torch.float32)
        tensor = x.numel() * x.element_size()
        _, default_warps = fa._launch(hidden, x.element_size())
        _, backward_warps = fa._launch(hidden, x.element_size(), backward=True)
        fwd = {f"fwd num_warps={nw}": forward(x, r, w, y, h, rstd, nw) for nw in (2, 4, 8, 16)}
        bwd = {
            f"bwd programs/SM={p} num_warps={nw}": backward(dy, dh, h, w, rstd, dx, p * sms, nw)
            for p in (1, 2, 4, 8, 16)
            for nw in (4, 8, 16)
        }
        copy = {"copy": lambda y=y, x=x: y.copy_(x)}
        times = race(copy | fwd | bwd)
        copy_s = statistics.median(times["copy"]) * 1e-3
        copy_bw = 2 * tensor / copy_s
        stats, weight = rows * 4, hidden * x.element_size()  # rstd: fp32, one per row
        # the fewest bytes each must move: forward reads x, r, w and writes h, y, rstd;
        # backward reads dy, dh, h, w, rstd and writes dx (the partial sums are extra)
        moved = {"fwd": 4 * tensor + weight + stats, "bwd": 4 * tensor + weight + stats}
        print(
            f"\n{rows}x{hidden}: copy {copy_bw / 1e9:.0f} GB/s; "
            f"the module's num_warps: forward {default_warps}, backward {backward_warps}"
        )
        for name, ms in times.items():
            if name == "copy":
                continue
            pct = [moved[name[:3]] / (m * 1e-3) / copy_bw * 100 for m in ms]
            print(
                f"  {name:34} {statistics.median(pct):5.1f}% of copy "
                f"(rounds {min(pct):.1f}-{max(pct):.1f})"
            )
        del t, fwd, bwd, copy
    return 0


if __name__ == "__main__":
    sys.exit(main())
