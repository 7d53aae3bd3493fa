"""What carries a family's residual and what ends its stack, from the toy run: the
layers' input shape (several streams side by side or on an axis of their own), a run of
the first layer with its sublayers' outputs at zero (a plain, scaled or gated skip; streams
mixed or not), a module that attends over a stack of earlier states, and whether the value
the output head reads is a norm of the last layer's output."""

from __future__ import annotations

from resnorm_site.census import layer
from resnorm_site.census.trace import tensors

TOKENS = 7  # the toy run's sequence length (probe.py)


def _zeroed_layer(call, names):
    """The layer run again with the output of each sublayer in ``names`` set to zero."""
    import torch

    handles = []

    def zero(module, args, output):
        if isinstance(output, torch.Tensor):
            return torch.zeros_like(output)
        if isinstance(output, tuple):
            return tuple(torch.zeros_like(o) if isinstance(o, torch.Tensor) else o for o in output)
        return output

    for name, child in call.module.named_children():
        if name in names:
            handles.append(child.register_forward_hook(zero))
    try:
        with torch.no_grad():
            found = tensors((call.module(*call.args, **call.kwargs),))
    finally:
        for h in handles:
            h.remove()
    return found[0] if found else None


def topology(layers, recorder, hidden: int, names) -> dict:
    """Streams, their mixing, a gate or scale on the skip, attention over depth: from the
    layer's input shape and a run of the first layer with its sublayers' outputs at zero."""
    first = layers[0]
    x = first.main_input
    streams = 1
    if x is not None and x.dim() == 4 and x.shape[-1] == hidden:
        streams = x.numel() // (TOKENS * hidden * x.shape[0 if x.shape[1] == TOKENS else 1])
    elif x is not None and x.dim() == 3 and x.shape[-1] % hidden == 0:
        streams = x.shape[-1] // hidden  # streams side by side in the last axis
    depth = any(_attends_over_depth(c, hidden) for c in recorder.calls)
    result = {"streams": streams, "depth_attention": depth, "identity": None, "skip": ""}
    try:
        y = _zeroed_layer(first, names)
    except Exception:
        return result
    if y is None or y.numel() != x.numel():
        return result
    y, x = y.reshape(x.shape).double(), x.double()
    result["identity"] = layer._close(y, x)
    if result["identity"] or streams > 1:
        return result
    ratio = y / x.where(x.abs() > 1e-6, 1.0)
    per_feature = ratio.reshape(-1, ratio.shape[-1])
    steady = per_feature.std(dim=0).max().item() < 1e-3  # the same for every token
    level = per_feature.mean(dim=0).abs()
    if steady and level.max() > 0.05 and not layer._close(level, level * 0 + 1):
        result["skip"] = "scalar" if level.std().item() < 1e-6 else "vector"
    return result


def _attends_over_depth(call, hidden: int) -> bool:
    """A module without weight matrices that reads a stack of earlier states and runs a
    softmax or attention over it."""
    if any(p.dim() >= 2 for p in call.module.parameters()):
        return False
    shapes = [t.shape for t in call.inputs if t.is_floating_point()]
    stacked = any(len(s) == 4 and s[-1] == hidden and s[1] == TOKENS for s in shapes)
    attends = any(f in ("softmax", "scaled_dot_product_attention") for f, _ in call.functions)
    return stacked and attends


def final_norm(recorder, layers, memo) -> str:
    """Whether a norm maps the last layer's output to what the output head reads."""
    import torch

    last = layers[-1]
    top = next(c for c in recorder.calls if c.name == "")
    vocab = top.output.shape[-1] if top.output is not None else -1
    head = None
    for c in recorder.calls:
        linear = c.start > last.end and isinstance(c.module, torch.nn.Linear)
        if linear and c.output is not None and c.output.shape[-1] == vocab:
            head = c
    target = head.main_input if head is not None else None
    if target is None:
        target = top.output
    after = [
        c
        for c in recorder.calls
        if c.start > last.end and c.end < (head.start if head else 1 << 60)
    ]
    for c in reversed(after):
        reaches = c.output is not None and layer._close(c.output, target)
        if reaches and layer.role(c, memo) == "norm":
            source = c.main_input
            if source is not None and layer._close(source, last.output):
                return "yes"
            return "after_collapse"
    if last.output is not None and layer._close(last.output, target):
        return "no"
    return "unknown"
