"""Measure the norms on a CUDA GPU and write the results file the site shows.

    make bench-gpu        (or: .venv/bin/python scripts/bench_gpu.py [--output PATH])

Runs snippets/norm_speed.py's GPU path (gpu_benchmark: a fresh torch.compile(dynamic=False)
per size, inputs rotated past the L2, CUDA events) on LayerNorm and RMSNorm, fp32 and
bf16, at the size of a real LLM layer's activations; and the handbook's fused residual
add + RMSNorm kernel (snippets/fused_add_rms_norm.py) against the same add and
nn.RMSNorm run eagerly and compiled. Writes docs/experiments/results/gpu_norm_speed.json
(resnorm_site/gpu_results.py reads it at build time): the GPU, driver, CUDA, torch and
Triton versions, the commit, the hash of the measured code, the date, every sample.
Without CUDA it writes nothing and exits with status 2.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "hooks")]

import torch  # noqa: E402

from resnorm_site.gpu_results import CODE_FILES, RESULTS_FILE, SCHEMA, code_hash  # noqa: E402
from snippets import norm_speed as ns  # noqa: E402
from snippets.layer_norm import LayerNorm  # noqa: E402
from snippets.rms_norm import RMSNorm  # noqa: E402

# tokens x hidden: a 4096-wide model's activations at 32K tokens, an 8192-wide one's at
# 16K (both fill a large GPU's memory bandwidth), and the CPU page's large size
SIZES = [(4096, 4096), (32768, 4096), (16384, 8192)]
DTYPES = (torch.float32, torch.bfloat16)
REPEATS = 15
EPS = 1e-5
SCRATCH = {"layer_norm": LayerNorm, "rms_norm": RMSNorm}
FUSED = "fused_add_rms_norm"


def norm_variants(norm, hidden, dtype):
    """nn.*, F.*, from scratch, and torch.compile as a model at one shape gets it."""
    return ns.norm_variants(
        norm, hidden, SCRATCH[norm], eps=EPS, device="cuda", dtype=dtype,
        **ns.GPU_COMPILE,
    )  # fmt: skip


def fused_bytes(norm: str, rows: int, hidden: int, *, itemsize: int, passes: str) -> int:
    """The fewest bytes of (x, residual) -> (y, h = x + residual), y = RMSNorm(h) * weight
    (norm: FUSED; the signature of norm_speed.bytes_moved, which time_rows calls).

    forward reads x, the residual and the weight, writes h and y; for training it also
    writes rstd (fp32, one per row). backward reads dy, dh (the residual stream's own
    gradient), h, rstd and the weight, and writes dx (which is also the residual's
    gradient: h = x + residual) and the weight's gradient.
    """
    t, w, stats = rows * hidden * itemsize, hidden * itemsize, rows * ns.STAT_BYTES
    if passes == "forward":
        return 4 * t + w
    return (4 * t + w + stats) + (4 * t + stats + 2 * w)


def fused_calls(fn, x, r, w, dy, dh, passes):
    """One call of fn(x, r) -> (y, h): without autograd, or with the gradients of x, r, w."""
    if passes == "forward":

        def call():
            with torch.no_grad():
                return fn(x, r)

        return call
    x, r = x.detach().requires_grad_(), r.detach().requires_grad_()

    def call():
        return torch.autograd.grad(fn(x, r), (x, r, w), (dy, dh))

    return call


def fused_benchmark(sizes, dtypes, repeats, l2_bytes, min_sample_s=2e-3, max_number=100):
    """The fused kernel, eager add + nn.RMSNorm and their torch.compile, as gpu_benchmark
    times the norms: fresh compile per size, rotated inputs, CUDA events (norm_speed's
    warm_up and time_rows)."""
    from snippets.fused_add_rms_norm import fused_add_rms_norm

    table, failures = [], []
    for dtype, (rows, hidden) in ((d, s) for d in dtypes for s in sizes):
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(rows * 100_003 + hidden)
        base = [torch.randn(rows, hidden, generator=gen).to("cuda", dtype) for _ in range(4)]
        k = ns.rotation(base[0].numel() * base[0].element_size(), l2_bytes)
        sets = [[t.roll(i, dims=0) for t in base] for i in range(k)]  # x, r, dy, dh
        norm = torch.nn.RMSNorm(hidden, eps=EPS, device="cuda", dtype=dtype)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5, generator=torch.Generator("cuda").manual_seed(0))
        w = norm.weight

        def eager(x, r, norm=norm):
            h = x + r
            return norm(h), h

        impls = {
            "triton": lambda x, r, w=w: fused_add_rms_norm(x, r, w, EPS),
            "nn": eager,
            "compiled": torch.compile(eager, **ns.GPU_COMPILE),
        }
        calls, first, compiled = {}, {}, {}
        for impl, fn in impls.items():
            before = ns.compile_counts()
            for p in ns.PASSES:
                call = ns.cycling(fused_calls(fn, *s[:2], w, *s[2:], p) for s in sets)
                try:
                    first[(FUSED, impl, p)] = ns.warm_up(call, k, "cuda")
                except Exception as err:  # report it, race the rest
                    failures.append(
                        {"norm": FUSED, "impl": impl, "dtype": str(dtype).removeprefix("torch.")}
                        | {"rows": rows, "hidden": hidden, "error": ns.failure(err)}
                    )
                    break
                calls[(FUSED, impl, p)] = call
            if impl == "compiled":
                warm = ns.compile_counts()
                compiled[(FUSED, impl)] = {key: warm[key] - before[key] for key in warm}
        table += ns.time_rows(
            calls, first, compiled, [s[0] for s in sets], fused_bytes, device="cuda",
            repeats=repeats, min_sample_s=min_sample_s, max_number=max_number,
        )  # fmt: skip
        del sets, calls, base
    return table, failures


def old_method(repeats, *, sizes=((2048, 1024), (4096, 4096)), device="cuda", variants=None):
    """The compiled modules timed as the page's CPU race times them, which is how it timed
    them on a GPU before: torch.compile(dynamic=True) made once per norm and hidden size
    and reused by every row count, its compiled code cached beside earlier compiles; the
    wall clock over back-to-back calls closed by a synchronize; one input, not rotated.
    Kept beside the new figures: the difference is what the old way got wrong."""
    torch._dynamo.reset()

    def page_variants(norm, hidden):
        return ns.norm_variants(norm, hidden, SCRATCH[norm], eps=EPS, device=device)

    table, failures = ns.benchmark(
        list(sizes), variants or page_variants, only=("compiled", "nn"), device=device,
        repeats=repeats, min_sample_s=0.01, max_number=100,
    )  # fmt: skip
    for row in table:
        row |= {"dtype": "float32", "timer": "wall clock", "host_samples": None}
        row["compile"] = {"dynamic": True, "mode": "default", "reused": True}
        row["compile"] = row["compile"] if row["impl"] == "compiled" else None
    return table, failures


def _run(*cmd) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def machine() -> dict:
    """The GPU and the software that ran on it."""
    props = torch.cuda.get_device_properties(0)
    driver = _run("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    try:
        triton = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        triton = None
    return {
        "gpu": torch.cuda.get_device_name(0),
        "driver": driver.splitlines()[0] if driver else None,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": triton,
        "l2_bytes": props.L2_cache_size,
        "memory_bytes": props.total_memory,
        "sms": props.multi_processor_count,
        "cpu": ns.machine_parts()["cpu"],
    }


def document(
    rows, failures, fused_rows, fused_failures, gpu, settings, root=ROOT, old_rows=(),
    commit=None,
) -> dict:  # fmt: skip
    """The results file's content: where, when and on what code, then every sample.
    commit: the commit measured, for a copy of the tree without its .git (the code hash
    still says whether the measured code is the code of the page)."""
    dirty = None
    if commit is None:
        commit = _run("git", "rev-parse", "HEAD")
        dirty = _run("git", "status", "--porcelain", "--", *CODE_FILES)
    return {
        "schema": SCHEMA,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit or "unknown",
        "dirty": bool(dirty),
        "code_hash": code_hash(root),
        "code_files": list(CODE_FILES),
        "machine": gpu,
        "settings": settings,
        "rows": rows,
        "fused_rows": fused_rows,
        "old_method_rows": list(old_rows),
        "failures": [
            {"norm": norm, "impl": impl, "dtype": str(dtype).removeprefix("torch.")}
            | {"rows": r, "hidden": h, "error": why}
            for (norm, impl, dtype, r, h), why in failures.items()
        ]
        + fused_failures,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / RESULTS_FILE)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument(
        "--commit", help="the commit measured, where the tree is a copy without .git"
    )
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(
            "bench-gpu needs a CUDA GPU, and torch.cuda.is_available() is False here: "
            f"nothing measured, {args.output} not written.",
            file=sys.stderr,
        )
        return 2
    gpu = machine()
    print(f"measuring on {gpu['gpu']} (L2 {gpu['l2_bytes'] / 2**20:.0f} MiB)", flush=True)
    start = time.perf_counter()

    def done(stage, table, how=""):
        print(f"{stage}: {time.perf_counter() - start:.0f} s", flush=True)
        for r in table:
            print(
                f"{how}{r['dtype']:9} {r['rows']:>6}x{r['hidden']:<5} {r['norm']:18} "
                f"{r['impl']:9} {r['passes']:16} {r['pct_of_copy']:5.0f}% of copy",
                flush=True,
            )

    rows, failures = ns.gpu_benchmark(SIZES, norm_variants, dtypes=DTYPES, repeats=args.repeats)
    done("norms", rows)
    fused_rows, fused_failures = fused_benchmark(SIZES, DTYPES, args.repeats, gpu["l2_bytes"])
    done("fused add + RMSNorm", fused_rows)
    old_rows, _ = old_method(args.repeats)
    done("the old way", old_rows, "old way: ")
    for failure in [*failures.items(), *fused_failures]:
        print("failed:", failure, flush=True)
    settings = {
        "sizes": SIZES,
        "dtypes": [str(d).removeprefix("torch.") for d in DTYPES],
        "repeats": args.repeats,
        "eps": EPS,
        "compile": ns.GPU_COMPILE,
        "l2_rotation": ns.L2_ROTATION,
    }
    doc = document(
        rows,
        failures,
        fused_rows,
        fused_failures,
        gpu,
        settings,
        old_rows=old_rows,
        commit=args.commit,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
