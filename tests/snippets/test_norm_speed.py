"""snippets/norm_speed.py: the bytes model, the timer, and a fair race against nn.* and F.*.

torch.compile's code generation is not run here (a cold compile takes seconds): the GPU
path's tests compile with backend="eager", Dynamo's capture and cache alone. The notebook
docs/experiments/norm_speed.py checks the compiled variants against nn.* before timing them.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from snippets.layer_norm import LayerNorm
from snippets.norm_speed import (
    FASTER,
    FORWARD_FLOPS_PER_ELEMENT,
    GPU_COMPILE,
    IMPLEMENTATIONS,
    MIN_SAMPLES,
    NORMS,
    PASSES,
    SLOWER,
    UNRESOLVED,
    Spread,
    benchmark,
    bytes_moved,
    compare,
    compile_counts,
    copy_bandwidth,
    cycling,
    describe,
    event_times,
    false_difference_rate,
    fastest,
    fastest_group,
    find,
    gpu_benchmark,
    interleaved_times,
    keep_freed_memory,
    l2_cache_bytes,
    machine,
    machine_parts,
    matmul_flops,
    max_error,
    median_time,
    minor_page_faults,
    norm_call,
    norm_variants,
    op_traffic,
    pct_of_copy,
    quartiles,
    ratio_spread,
    rotation,
    speedup,
    time_norm,
)
from snippets.rms_norm import RMSNorm

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = {"layer_norm": LayerNorm, "rms_norm": RMSNorm}
FAST = {"warmup": 0, "repeats": 1}


def eager_variants(norm, hidden, device="cpu"):
    """All variants but the compiled one, which would compile on its first call."""
    return norm_variants(norm, hidden, SCRATCH[norm], compile=False, device=device)


# --- the bytes model -------------------------------------------------------------------


def test_bytes_forward_on_a_known_shape():
    # x is 2 x 3 fp32 = 24 bytes; read x, write y; LayerNorm reads weight and bias (12 + 12)
    assert bytes_moved("layer_norm", 2, 3) == 24 + 24 + 24
    assert bytes_moved("rms_norm", 2, 3) == 24 + 24 + 12  # weight only
    assert bytes_moved("rms_norm", 2, 3, itemsize=2) == 12 + 12 + 6  # bf16


def test_bytes_forward_backward_on_a_known_shape():
    # RMSNorm, 2 x 3 fp32: forward reads x (24) and weight (12), writes y (24) and rstd (2 * 4);
    # backward reads x, grad_y (48), rstd (8) and weight (12), writes grad_x (24), grad_w (12)
    assert bytes_moved("rms_norm", 2, 3, passes="forward+backward") == (24 + 12 + 24 + 8) + (
        48 + 8 + 12 + 24 + 12
    )
    # LayerNorm: two statistics per row (mean, rstd) and two parameters (weight, bias)
    forward = 24 + 24 + 24 + 2 * 2 * 4
    backward = 48 + 2 * 2 * 4 + 12 + 24 + 24  # reads x, grad_y, stats, weight; writes grads
    assert bytes_moved("layer_norm", 2, 3, passes="forward+backward") == forward + backward


def test_large_rows_cost_five_passes_over_x_for_training():
    # forward reads x and writes y; backward reads x and grad_y and writes grad_x
    n = 8192 * 4096 * 4
    ratio = bytes_moved("rms_norm", 8192, 4096, passes="forward+backward") / n
    assert ratio == pytest.approx(5.0, rel=1e-3)
    assert bytes_moved("layer_norm", 8192, 4096) / n == pytest.approx(2.0, rel=1e-3)


def test_flop_counts_follow_the_formulas():
    assert FORWARD_FLOPS_PER_ELEMENT == {"layer_norm": 7, "rms_norm": 4}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"norm": "batch_norm"}, ValueError, "norm must be one of"),
        ({"passes": "backward"}, ValueError, "passes must be one of"),
        ({"rows": 0}, ValueError, "rows must be a positive int, got 0"),
        ({"hidden": 2.5}, ValueError, r"hidden must be a positive int, got 2\.5"),
        ({"itemsize": True}, ValueError, "itemsize must be a positive int, got True"),
    ],
)
def test_bytes_model_rejects_bad_arguments(kwargs, error, match):
    args = {"norm": "layer_norm", "rows": 2, "hidden": 3} | kwargs
    with pytest.raises(error, match=match):
        bytes_moved(args.pop("norm"), args.pop("rows"), args.pop("hidden"), **args)


# --- the timers ------------------------------------------------------------------------


def test_median_time_is_positive_finite_and_calls_as_asked():
    calls = []
    t = median_time(lambda: calls.append(sum(range(1000))), warmup=2, repeats=3, number=4)
    assert t > 0 and math.isfinite(t)
    assert len(calls) == 2 + 3 * 4


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"warmup": -1}, ValueError, "warmup must be an int >= 0, got -1"),
        ({"repeats": 0}, ValueError, "repeats must be an int >= 1, got 0"),
        ({"number": 1.0}, ValueError, r"number must be an int >= 1, got 1\.0"),
        ({"fn": "x"}, TypeError, "fn must be callable, got str"),
    ],
)
def test_median_time_rejects_bad_arguments(kwargs, error, match):
    args = {"fn": lambda: None} | kwargs
    with pytest.raises(error, match=match):
        median_time(args.pop("fn"), **args)


def test_interleaved_times_round_robin_in_a_seeded_random_order():
    log = []
    calls = {name: (lambda name=name: log.append(name)) for name in "abcd"}
    samples = interleaved_times(calls, repeats=5, number=2, seed=3)
    assert set(samples) == set("abcd")
    assert all(len(s) == 5 and all(t > 0 and math.isfinite(t) for t in s) for s in samples.values())
    rounds = [log[i : i + 8] for i in range(0, len(log), 8)]  # 4 callables x 2 calls per sample
    assert len(rounds) == 5
    for r in rounds:  # every callable sampled once per round, its calls back to back
        assert sorted(r) == sorted("aabbccdd") and all(r[i] == r[i + 1] for i in range(0, 8, 2))
    orders = [tuple(r[::2]) for r in rounds]
    assert len(set(orders)) > 1  # the order changes from round to round
    log.clear()
    interleaved_times(calls, repeats=5, number=2, seed=3)
    assert [tuple(r[::2]) for r in (log[i : i + 8] for i in range(0, 40, 8))] == orders


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"calls": {}}, ValueError, "calls must be a non-empty dict of callables"),
        ({"calls": [print]}, ValueError, "calls must be a non-empty dict of callables"),
        ({"calls": {"a": 3}}, TypeError, r"calls\['a'\] must be callable, got int"),
        ({"repeats": 0}, ValueError, "repeats must be an int >= 1, got 0"),
        ({"number": True}, ValueError, "number must be an int >= 1, got True"),
    ],
)
def test_interleaved_times_rejects_bad_arguments(kwargs, error, match):
    args = {"calls": {"a": lambda: None}} | kwargs
    with pytest.raises(error, match=match):
        interleaved_times(args.pop("calls"), **args)


def test_copy_and_matmul_rates_are_positive_finite(device):
    copy = copy_bandwidth(4096, device=device, **FAST)
    clone = copy_bandwidth(4096, fresh=True, device=device, **FAST)
    flops = matmul_flops(32, device=device, **FAST)
    for rate in (copy, clone, flops):
        assert rate > 0 and math.isfinite(rate)
    with pytest.raises(ValueError, match="numel must be a positive int, got 0"):
        copy_bandwidth(0)
    with pytest.raises(ValueError, match="n must be a positive int, got -3"):
        matmul_flops(-3)


# --- the spread and the verdict rule ----------------------------------------------------


def test_quartiles_interpolate_like_numpy():
    assert quartiles([4.0, 1.0, 3.0, 2.0, 5.0]) == (3.0, 2.0, 4.0)  # unsorted input
    assert quartiles([1.0, 2.0, 3.0, 4.0]) == (2.5, 1.75, 3.25)
    assert quartiles([2.0]) == (2.0, 2.0, 2.0)  # one sample: a range of zero width
    assert quartiles((1, 1, 1)) == Spread(1, 1, 1)  # ints are numbers too


def test_one_outlier_barely_moves_the_range():
    calm = [1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06]
    assert quartiles([*calm[:-1], 50.0]).high == pytest.approx(quartiles(calm).high)


def test_disjoint_ranges_are_a_difference_both_ways():
    fast, slow = [1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4]
    assert compare(fast, slow) == FASTER
    assert compare(slow, fast) == SLOWER


def test_overlapping_ranges_are_no_measurable_difference():
    a, b = [1.0, 1.1, 1.2, 1.3, 1.4], [1.15, 1.25, 1.35, 1.45, 1.55]
    assert quartiles(a).median < quartiles(b).median  # the medians alone would pick a
    assert compare(a, b) == compare(b, a) == UNRESOLVED


def test_identical_and_touching_ranges_are_no_measurable_difference():
    a = [1.0, 2.0, 3.0]
    assert compare(a, list(a)) == UNRESOLVED
    assert compare([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == UNRESOLVED
    assert compare([1.0, 2.0, 2.0], [2.0, 2.0, 3.0]) == UNRESOLVED  # ranges touch at 2.0


def test_zero_width_ranges_that_differ_are_a_difference():
    assert compare([1.0, 1.0, 1.0], [1.5, 1.5, 1.5]) == FASTER


def test_a_wide_outlier_does_not_hide_a_clear_difference():
    fast = [1.0, 1.0, 1.1, 1.1, 9.0]  # one sample caught by background load
    slow = [2.0, 2.1, 2.1, 2.2, 2.2]
    assert compare(fast, slow) == FASTER


def test_compare_needs_enough_samples():
    with pytest.raises(ValueError, match=rf"samples_a must hold at least {MIN_SAMPLES} timings"):
        compare([1.0], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match=r"samples_b must hold at least 3 timings.*got 2"):
        compare([1.0, 1.0, 1.0], iter([2.0, 2.0]))


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ([], ValueError, "samples_a is empty"),
        ([1.0, float("nan"), 1.0], ValueError, "positive finite seconds, got nan"),
        ([1.0, float("inf"), 1.0], ValueError, "positive finite seconds, got inf"),
        ([1.0, -1.0, 1.0], ValueError, r"positive finite seconds, got -1\.0"),
        ([1.0, 0.0, 1.0], ValueError, r"positive finite seconds, got 0\.0"),
        ([1.0, "2", 1.0], TypeError, "must hold real numbers, got '2'"),
        ([1.0, True, 1.0], TypeError, "must hold real numbers, got True"),
        (1.0, TypeError, "samples_a must be a sequence of seconds, got float"),
        ("123", TypeError, "samples_a must be a sequence of seconds, got str"),
    ],
)
def test_compare_rejects_bad_timings(bad, error, match):
    with pytest.raises(error, match=match):
        compare(bad, [1.0, 1.0, 1.0])


def test_quartiles_and_ratio_reject_bad_timings():
    with pytest.raises(ValueError, match="samples is empty"):
        quartiles([])
    with pytest.raises(ValueError, match="positive finite seconds, got nan"):
        ratio_spread([1.0], [float("nan")])


def test_ratio_range_excludes_one_exactly_when_compare_finds_a_difference():
    fast, slow = [1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4]
    s = ratio_spread(slow, fast)  # t_slow / t_fast: a speedup of fast over slow
    assert s.median == pytest.approx(2.2 / 1.2)
    assert s.low == pytest.approx(2.1 / 1.3) and s.high == pytest.approx(2.3 / 1.1)
    assert s.low > 1 and compare(fast, slow) == FASTER
    near = [1.15, 1.25, 1.35, 1.45, 1.55]
    r = ratio_spread(near, fast)
    assert r.low <= 1 <= r.high and compare(fast, near) == UNRESOLVED


def test_false_differences_are_rare_with_enough_samples():
    few, many = false_difference_rate(5, trials=1000), false_difference_rate(15, trials=1000)
    assert 0 <= many < few <= 1
    assert few > 0.1  # 5 samples: the rule calls one distribution different often
    assert many < 0.02  # 15 samples: rarely
    assert false_difference_rate(9, trials=200, seed=4) == false_difference_rate(
        9, trials=200, seed=4
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"repeats": 2}, "repeats must be an int >= 3, got 2"),
        ({"repeats": 15.0}, r"repeats must be an int >= 3, got 15\.0"),
        ({"trials": 0}, "trials must be an int >= 1, got 0"),
    ],
)
def test_false_difference_rate_rejects_bad_arguments(kwargs, match):
    args = {"repeats": 15} | kwargs
    with pytest.raises(ValueError, match=match):
        false_difference_rate(args.pop("repeats"), **args)


def test_describe_words_each_verdict():
    assert describe(FASTER, "RMSNorm", "LayerNorm") == "RMSNorm is faster than LayerNorm"
    assert describe(SLOWER, "RMSNorm", "LayerNorm") == "RMSNorm is slower than LayerNorm"
    assert describe(UNRESOLVED, "a", "b") == (
        "no difference between a and b was measurable at this precision"
    )
    with pytest.raises(ValueError, match=r"verdict must be one of .* got 'quicker'"):
        describe("quicker", "a", "b")


# --- the machine -----------------------------------------------------------------------


def test_machine_reads_the_cpu_model_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU 9000 @ 3.0GHz\nflags\t: sse\n")
    text = machine(info)
    assert text.startswith("CPU Test CPU 9000 @ 3.0GHz, ")
    assert f"{os.cpu_count()} logical CPUs" in text
    assert f"{torch.get_num_threads()} torch threads" in text
    assert f"torch {torch.__version__}" in text


@pytest.mark.parametrize("content", [None, "processor\t: 0\nCPU part\t: 0xd0c\n"])
def test_machine_falls_back_without_a_model_name(tmp_path, content):
    info = tmp_path / "cpuinfo"
    if content is not None:  # ARM Linux has no "model name" line; other systems no file
        info.write_text(content)
    want = platform.processor() or platform.machine() or "unknown CPU"
    assert machine(str(info)).startswith(f"CPU {want}, ")


def test_machine_names_the_gpu_when_cuda_is_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Test GPU 80GB")
    assert machine().endswith(", GPU Test GPU 80GB")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert machine().endswith(", no CUDA GPU")


def test_machine_parts_are_the_line_in_pieces(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: Test CPU 9000\n")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    parts = machine_parts(info)
    assert parts == {
        "cpu": "Test CPU 9000",
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "gpu": None,
    }
    assert machine(info) == (
        f"CPU Test CPU 9000, {os.cpu_count()} logical CPUs, {torch.get_num_threads()} torch "
        f"threads, torch {torch.__version__}, no CUDA GPU"
    )
    with pytest.raises(TypeError, match="cpuinfo must be a path, got int"):
        machine_parts(3)


def test_machine_rejects_a_non_path():
    with pytest.raises(TypeError, match="cpuinfo must be a path, got int"):
        machine(3)  # open(3) would read file descriptor 3


# --- a fair race: every variant computes nn.*'s numbers --------------------------------


@pytest.mark.parametrize("norm", NORMS)
def test_variants_match_pytorch_forward_and_backward(norm, device):
    hidden = 16
    variants = eager_variants(norm, hidden, device)
    assert set(variants) == set(IMPLEMENTATIONS) - {"compiled"}
    ref = variants["nn"]
    params = list(ref.parameters())
    assert len(params) == (2 if norm == "layer_norm" else 1)
    assert not torch.allclose(params[0], torch.ones_like(params[0]))  # not a default weight
    torch.manual_seed(0)
    x = torch.randn(4, 3, hidden, device=device) * 3 + 1
    grad_y = torch.randn_like(x)

    def run(fn):
        xi = x.clone().requires_grad_()
        y = fn(xi)
        return (y, *torch.autograd.grad(y, (xi, *params), grad_y))

    expected = run(ref)
    for name, fn in variants.items():
        for got, want in zip(run(fn), expected, strict=True):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, msg=name)


@pytest.mark.parametrize("norm", NORMS)
def test_max_error_is_zero_for_the_reference_and_small_for_the_rest(norm, device):
    variants = eager_variants(norm, 32, device)
    x = torch.randn(5, 32, device=device) * 2 + 0.5
    errors = max_error(variants, x)
    assert set(errors) == {"scratch", "nn", "F"}
    assert errors["nn"] == 0.0
    assert all(0 <= e < 1e-4 for e in errors.values())
    errors_vs_scratch = max_error(variants, x, reference="scratch")
    assert errors_vs_scratch["scratch"] == 0.0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # importing torch._dynamo warns
@pytest.mark.parametrize("norm", NORMS)
def test_compiled_variant_wraps_the_from_scratch_module(norm):
    variants = norm_variants(norm, 8, SCRATCH[norm])  # built, not called: nothing compiles
    compiled = variants["compiled"]
    assert isinstance(compiled, torch._dynamo.eval_frame.OptimizedModule)
    assert compiled._orig_mod is variants["scratch"]
    assert variants["scratch"].weight is variants["nn"].weight  # one set of parameters


def test_same_function_for_both_norm_defaults():
    # RMSNorm gets LayerNorm's eps, not nn.RMSNorm's machine-epsilon default: a like-for-like race
    variants = eager_variants("rms_norm", 8)
    assert variants["nn"].eps == variants["scratch"].eps == 1e-5
    assert isinstance(variants["nn"], nn.RMSNorm)
    with pytest.raises(ValueError, match="norm must be one of"):
        norm_variants("group_norm", 8, LayerNorm)


@pytest.mark.parametrize("passes", PASSES)
def test_time_norm_times_both_passes(passes, device):
    variants = eager_variants("layer_norm", 8, device)
    x = torch.randn(4, 8, device=device)
    t = time_norm(variants["scratch"], x, list(variants["nn"].parameters()), passes=passes, **FAST)
    assert t > 0 and math.isfinite(t)
    assert not x.requires_grad  # the caller's tensor is left alone


def test_time_norm_rejects_an_unknown_pass():
    with pytest.raises(ValueError, match="passes must be one of"):
        time_norm(torch.relu, torch.ones(2, 2), [], passes="backward")
    with pytest.raises(ValueError, match="passes must be one of"):
        norm_call(torch.relu, torch.ones(2, 2), [], passes="")


def test_norm_call_returns_the_output_or_the_gradients():
    variants = eager_variants("rms_norm", 4)
    params = list(variants["nn"].parameters())
    x = torch.randn(3, 4)
    y = norm_call(variants["nn"], x, params)()
    assert not y.requires_grad and y.shape == x.shape
    grads = norm_call(variants["nn"], x, params, passes="forward+backward")()
    assert [g.shape for g in grads] == [x.shape, params[0].shape]
    # the default upstream gradient is cos(x); another one changes the gradients accordingly
    same = norm_call(variants["nn"], x, params, passes="forward+backward", grad_y=torch.cos(x))()
    doubled = norm_call(variants["nn"], x, params, passes=PASSES[1], grad_y=2 * torch.cos(x))()
    for g, s, d in zip(grads, same, doubled, strict=True):
        torch.testing.assert_close(s, g)
        torch.testing.assert_close(d, 2 * g)


@pytest.mark.parametrize(
    ("grad_y", "match"),
    [
        (torch.ones(4, 3), r"grad_y must be a tensor of x's shape \(3, 4\), got \(4, 3\)"),
        ([[1.0] * 4] * 3, r"grad_y must be a tensor of x's shape \(3, 4\), got list"),
    ],
)
def test_norm_call_rejects_a_grad_y_unlike_x(grad_y, match):
    with pytest.raises(ValueError, match=match):
        norm_call(torch.relu, torch.ones(3, 4), [], passes="forward+backward", grad_y=grad_y)


# --- what eager implementations run ----------------------------------------------------


def test_op_traffic_of_nn_layer_norm_is_the_ideal():
    variants = eager_variants("layer_norm", 64)
    params = list(variants["nn"].parameters())
    x = torch.randn(16, 64)
    n = x.numel() * x.element_size()
    assert op_traffic(variants["nn"], x, params) == [("native_layer_norm", 2 * n)]
    backward = op_traffic(variants["nn"], x, params, passes="forward+backward")
    assert backward == [("native_layer_norm", 2 * n), ("native_layer_norm_backward", 3 * n)]


def test_op_traffic_of_the_from_scratch_rms_norm_follows_its_code():
    # x.pow(2) writes a temporary, .mean reads it, then two multiplies each read and write
    variants = eager_variants("rms_norm", 64)
    x = torch.randn(16, 64)
    n = x.numel() * x.element_size()
    ops = op_traffic(variants["scratch"], x, list(variants["nn"].parameters()))
    assert ops == [("pow", 2 * n), ("mean", n), ("mul", 2 * n), ("mul", 2 * n)]


# --- the allocator ---------------------------------------------------------------------


def test_a_fresh_large_tensor_faults_its_pages():
    faults = minor_page_faults(lambda: torch.ones(16 * 2**20))  # 64 MiB, above glibc's mmap max
    if faults is None:
        pytest.skip("no resource module on this platform")
    assert faults > 0


def test_keep_freed_memory_in_a_child_process():
    # a child process: the setting lasts for the life of the process that makes it
    code = "from snippets.norm_speed import keep_freed_memory; print(keep_freed_memory(1 << 28))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert done.stdout.strip() in ({"True"} if glibc else {"True", "False"})


@pytest.mark.parametrize("limit", [0, -5, 2**31, True, 1.5])
def test_keep_freed_memory_rejects_bad_limits(limit):
    with pytest.raises(ValueError, match=r"limit must be an int in \(0, 2\*\*31\)"):
        keep_freed_memory(limit)


# --- the results table -----------------------------------------------------------------


def test_benchmark_table_has_one_row_per_measurement(device):
    sizes = [(4, 8), (2, 16)]
    # the variants' weights on the device of x, as the notebook's GPU part builds them
    variants = functools.partial(eager_variants, device=device)
    table, failures = benchmark(sizes, variants, device=device, repeats=3)
    assert failures == {}
    assert len(table) == len(sizes) * len(NORMS) * 3 * len(PASSES)
    for row in table:
        assert len(row["samples"]) == len(row["copy_samples"]) == len(row["clone_samples"]) == 3
        assert row["seconds"] == quartiles(row["samples"]).median
        assert row["first_call_s"] > 0 and math.isfinite(row["gbps"])
        want = bytes_moved(row["norm"], row["rows"], row["hidden"], passes=row["passes"])
        assert row["bytes"] == want
        assert row["copy_bytes"] == 2 * row["rows"] * row["hidden"] * 4
        assert row["gbps"] == pytest.approx(row["bytes"] / row["seconds"] / 1e9)
        assert row["pct_of_copy"] == pytest.approx(100 * row["gbps"] / row["copy_gbps"])
        assert row["clone_gbps"] > 0
        assert pct_of_copy(row).median == pytest.approx(row["pct_of_copy"])


def test_benchmark_interleaves_every_call_of_a_size():
    log = []

    def variants(norm, hidden):
        out = eager_variants(norm, hidden)
        for impl in ("scratch", "F"):
            out[impl] = lambda x, impl=impl, fn=out[impl]: (log.append((norm, impl)), fn(x))[1]
        return out

    benchmark([(2, 8)], variants, passes=("forward",), repeats=4)
    first, timed = log[:4], log[4:]
    assert sorted(first) == sorted((n, i) for n in NORMS for i in ("scratch", "F"))
    rounds = [timed[i : i + 4] for i in range(0, len(timed), 4)]
    assert len(rounds) == 4 and all(sorted(r) == sorted(first) for r in rounds)


def test_benchmark_chooses_calls_per_sample_from_a_copy():
    kwargs = {"passes": ("forward",), "repeats": 1}
    fixed, _ = benchmark([(2, 8)], eager_variants, number=3, **kwargs)
    assert {r["number"] for r in fixed} == {3}
    auto, _ = benchmark([(2, 8)], eager_variants, min_sample_s=1.0, max_number=4, **kwargs)
    assert {r["number"] for r in auto} == {4}  # a 64-byte copy is far shorter than 1 s


def test_benchmark_times_only_what_it_is_asked_to():
    kwargs = {"passes": ("forward",), "repeats": 1}
    table, _ = benchmark([(2, 8)], eager_variants, only=("nn",), **kwargs)
    assert [(r["norm"], r["impl"]) for r in table] == [(n, "nn") for n in NORMS]
    pairs = [("layer_norm", "F"), ("rms_norm", "scratch")]
    table, _ = benchmark([(2, 8)], eager_variants, only=pairs, **kwargs)
    assert [(r["norm"], r["impl"]) for r in table] == pairs


def test_benchmark_reports_a_failing_variant_and_races_the_rest():
    def broken(x):
        raise RuntimeError("no C++ compiler\nsecond line")

    def variants(norm, hidden):
        return eager_variants(norm, hidden) | {"compiled": broken}

    table, failures = benchmark([(2, 8)], variants, passes=("forward",), repeats=1)
    assert failures == {(n, "compiled"): "RuntimeError: no C++ compiler" for n in NORMS}
    assert {row["impl"] for row in table} == {"scratch", "nn", "F"}


def test_benchmark_rejects_bad_arguments():
    with pytest.raises(TypeError, match=r"dtype must be a floating-point torch\.dtype"):
        benchmark([(2, 8)], eager_variants, dtype=torch.int64)
    with pytest.raises(ValueError, match="passes must be a non-empty subset"):
        benchmark([(2, 8)], eager_variants, passes=("backward",))
    with pytest.raises(ValueError, match="repeats must be an int >= 1, got 0"):
        benchmark([(2, 8)], eager_variants, repeats=0)


def synthetic_table():
    """Made-up timings: LayerNorm nn ~2 s, compiled ~3 s; RMSNorm nn ~4 s, compiled ~1 s,
    F ~1.05 s (overlapping compiled's range)."""
    rows = []
    for norm, impl, seconds in [
        ("layer_norm", "nn", [1.9, 2.0, 2.0, 2.1]),
        ("layer_norm", "compiled", [2.9, 3.0, 3.0, 3.1]),
        ("rms_norm", "nn", [3.9, 4.0, 4.0, 4.1]),
        ("rms_norm", "F", [0.95, 1.0, 1.1, 1.15]),
        ("rms_norm", "compiled", [0.9, 1.0, 1.0, 1.1]),
    ]:
        rows.append(
            {"norm": norm, "impl": impl, "rows": 8, "hidden": 4, "passes": "forward"}
            | {"samples": seconds, "seconds": quartiles(seconds).median}
            | {"bytes": 100, "copy_bytes": 200, "copy_samples": [0.5, 0.5, 0.5, 0.5]}
        )
    return rows


def test_speedup_and_fastest_on_a_known_table():
    table = synthetic_table()
    same = {"rows": 8, "hidden": 4, "passes": "forward"}
    nn_vs_nn = speedup(table, rms_impl="nn", ln_impl="nn", **same)
    assert nn_vs_nn.median == 0.5  # RMSNorm slower
    assert nn_vs_nn.low == pytest.approx(1.975 / 4.025) and nn_vs_nn.high == pytest.approx(
        2.025 / 3.975
    )
    assert speedup(table, rms_impl="compiled", ln_impl="nn", **same).median == 2.0
    assert fastest(table, "rms_norm", **same)["impl"] == "compiled"
    assert fastest(table, "layer_norm", **same)["impl"] == "nn"
    assert find(table, "rms_norm", "F", **same)["seconds"] == 1.05
    with pytest.raises(KeyError, match="no measurement for rms_norm scratch 8x4 forward"):
        speedup(table, rms_impl="scratch", ln_impl="nn", **same)
    with pytest.raises(KeyError, match="no measurement for rms_norm 16x4 forward"):
        fastest(table, "rms_norm", rows=16, hidden=4, passes="forward")


def test_fastest_group_holds_every_implementation_the_fastest_does_not_beat():
    table = synthetic_table()
    same = {"rows": 8, "hidden": 4, "passes": "forward"}
    assert fastest_group(table, "rms_norm", **same) == ["F", "compiled"]  # in table order
    assert fastest_group(table, "layer_norm", **same) == ["nn"]
    with pytest.raises(KeyError, match=r"no measurement for layer_norm 8x4 forward\+backward"):
        fastest_group(table, "layer_norm", rows=8, hidden=4, passes="forward+backward")


def test_pct_of_copy_carries_the_range_of_both_timings():
    row = find(synthetic_table(), "rms_norm", "compiled", rows=8, hidden=4, passes="forward")
    # the row moves half the bytes of a copy: 50 % at equal times; the norm takes 2x as long
    got = pct_of_copy(row)
    assert got.median == pytest.approx(25.0)
    assert got.low == pytest.approx(50 * 0.5 / 1.025) and got.high == pytest.approx(
        50 * 0.5 / 0.975
    )


# --- the GPU path: a fresh compile per size, rotated inputs, CUDA events -------------------


def test_rotation_holds_the_l2_several_times_over():
    mib = 2**20
    assert rotation(64 * mib, 50 * mib) == 2  # 2 x 64 MiB > 2 x 50 MiB: two copies suffice
    assert rotation(8 * mib, 50 * mib) == 13  # 13 x 8 = 104 MiB >= 100 MiB
    assert rotation(8 * mib, 50 * mib, factor=1) == 7
    assert rotation(512 * mib, 0) == 2  # never fewer than two: a call never re-reads its input
    for tensor, l2 in ((1, 1), (3, 17), (10**9, 50 * mib)):
        k = rotation(tensor, l2)
        assert k * tensor >= 2 * l2 and k >= 2 and (k == 2 or (k - 1) * tensor < 2 * l2)
    with pytest.raises(ValueError, match="tensor_bytes must be an int >= 1, got 0"):
        rotation(0, 10)
    with pytest.raises(ValueError, match="l2_bytes must be an int >= 0, got -1"):
        rotation(10, -1)


def test_cycling_calls_each_in_turn():
    log = []
    call = cycling(lambda i=i: log.append(i) for i in range(3))
    for _ in range(7):
        call()
    assert log == [0, 1, 2, 0, 1, 2, 0]
    with pytest.raises(ValueError, match="at least one callable"):
        cycling([])


def test_l2_cache_bytes_is_a_cuda_query(device):
    if device.type != "cuda":
        with pytest.raises(ValueError, match="needs a CUDA device, got cpu"):
            l2_cache_bytes("cpu")
        return
    assert l2_cache_bytes(device) == torch.cuda.get_device_properties(device).L2_cache_size > 0


def test_event_times_on_cuda_and_a_clear_error_without():
    calls = {"a": lambda: None, "b": lambda: None}
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="needs CUDA"):
            event_times(calls, repeats=2)
        return
    x = torch.ones(1 << 20, device="cuda")
    got = event_times({"sum": x.sum, "add": lambda: x + 1}, repeats=3, number=2)
    assert {n: len(v) for n, v in got.items()} == {"sum": 3, "add": 3}
    assert all(t > 0 and math.isfinite(t) for v in got.values() for t in v)
    with pytest.raises(ValueError, match="repeats must be an int >= 1, got 0"):
        event_times(calls, repeats=0)


