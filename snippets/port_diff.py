"""Run a reference model and its port side by side and name the first layer that diverges.

A port that loads without a missing key can still compute something else (a wrong eps, a
(1 + w) weight loaded as w). Comparing the final outputs says that it is wrong, not where.
``compare`` runs both models on the same inputs with forward hooks, pairs their layers,
and reports, in the order the reference runs them, the first pair whose outputs differ by
more than rounding explains.

Layers are paired in one of three ways:

- ``pairs=None``: by order. The modules that hold parameters of their own (Linear,
  Embedding, the norms; not containers, not dropout) are taken in the order they run,
  and the n-th of the reference is paired with the n-th of the port.
- ``pairs={reference_name: port_name}``: by name, any modules, as given.
- ``pairs=rule``: a function from a reference module name to the port's name (or None to
  skip it), applied to the modules that hold parameters of their own.

The tolerance, as in ``torch.testing.assert_close``, is ``atol + rtol * |reference|`` per
element. By default it comes from the machine epsilon of the dtype the reference computed
in and the layer's own output scale: ``rtol = K * eps`` and ``atol = K * eps * RMS`` of
the reference layer's output, with K from ``TOLERANCE_FACTOR`` (256 for float32, 16 for
bfloat16 and float16; why, there). Two correct ports differ by rounding, a multiple of
eps at the output's scale; a wrong computation moves the output by what it changes. In
float32 the tolerance is about 3e-5 of the output's scale and most mistakes show; in
bfloat16 it is 1/8 of it, and a mistake smaller than that hides in the rounding: compare
in float32 first.

A layer's output is its tensor, or the first tensor of a tuple, list or dict it returns.
Shapes must match up to leading 1s ((1, T, C) and (T, C), as positions often differ).

Standard library and torch only; runs wherever the models run (CPU, CUDA, MPS). Both
models' paired outputs are kept until the comparison: use a small input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import torch
from torch import nn

__all__ = ["TOLERANCE_FACTOR", "Pair", "Report", "compare", "default_tolerance"]

# K: the tolerance in machine epsilons of the layer's output scale, by the dtype's width.
# float32 and float64: two correct ports sum the same terms in another order, and such a
# sum of n terms differs by about sqrt(n) eps; K = 256 = sqrt(65536) covers the widest
# layers. 16-bit dtypes: products are summed in float32 and each output is rounded to 8
# (bfloat16) or 11 (float16) bits, so the output's rounding dominates, a few eps per layer
# carried through the layers. Clean ports of GPT-2 up to width 2048 and depth 24 measured
# at most 46 (float32) and 10 (bfloat16) on a CPU (tests/snippets/test_port_diff.py: smaller
# ones); a deeper model in 16 bits may need a larger atol and rtol.
TOLERANCE_FACTOR = {32: 256, 16: 16}


def default_tolerance(dtype: torch.dtype, scale: float) -> tuple[float, float]:
    """(rtol, atol) for a layer whose reference output has RMS ``scale``, computed in ``dtype``."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    finfo = torch.finfo(dtype)
    rtol = TOLERANCE_FACTOR[32 if finfo.bits >= 32 else 16] * finfo.eps
    return rtol, rtol * scale


@dataclasses.dataclass(frozen=True)
class Pair:
    """One reference layer and its port, compared."""

    reference: str
    port: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    max_diff: float  # the largest |port - reference| over the output
    scale: float  # RMS of the reference output
    rtol: float
    atol: float
    excess: float  # max over elements of |diff| / (atol + rtol * |reference|); > 1: diverged

    @property
    def diverged(self) -> bool:
        return self.excess > 1

    def tolerance(self, dtype: torch.dtype) -> float:
        """The atol to expect for this layer in ``dtype`` (float32, bfloat16, ...)."""
        return default_tolerance(dtype, self.scale)[1]


@dataclasses.dataclass(frozen=True)
class Report:
    """Every pair compared, in the order the reference ran them."""

    pairs: tuple[Pair, ...]

    @property
    def first_divergence(self) -> Pair | None:
        return next((p for p in self.pairs if p.diverged), None)

    def __str__(self) -> str:
        first = self.first_divergence
        if first is None:
            dtypes = sorted({str(p.dtype).removeprefix("torch.") for p in self.pairs})
            return f"no divergence: {len(self.pairs)} layer pairs agree ({', '.join(dtypes)})"
        index = self.pairs.index(first)
        f32, bf16 = first.tolerance(torch.float32), first.tolerance(torch.bfloat16)
        return "\n".join(
            [
                f"first divergence at pair {index + 1} of {len(self.pairs)}:",
                f"  reference {first.reference}",
                f"  port      {first.port}",
                f"  largest difference {first.max_diff:.2g}, output RMS {first.scale:.2g}",
                f"  tolerance {f32:.2g} in float32, {bf16:.2g} in bfloat16"
                f" (this run: {str(first.dtype).removeprefix('torch.')})",
            ]
        )


def _check_module(name: str, module) -> None:
    if not isinstance(module, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(module).__name__}")


def _layers(model: nn.Module) -> list[str]:
    """Names of the modules holding parameters of their own (the root excluded)."""
    return [
        name
        for name, m in model.named_modules()
        if name and next(m.parameters(recurse=False), None) is not None
    ]


