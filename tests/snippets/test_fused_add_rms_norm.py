"""snippets/fused_add_rms_norm.py against the unfused `h = x + residual; rms_norm(h)`,
torch.nn.RMSNorm and the handbook's from-scratch RMSNorm, forward and backward.

On the CPU the kernels run in Triton's interpreter. Triton decides at its first import
whether it interprets (TRITON_INTERPRET=1) or compiles, and its own helpers (tl.sum, ...)
are made one way or the other then, so the variable cannot be set for one test module in a
process that may already have imported Triton, and must not leak into the other modules
(torch.compile on CUDA needs the compiler). The CPU checks therefore run in one worker
process started with the variable set; on CUDA the same checks run here, compiled, at
real sizes. Errors raised before a launch are tested here on any machine.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from snippets.rms_norm import RMSNorm

# find_spec, not an import: the interpreter's worker imports this module before Triton
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None,
    reason="Triton is not installed: it ships wheels for Linux only (requirements.txt)",
)

MODULE = "snippets.fused_add_rms_norm"  # imported inside the checks: see the docstring
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Hidden sizes: odd ones and 1 test the masked tail of a power-of-two block; the CUDA ones
# are widths of real layers, one of them odd. Rows: more than the backward programs
# and not a multiple of them, so some programs take one row more than others.
HIDDEN = {"cpu": [1, 3, 100, 1000], "cuda": [1, 1000, 4096, 5121, 8192]}
ROWS = {"cpu": 11, "cuda": 4099}
# (rtol, atol) per dtype for values of order one: about two steps of the dtype
TOL = {torch.float32: (2e-5, 2e-5), torch.bfloat16: (1.6e-2, 1.6e-2), torch.float16: (2e-3, 2e-3)}


def _interpret() -> None:
    os.environ["TRITON_INTERPRET"] = "1"  # in the worker, before it first imports Triton


@pytest.fixture(scope="module")
def interpreter():
    """A worker process whose Triton runs kernels through the interpreter."""
    context = multiprocessing.get_context("spawn")  # a fresh process: no Triton imported yet
    with ProcessPoolExecutor(1, mp_context=context, initializer=_interpret) as pool:
        yield pool


@pytest.fixture
def run(device, request):
    """run(check, *args): the check on this device (CPU: in the interpreter's worker)."""
    if device.type == "mps":
        pytest.skip("Triton has no MPS backend; the kernel runs on CUDA, or on the CPU")
    if device.type == "cpu":
        pool = request.getfixturevalue("interpreter")
        return lambda check, *args: pool.submit(check, "cpu", *args).result()
    return lambda check, *args: check(str(device), *args)


def _inputs(rows, hidden, dtype, device, seed=0, lead=()):
    g = torch.Generator(device).manual_seed(seed)  # drawn on the device: real sizes are large
    shape = (*lead, rows, hidden)
    x = torch.randn(shape, generator=g, device=device).to(dtype)
    r = (2 * torch.randn(shape, generator=g, device=device)).to(dtype)
    w = (0.5 + torch.rand(hidden, generator=g, device=device)).to(dtype)
    return x, r, w


def _reference(x, r, w, dy, dh, eps):
    """The unfused computation in float32 from the same stored inputs: h rounded to the
    storage dtype as `x + residual` does, then rms_norm; y, h, dx, dresidual, dw."""
    xf, rf, wf = (t.detach().float().requires_grad_() for t in (x, r, w))
    h = (xf + rf).to(x.dtype).float()  # rounded as the unfused add stores it
    h = xf + rf + (h - (xf + rf)).detach()  # that value, with the add's gradient
    y = F.rms_norm(h, (x.shape[-1],), wf, eps)
    loss = (y * dy.float()).sum() + ((h * dh.float()).sum() if dh is not None else 0)
    loss.backward()
    return y.detach(), h.detach(), xf.grad, rf.grad, wf.grad


def _close(actual, expected, dtype, scale=1.0, what=""):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(
        actual.float(), expected.float(), rtol=rtol, atol=atol * scale, msg=lambda m: f"{what}: {m}"
    )


# --- the checks: run in the interpreter's worker (CPU) or here (CUDA) ---------------------


def check_matches_unfused(device, dtype, use_residual_grad):
    fa = importlib.import_module(MODULE)
    torch.manual_seed(0)  # the upstream gradients; the inputs have their own generator
    rows = ROWS[device.split(":")[0]]
    for hidden in HIDDEN[device.split(":")[0]]:
        x, r, w = _inputs(rows, hidden, dtype, device)
        dy = torch.randn_like(x)
        dh = torch.randn_like(x) if use_residual_grad else None
        xk, rk, wk = (t.clone().requires_grad_() for t in (x, r, w))
        y, h = fa.fused_add_rms_norm(xk, rk, wk, 1e-6)
        if dh is None:
            y.backward(dy)
        else:
            torch.autograd.backward([y, h], [dy, dh])
        y_ref, h_ref, dx_ref, dr_ref, dw_ref = _reference(x, r, w, dy, dh, 1e-6)
        where = f"{dtype}, hidden {hidden}"
        if dtype == torch.bfloat16 and not device.startswith("cuda"):
            # Triton's interpreter truncates float32 to bfloat16 (its cast passes no
            # rounding mode); a GPU rounds to nearest even: one bfloat16 step apart at most
            _close(h, h_ref, dtype, what=f"h, {where}")
            assert ((h.float() - h_ref).abs() <= h_ref.abs() * 2**-7).all(), where
        else:
            assert torch.equal(h, h_ref.to(dtype)), f"h is not x + residual rounded, {where}"
        _close(y, y_ref, dtype, what=f"y, {where}")
        _close(xk.grad, dx_ref, dtype, what=f"grad x, {where}")
        _close(rk.grad, dr_ref, dtype, what=f"grad residual, {where}")
        # dw sums `rows` terms: its error grows with their number
        _close(wk.grad, dw_ref, dtype, scale=math.sqrt(rows), what=f"grad weight, {where}")
        assert xk.grad.data_ptr() != rk.grad.data_ptr(), "x.grad and residual.grad share memory"


def check_matches_nn_rmsnorm(device, dtype):
    """In the input dtype, against nn.RMSNorm and the handbook's RMSNorm after `x + r`."""
    fa = importlib.import_module(MODULE)
    torch.manual_seed(0)
    hidden = HIDDEN[device.split(":")[0]][-1]
    x, r, _ = _inputs(5, hidden, dtype, device, seed=1, lead=(3,))  # (batch, tokens, hidden)
    ours = fa.FusedAddRMSNorm(hidden, eps=1e-5, device=device, dtype=dtype)
    ref = nn.RMSNorm(hidden, eps=1e-5, device=device, dtype=dtype)
    scratch = RMSNorm(hidden, eps=1e-5, device=device, dtype=dtype)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
        ref.weight.copy_(ours.weight)
        scratch.weight.copy_(ours.weight)
    xs = [x.clone().requires_grad_() for _ in range(3)]
    rs = [r.clone().requires_grad_() for _ in range(3)]
    y, h = ours(xs[0], rs[0])
    y_nn = ref(xs[1] + rs[1])
    y_scratch = scratch(xs[2] + rs[2])
    dy = torch.randn_like(y)
    for out in (y, y_nn, y_scratch):
        out.backward(dy)
    for name, other, module in (("nn.RMSNorm", 1, ref), ("RMSNorm", 2, scratch)):
        _close(y, (y_nn, y_scratch)[other - 1], dtype, what=f"y vs {name}")
        _close(xs[0].grad, xs[other].grad, dtype, what=f"grad x vs {name}")
        _close(rs[0].grad, rs[other].grad, dtype, what=f"grad residual vs {name}")
        _close(ours.weight.grad, module.weight.grad, dtype, scale=4, what=f"grad w vs {name}")
    assert y.shape == h.shape == x.shape


def check_strided(device, dtype):
    """A slice of a wider tensor, columns a step apart, a non-mergeable 3-D view, an
    expanded (stride-0) residual and a strided upstream gradient."""
    fa = importlib.import_module(MODULE)
    torch.manual_seed(0)
    hidden = HIDDEN[device.split(":")[0]][2]
    wide, r, w = _inputs(6, 2 * hidden + 3, dtype, device, seed=2)
    x = wide[:, 1 : hidden + 1]  # row stride 2 * hidden + 3: a view the kernel reads as is
    assert fa._rows(x).data_ptr() == x.data_ptr(), "a row-strided slice was copied"
    cases = {
        "row slice": (x, r[:, :hidden]),
        "column step": (wide[:, : 2 * hidden : 2], r[:, :hidden]),
        "3-D permuted": (
            wide[:, :hidden].reshape(2, 3, hidden).transpose(0, 1),
            r[:, :hidden].reshape(3, 2, hidden),
        ),
        "expanded residual": (x, r[0, :hidden].expand(6, hidden)),
    }
    for name, (a, b) in cases.items():
        dy = torch.randn(*a.shape[:-1], 2 * hidden, device=device, dtype=dtype)[..., ::2]
        ak, bk = a.detach().requires_grad_(), b.detach().requires_grad_()  # strides kept
        wk = w[:hidden].clone().requires_grad_()
        y, _ = fa.fused_add_rms_norm(ak, bk, wk)
        y.backward(dy)
        y_ref, _, dx_ref, dr_ref, dw_ref = _reference(a, b, w[:hidden], dy, None, None)
        _close(y, y_ref, dtype, what=f"y, {name}")
        _close(ak.grad, dx_ref, dtype, what=f"grad x, {name}")
        _close(bk.grad, dr_ref, dtype, what=f"grad residual, {name}")
        _close(wk.grad, dw_ref, dtype, scale=3, what=f"grad weight, {name}")


def check_zero_rows(device):
    fa = importlib.import_module(MODULE)
    torch.manual_seed(0)
    for shape in [(0, 8), (2, 0, 8)]:
        x = torch.randn(shape, device=device, requires_grad=True)
        r = torch.randn(shape, device=device, requires_grad=True)
        w = torch.ones(8, device=device, requires_grad=True)
        y, h = fa.fused_add_rms_norm(x, r, w)
        assert y.shape == h.shape == shape
        (y.sum() + h.sum()).backward()
        assert x.grad.shape == r.grad.shape == shape
        assert torch.equal(w.grad, torch.zeros(8, device=device))


def check_default_eps(device):
    """eps=None is nn.RMSNorm's: float32's machine epsilon, for every input dtype. Inputs
    of RMS 1e-3 make the choice visible (bfloat16's epsilon would dominate their mean
    square)."""
    fa = importlib.import_module(MODULE)
    for dtype in DTYPES:
        x, r, w = _inputs(4, 64, dtype, device, seed=3)
        x, r = (1e-3 * x).to(dtype), (1e-3 * r).to(dtype)
        y, h = fa.fused_add_rms_norm(x, r, w)
        _close(y, F.rms_norm(h, (64,), w), dtype, what=f"eps=None vs F.rms_norm, {dtype}")
        y_f32_eps, _ = fa.fused_add_rms_norm(x, r, w, torch.finfo(torch.float32).eps)
        assert torch.equal(y, y_f32_eps), dtype
        y_big, _ = fa.fused_add_rms_norm(x, r, w, 1e-2)
        _close(y_big, F.rms_norm(h, (64,), w, 1e-2), dtype, what=f"eps=1e-2, {dtype}")
        assert y_big.float().abs().max() < 0.5 * y.float().abs().max(), "eps was ignored"


def check_only_one_output_used(device):
    """Only y used: no residual gradient read. Only the new residual used: the gradient
    passes straight through to x and the residual, and the weight gets none."""
    fa = importlib.import_module(MODULE)
    torch.manual_seed(0)
    x, r, w = _inputs(7, 33, torch.float32, device, seed=4)
    xk, rk, wk = (t.clone().requires_grad_() for t in (x, r, w))
    _, h = fa.fused_add_rms_norm(xk, rk, wk)
    dh = torch.randn_like(h)
    h.backward(dh)
    assert torch.equal(xk.grad, dh) and torch.equal(rk.grad, dh)
    assert wk.grad is None


# --- the tests -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("use_residual_grad", [True, False], ids=["y and h used", "y used"])
def test_matches_unfused_add_then_rms_norm(run, dtype, use_residual_grad):
    run(check_matches_unfused, dtype, use_residual_grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_module_matches_nn_rmsnorm_and_scratch(run, dtype):
    run(check_matches_nn_rmsnorm, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_strided_inputs(run, dtype):
    run(check_strided, dtype)


def test_zero_rows(run):
    run(check_zero_rows)


def test_default_eps_is_nn_rmsnorm_s(run):
    run(check_default_eps)


def test_only_one_output_used(run):
    run(check_only_one_output_used)


def test_module_parameters_match_nn_rmsnorm():
    fa = importlib.import_module(MODULE)
    ours, ref = fa.FusedAddRMSNorm(7), nn.RMSNorm(7)
    assert ours.eps is None and ref.eps is None
    assert ours.normalized_shape == ref.normalized_shape == (7,)
    assert fa.FusedAddRMSNorm((7,)).normalized_shape == (7,)
    assert {n: p.shape for n, p in ours.named_parameters()} == {
        n: p.shape for n, p in ref.named_parameters()
    }
    torch.testing.assert_close(ours.weight, torch.ones(7))
    assert fa.FusedAddRMSNorm(8, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


def test_bad_input_names_expected_and_got():
    fa = importlib.import_module(MODULE)
    x, r, w = torch.randn(2, 8), torch.randn(2, 8), torch.ones(8)
    cases = [
        ((x.bfloat16(), r, w), TypeError, r"got x torch\.bfloat16, residual torch\.float32"),
        ((x, r, w.half()), TypeError, r"residual torch\.float32, weight torch\.float16"),
        ((x.double(), r.double(), w.double()), TypeError, r"bfloat16, got torch\.float64"),
        ((x, r, torch.ones(7)), ValueError, r"shape \(hidden,\) = \(8,\), got \(7,\)"),
        ((x, r, torch.ones(1, 8)), ValueError, r"= \(8,\), got \(1, 8\)"),
        ((x, r[:1], w), ValueError, r"x's shape \(2, 8\), got \(1, 8\)"),
        ((torch.tensor(1.0), torch.tensor(1.0), w), ValueError, "got a 0-dim tensor"),
        ((x, r.tolist(), w), TypeError, "residual must be a tensor, got list"),
        ((torch.randn(1, 16385), torch.randn(1, 16385), torch.ones(16385)), ValueError,
         r"1 to 16384 for torch\.float32 .*got 16385"),
    ]  # fmt: skip
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            fa.fused_add_rms_norm(*args)
    with pytest.raises(ValueError, match=r"finite number >= 0, got -1"):
        fa.fused_add_rms_norm(x, r, w, -1)
    with pytest.raises(TypeError, match="eps must be None or a number, got str"):
        fa.fused_add_rms_norm(x, r, w, "1e-6")
    for shape in [(3, 4), 0, True, "8"]:
        with pytest.raises(ValueError, match=r"positive int or a 1-tuple .*got"):
            fa.FusedAddRMSNorm(shape)


def test_wrong_device_names_it():
    fa = importlib.import_module(MODULE)
    if fa.INTERPRETED:
        pytest.skip("TRITON_INTERPRET=1 in this process: the interpreter takes CPU tensors")
    x, r, w = torch.randn(2, 8), torch.randn(2, 8), torch.ones(8)
    with pytest.raises(RuntimeError, match=r"needs x on a CUDA device, got cpu.*TRITON_INTERPRET"):
        fa.fused_add_rms_norm(x, r, w)
    if torch.cuda.is_available():
        with pytest.raises(
            RuntimeError, match=r"x's device cuda:0, got residual cuda:0, weight cpu"
        ):
            fa.fused_add_rms_norm(x.cuda(), r.cuda(), w)


def test_interpreter_takes_cpu_tensors_and_other_devices_are_refused(interpreter):
    assert interpreter.submit(_interpreted_device_errors).result() == "ok"


def _interpreted_device_errors():
    fa = importlib.import_module(MODULE)
    assert fa.INTERPRETED
    x, r, w = torch.randn(2, 8), torch.randn(2, 8), torch.ones(8)
    try:
        fa.fused_add_rms_norm(x.to("meta"), r.to("meta"), w.to("meta"))
    except RuntimeError as e:
        assert "needs x on a CUDA device, got meta" in str(e), str(e)
    else:
        raise AssertionError("a meta tensor was accepted")
    return "ok"