def eager_compiled_variants(norm, hidden, dtype, device="cpu"):
    """The eager variants, and the from-scratch module through torch.compile's graph capture
    only (backend="eager": no code generation, so it is quick): Dynamo compiles, caches and
    recompiles graphs exactly as for Inductor, which is what these tests count."""
    out = norm_variants(norm, hidden, SCRATCH[norm], compile=False, device=device, dtype=dtype)
    out["compiled"] = torch.compile(out["scratch"], dynamic=False, backend="eager")
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # importing torch._dynamo warns
def test_compiled_code_is_shared_by_every_instance_of_a_class():
    """Why a compile must be made afresh per measured size: Dynamo keeps compiled code per
    function (the class's forward), so a second instance reuses the first one's graph, and
    a compile for one shape is what the next instance of that shape gets."""
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    start = compile_counts()
    for _ in range(2):  # two instances, one shape
        module = torch.compile(RMSNorm(8, eps=1e-5), dynamic=False, backend="eager")
        with torch.no_grad():
            module(x)
    assert compile_counts()["graphs"] - start["graphs"] == 1
    module(x)  # grad mode on: a guard fails, one recompilation
    after = compile_counts()
    assert (after["graphs"] - start["graphs"], after["recompiles"] - start["recompiles"]) == (2, 1)
    torch._dynamo.reset()
    assert compile_counts()["recompiles"] == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_gpu_benchmark_compiles_afresh_for_every_size_and_dtype(device):
    sizes, dtypes = [(4, 8), (2, 16)], (torch.float32, torch.bfloat16)
    variants = functools.partial(eager_compiled_variants, device=device)
    kwargs = {"l2_bytes": 1000}  # a few copies of these tiny inputs; the GPU's own L2 below
    table, failures = gpu_benchmark(
        sizes, variants, dtypes=dtypes, device=device, repeats=3, min_sample_s=0, **kwargs
    )
    assert failures == {}
    assert len(table) == len(dtypes) * len(sizes) * len(NORMS) * len(IMPLEMENTATIONS) * 2
    l2 = kwargs["l2_bytes"]
    for row in table:
        itemsize = 4 if row["dtype"] == "float32" else 2
        x_bytes = row["rows"] * row["hidden"] * itemsize
        assert row["rotate"] == min(64, rotation(x_bytes, l2))
        assert row["copy_bytes"] == 2 * x_bytes
        assert row["bytes"] == bytes_moved(
            row["norm"], row["rows"], row["hidden"], itemsize=itemsize, passes=row["passes"]
        )
        assert len(row["samples"]) == len(row["copy_samples"]) == 3
        assert row["timer"] == ("cuda events" if device.type == "cuda" else "wall clock")
        assert pct_of_copy(row).median == pytest.approx(row["pct_of_copy"])
        if row["impl"] != "compiled":
            assert row["compile"] is None
            continue
        # every size and dtype: one graph per grad mode, the second a recompilation, none
        # while timing; no compile of an earlier size served this one
        assert row["compile"] == GPU_COMPILE | {"graphs": 2, "recompiles": 1, "timed_graphs": 0}
    assert {r["dtype"] for r in table} == {"float32", "bfloat16"}