def _first_tensor(output):
    """The tensor a layer returns, or the first one in a tuple, list or dict it returns."""
    if isinstance(output, torch.Tensor):
        return output
    values = output.values() if isinstance(output, Mapping) else output
    if isinstance(values, (tuple, list)) or isinstance(output, Mapping):
        for v in values:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _run(model: nn.Module, names: list[str], inputs, label: str) -> tuple[list[str], dict]:
    """Run ``model`` once; return the order in which ``names`` ran and their outputs."""
    order, outputs, handles = [], {}, []
    modules = dict(model.named_modules())

    def hook(name):
        def record(module, args, output):
            t = _first_tensor(output)
            if t is None:
                raise TypeError(f"{label} layer {name!r} returned no tensor")
            outputs.setdefault(name, []).append(t.detach())
            order.append(name)

        return record

    try:
        for name in names:
            handles.append(modules[name].register_forward_hook(hook(name)))
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return order, outputs


def _resolve(reference, port, pairs) -> list[tuple[str, str]] | None:
    """The (reference, port) names to compare, or None to pair by order."""
    if pairs is None:
        return None
    ref_names, port_names = dict(reference.named_modules()), dict(port.named_modules())
    if callable(pairs) and not isinstance(pairs, Mapping):
        resolved = []
        for name in _layers(reference):
            other = pairs(name)
            if other is not None:
                resolved.append((name, other))
    elif isinstance(pairs, Mapping):
        resolved = list(pairs.items())
    else:
        raise TypeError(
            "pairs must be None, a dict {reference name: port name} or a function of a "
            f"reference name, got {type(pairs).__name__}"
        )
    for ref_name, port_name in resolved:
        if ref_name not in ref_names:
            raise ValueError(f"pairs names {ref_name!r}, which the reference does not have")
        if port_name not in port_names:
            raise ValueError(
                f"pairs maps {ref_name!r} to {port_name!r}, which the port does not have"
            )
    if not resolved:
        raise ValueError("pairs names no layer to compare")
    return resolved


def _squeeze_leading(shape) -> tuple[int, ...]:
    """A shape without its leading 1s: positions (1, T, C) and (T, C) hold the same values."""
    shape = tuple(shape)
    while len(shape) > 1 and shape[0] == 1:
        shape = shape[1:]
    return shape


def _diff(ref_name, port_name, a, b, rtol, atol) -> Pair:
    if _squeeze_leading(a.shape) != _squeeze_leading(b.shape):
        raise ValueError(
            f"reference layer {ref_name!r} returns shape {tuple(a.shape)}, "
            f"port layer {port_name!r} returns shape {tuple(b.shape)}"
        )
    dtype = a.dtype if a.dtype.is_floating_point else torch.float32
    # compare in float32 at least (MPS has no float64; float64 models keep float64)
    work = torch.promote_types(torch.promote_types(a.dtype, b.dtype), torch.float32)
    a, b = a.to(work), b.to(work).reshape(a.shape)
    diff = (b - a).abs()
    scale = a.pow(2).mean().sqrt().item() if a.numel() else 0.0
    default_rtol, default_atol = default_tolerance(dtype, scale)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    bound = atol + rtol * a.abs()
    excess = torch.where(diff == 0, 0.0, diff / bound)  # 0/0 is agreement, x/0 is not
    return Pair(
        reference=ref_name,
        port=port_name,
        shape=tuple(a.shape),
        dtype=dtype,
        max_diff=diff.max().item() if diff.numel() else 0.0,
        scale=scale,
        rtol=rtol,
        atol=atol,
        excess=excess.max().item() if excess.numel() else 0.0,
    )


def compare(
    reference: nn.Module,
    port: nn.Module,
    *inputs,
    pairs: Mapping[str, str] | Callable[[str], str | None] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Report:
    """Run ``reference(*inputs)`` and ``port(*inputs)`` and compare their paired layers.

    Put both models in ``eval()`` (dropout makes two runs differ). ``rtol`` and ``atol``
    replace the default tolerance (see the module docstring) for every pair.
    """
    _check_module("reference", reference)
    _check_module("port", port)
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float))):
            raise TypeError(f"{name} must be None or a number, got {type(tol).__name__}")
        if tol is not None and not tol >= 0:
            raise ValueError(f"{name} must be >= 0, got {tol!r}")
    resolved = _resolve(reference, port, pairs)
    if resolved is None:
        ref_order, ref_out = _run(reference, _layers(reference), inputs, "reference")
        port_order, port_out = _run(port, _layers(port), inputs, "port")
        if len(ref_order) != len(port_order):
            raise ValueError(
                f"pairing by order: the reference runs {len(ref_order)} layers with "
                f"parameters, the port {len(port_order)}; pass pairs= to pair them by name"
            )
        calls = list(zip(ref_order, port_order, strict=True))
        ref_seq = [ref_out[n].pop(0) for n in ref_order]
        port_seq = [port_out[n].pop(0) for n in port_order]
    else:
        ref_order, ref_out = _run(reference, sorted({r for r, _ in resolved}), inputs, "reference")
        _, port_out = _run(port, sorted({p for _, p in resolved}), inputs, "port")
        by_ref = {}
        for ref_name, port_name in resolved:
            by_ref.setdefault(ref_name, []).append(port_name)
        calls, ref_seq, port_seq, seen = [], [], [], {}
        for ref_name in dict.fromkeys(ref_order):  # the reference's running order
            for port_name in by_ref[ref_name]:
                a, b = ref_out[ref_name], port_out.get(port_name, [])
                if len(a) != len(b):
                    raise ValueError(
                        f"reference layer {ref_name!r} ran {len(a)} times, "
                        f"port layer {port_name!r} {len(b)} times"
                    )
                calls += [(ref_name, port_name)] * len(a)
                ref_seq += a
                port_seq += b
                seen[ref_name] = True
        missing = [r for r, _ in resolved if r not in seen]
        if missing:
            raise ValueError(f"reference layer {missing[0]!r} did not run on these inputs")
    return Report(
        tuple(
            _diff(r, p, a, b, rtol, atol)
            for (r, p), a, b in zip(calls, ref_seq, port_seq, strict=True)
        )
    )
