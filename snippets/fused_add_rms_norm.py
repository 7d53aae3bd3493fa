"""Residual add and RMSNorm fused into one Triton kernel, forward and backward.

A Pre-LN block adds each sublayer's output to the residual stream, h = x + residual, and
the next sublayer starts from RMSNorm(h). Eager PyTorch runs that as two kernels: the add
writes h to memory and the norm reads it back. This kernel reads x, the residual and the
weight once each and writes h (the new residual stream) and y = RMSNorm(h) * weight.

The interface is that of vLLM's ``fused_add_rms_norm(input, residual, weight, epsilon)``
and Liger-Kernel's ``LigerFusedAddRMSNormFunction``: it returns ``(y, new_residual)`` as
new tensors (vLLM overwrites its inputs; autograd needs them kept). The layout follows
Triton's fused layer-norm tutorial (python/tutorials/05-layer-norm.py): one program per
row forward; backward, a fixed number of programs that each sum their rows' weight
gradient in fp32, and one sum over those partial sums.

On a GPU Triton compiles the kernels. Without one, set ``TRITON_INTERPRET=1`` before Triton
is first imported (so before this module): Triton's interpreter then runs them on the CPU in
numpy, slowly, for tests and for reading. The interpreter truncates float32 to bfloat16
where a GPU rounds to nearest, so bfloat16 results there can differ by one bfloat16 step.
"""

# --8<-- [start:module]
import numbers

import torch
import triton
import triton.language as tl
from torch import nn

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# A program holds its whole row in registers; past 64 KiB a row (where Triton's tutorial
# stops too) they spill, and a kernel that loops over column chunks would be needed.
MAX_ROW_BYTES = 65536
# Backward programs per streaming multiprocessor: two, so that one waits on memory while
# the other computes, and the fp32 partial weight gradients (programs x hidden) stay small.
# Chosen by scripts/tune_fused_gpu.py on an H100 (bf16, 1 to 16 tried), as are the
# backward's num_warps below where they differ from the tutorial's heuristic.
PROGRAMS_PER_SM = 2
BACKWARD_WARPS = {(4096, 2): 16}  # (BLOCK, bytes per value): num_warps