def test_gpu_benchmark_reports_a_failing_variant_and_races_the_rest():
    def variants(norm, hidden, dtype):
        out = norm_variants(norm, hidden, SCRATCH[norm], compile=False, dtype=dtype)

        def broken(x):
            raise RuntimeError("CUDA out of memory\nmore")

        return out | {"F": broken}

    table, failures = gpu_benchmark(
        [(2, 8)],
        variants,
        dtypes=(torch.float32,),
        device="cpu",
        l2_bytes=64,
        repeats=3,
        min_sample_s=0,
    )
    assert failures == {
        (n, "F", torch.float32, 2, 8): "RuntimeError: CUDA out of memory" for n in NORMS
    }
    assert {r["impl"] for r in table} == {"scratch", "nn"}


def test_gpu_benchmark_rejects_bad_arguments():
    variants = functools.partial(eager_compiled_variants)
    with pytest.raises(ValueError, match="passes must be a non-empty subset"):
        gpu_benchmark([(2, 8)], variants, passes=(), device="cpu", l2_bytes=1)
    with pytest.raises(TypeError, match=r"dtypes must hold floating-point torch\.dtypes"):
        gpu_benchmark([(2, 8)], variants, dtypes=(torch.int8,), device="cpu", l2_bytes=1)
    with pytest.raises(ValueError, match="l2_cache_bytes needs a CUDA device, got cpu"):
        gpu_benchmark([(2, 8)], variants, device="cpu")  # off CUDA: say how much to rotate


def test_norm_variants_compile_defaults_are_unchanged(monkeypatch):
    seen = []
    monkeypatch.setattr(torch, "compile", lambda module, **kw: seen.append(kw) or module)
    norm_variants("rms_norm", 8, RMSNorm)
    norm_variants("rms_norm", 8, RMSNorm, dynamic=False, mode="max-autotune")
    assert seen == [{"dynamic": True, "mode": None}, {"dynamic": False, "mode": "max-autotune"}]


def test_gpu_benchmark_caps_the_copies_of_a_tiny_input():
    table, _ = gpu_benchmark(
        [(2, 8)],
        functools.partial(eager_compiled_variants),
        dtypes=(torch.float32,),
        passes=("forward",),
        device="cpu",
        repeats=1,
        min_sample_s=0,
        l2_bytes=2**20,
        max_copies=3,
    )
    assert {r["rotate"] for r in table} == {3}  # rotation() would ask for 32768