@triton.jit
def fused_add_rms_norm_fwd(
    X, R, W, Y, H, RSTD, x_row_stride, r_row_stride, N, eps, BLOCK: tl.constexpr
):
    """One program per row: h = x + r, rstd = 1/sqrt(mean(h²) + eps), y = h * rstd * w."""
    row = tl.program_id(0).to(tl.int64)  # int64: row * stride passes 2**31 on large inputs
    cols = tl.arange(0, BLOCK)  # BLOCK: the next power of two >= N
    mask = cols < N  # the lanes past the row's end load 0 and store nothing
    x = tl.load(X + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(R + row * r_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    # the new residual is rounded to the storage dtype and the norm reads that rounded
    # value, exactly as the unfused `h = x + residual; rms_norm(h)` does
    h = (x + r).to(H.dtype.element_ty)
    tl.store(H + row * N + cols, h, mask=mask)
    h = h.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / N + eps)  # the masked lanes add 0
    tl.store(RSTD + row, rstd)  # fp32, one number per row, for the backward pass
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * N + cols, (h * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def fused_add_rms_norm_bwd(
    DY, DH, H, W, RSTD, DX, DW_PARTIAL, dy_row_stride, dh_row_stride, M, N, P,
    HAS_DH: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Program p takes rows p, p + P, p + 2P, ... (P programs): writes dx for each and
    one partial weight gradient, the fp32 sum of dy * h_hat over its rows."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)  # once per program
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(pid, M, P):  # P: the number of programs, which the launch sets
        row = tl.cast(i, tl.int64)
        dy = tl.load(DY + row * dy_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        h = tl.load(H + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + row)
        h_hat = h * rstd
        g = dy * w
        # d/dh of h * rstd(h): rstd * (g - h_hat * mean(g * h_hat))
        dh = rstd * (g - h_hat * (tl.sum(g * h_hat, axis=0) / N))
        if HAS_DH:  # the new residual was used too: its gradient flows straight through
            dh += tl.load(DH + row * dh_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(DX + row * N + cols, dh.to(DX.dtype.element_ty), mask=mask)
        dw += dy * h_hat
    tl.store(DW_PARTIAL + pid * N + cols, dw, mask=mask)


# Read right after the kernels were defined: the variable decided whether they are
# compiled for a GPU or run by the interpreter.
INTERPRETED = bool(triton.knobs.runtime.interpret)


def _check_eps(eps) -> None:
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, numbers.Real)):
        raise TypeError(f"eps must be None or a number, got {type(eps).__name__} {eps!r}")
    if eps is not None and not 0 <= eps < float("inf"):
        raise ValueError(f"eps must be None or a finite number >= 0, got {eps!r}")


def _check(x, residual, weight, eps) -> None:
    """Refuse, naming what was expected and what came, what the kernels cannot take."""
    for name, t in (("x", x), ("residual", residual), ("weight", weight)):
        if not torch.is_tensor(t):
            raise TypeError(f"{name} must be a tensor, got {type(t).__name__}")
    if x.dim() < 1:
        raise ValueError("x must have at least one dim, (..., hidden), got a 0-dim tensor")
    if residual.shape != x.shape:
        raise ValueError(
            f"residual must have x's shape {tuple(x.shape)}, got {tuple(residual.shape)}"
        )
    if weight.dim() != 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(
            f"weight must have shape (hidden,) = ({x.shape[-1]},), got {tuple(weight.shape)}"
        )
    if x.dtype not in DTYPES:
        raise TypeError(f"x must be float32, float16 or bfloat16, got {x.dtype}")
    if residual.dtype != x.dtype or weight.dtype != x.dtype:
        raise TypeError(
            f"x, residual and weight must share one dtype, got x {x.dtype}, "
            f"residual {residual.dtype}, weight {weight.dtype}"
        )
    hidden, limit = x.shape[-1], MAX_ROW_BYTES // x.element_size()
    if hidden < 1 or triton.next_power_of_2(hidden) > limit:
        raise ValueError(
            f"hidden size must be 1 to {limit} for {x.dtype} (a row is held in registers), "
            f"got {hidden}"
        )
    _check_eps(eps)
    allowed = ("cpu", "cuda") if INTERPRETED else ("cuda",)
    if x.device.type not in allowed:
        raise RuntimeError(
            f"the Triton kernel needs x on a CUDA device, got {x.device}; without a GPU, set "
            "TRITON_INTERPRET=1 before Triton is first imported to run Triton's interpreter"
        )
    if residual.device != x.device or weight.device != x.device:
        raise RuntimeError(
            f"residual and weight must be on x's device {x.device}, got residual "
            f"{residual.device}, weight {weight.device}"
        )


def _rows(t: torch.Tensor) -> torch.Tensor:
    """t as (rows, hidden) with unit column stride. The kernels take any row stride
    (a slice of a wider tensor, an expanded row), so this copies only what they cannot
    address with one: columns that are not adjacent, or leading dims that do not merge."""
    t = t.reshape(-1, t.shape[-1])  # a view whenever the leading dims merge
    return t if t.stride(1) == 1 or t.shape[1] == 1 else t.contiguous()


def _launch(hidden: int, itemsize: int, backward: bool = False) -> tuple[int, int]:
    """BLOCK and num_warps for a row of `hidden` values (the tutorial's heuristic, but
    where a sweep on a GPU measured better backward settings)."""
    block = triton.next_power_of_2(hidden)
    warps = min(max(block // 256, 1), 8)
    return block, BACKWARD_WARPS.get((block, itemsize), warps) if backward else warps


def _programs(rows: int, device: torch.device) -> int:
    """How many backward programs share the rows (and so how many partial sums)."""
    if device.type == "cuda" and not INTERPRETED:
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        return min(rows, PROGRAMS_PER_SM * sms)
    return min(rows, 4)  # the interpreter runs programs one after another anyway


class FusedAddRMSNormFunction(torch.autograd.Function):
    """(x, residual, weight, eps) -> (y, new_residual), with gradients for all three."""

    @staticmethod
    def forward(ctx, x, residual, weight, eps=None):
        _check(x, residual, weight, eps)
        # eps=None as in nn.RMSNorm: the machine epsilon of the dtype the math runs in,
        # float32 here for every input dtype
        eps = torch.finfo(torch.float32).eps if eps is None else float(eps)
        x2, r2, w = _rows(x), _rows(residual), weight.contiguous()
        rows, hidden = x2.shape
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # contiguous: row stride N
        h = torch.empty_like(y)
        rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
        block, warps = _launch(hidden, x.element_size())
        if rows > 0:  # a grid of zero programs is not a launch Triton accepts
            fused_add_rms_norm_fwd[(rows,)](
                x2, r2, w, y, h, rstd, x2.stride(0), r2.stride(0), hidden, eps,
                BLOCK=block, num_warps=warps,
            )  # fmt: skip
        ctx.save_for_backward(h, w, rstd)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
        return y, h

    @staticmethod
    def backward(ctx, dy, dh):
        h, w, rstd = ctx.saved_tensors
        if dy is None:  # only the new residual was used: the norm adds nothing
            return dh, dh, None, None
        dy2 = _rows(dy)
        dh2 = dy2 if dh is None else _rows(dh)  # dy2 only fills the slot; HAS_DH skips it
        rows, hidden = dy2.shape
        dx = torch.empty_like(h)
        programs = _programs(rows, h.device)
        # stage 1: one fp32 partial weight gradient per program
        partial = torch.empty((programs, hidden), dtype=torch.float32, device=h.device)
        block, warps = _launch(hidden, h.element_size(), backward=True)
        if rows > 0:
            fused_add_rms_norm_bwd[(programs,)](
                dy2, dh2, h, w, rstd, dx, partial, dy2.stride(0), dh2.stride(0), rows, hidden,
                programs, HAS_DH=dh is not None, BLOCK=block, num_warps=warps,
            )  # fmt: skip
        dw = partial.sum(dim=0).to(w.dtype)  # stage 2: sum the partials in fp32, round once
        # h = x + residual: x and the residual get the same gradient
        return dx, dx, dw, None


def fused_add_rms_norm(x, residual, weight, eps=None):
    """(y, new_residual): new_residual = x + residual, y = RMSNorm(new_residual) * weight
    over the last dim. x and residual (..., hidden); weight (hidden,)."""
    return FusedAddRMSNormFunction.apply(x, residual, weight, eps)


class FusedAddRMSNorm(nn.Module):
    """nn.RMSNorm over the last dim, with the residual add before it fused in:
    forward(x, residual) returns (y, new_residual)."""

    def __init__(self, normalized_shape, eps=None, device=None, dtype=None):
        super().__init__()
        dims = normalized_shape
        if isinstance(dims, numbers.Integral):
            dims = (dims,)
        if (
            not isinstance(dims, (tuple, list))
            or len(dims) != 1
            or isinstance(dims[0], bool)
            or not isinstance(dims[0], numbers.Integral)
            or dims[0] < 1
        ):
            raise ValueError(
                "normalized_shape must be a positive int or a 1-tuple (the kernel normalizes "
                f"over the last dim only), got {normalized_shape!r}"
            )
        _check_eps(eps)
        self.normalized_shape = (int(dims[0]),)
        self.eps = eps  # None: float32's machine epsilon, as nn.RMSNorm computes in float32
        self.weight = nn.Parameter(torch.ones(self.normalized_shape, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        return fused_add_rms_norm(x, residual, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"


# --8<-- [end:module]
