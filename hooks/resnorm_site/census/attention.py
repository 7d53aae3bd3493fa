"""What happens inside a family's attention, from the toy run: the norms and clips it
calls (on q, k, v, each head's output or a latent; per head or over the projection; with
which weight), an output gate (a sigmoid as wide as its output), sinks (a softmax over one
more column than there are tokens), a soft-cap on the scores (a tanh), and the bound on
the output logits, measured by saturating the output head."""

from __future__ import annotations

import math

from resnorm_site.census import layer, norms
from resnorm_site.census.stack import TOKENS


def parts(layers, recorder, memo, head_dim: int, hidden: int) -> dict:
    """QK-norm, V-norm, output norm, gate, sinks and soft-caps of the layers' attention."""
    found = {"qk": set(), "gate": set(), "sinks": set(), "attn_tanh": False}
    for lcall in layers:
        for child in recorder.children(lcall):
            inner = [child, *recorder.within(child)]
            functions = [
                (f, s, t) for c in inner for (f, s), t in zip(c.functions, c.order, strict=True)
            ]
            softmax = [s for f, s, _ in functions if f == "softmax" and s and len(s) == 4]
            if not softmax:
                continue
            scores = min(t for f, s, t in functions if f == "softmax" and s and len(s) == 4)
            if any(s[-1] == TOKENS + 1 for s in softmax):
                learned = any(
                    p.dim() == 1 and "sink" in n for n, p in child.module.named_parameters()
                )
                found["sinks"].add("learned" if learned else "computed")
            if any(f == "tanh" and s and len(s) == 4 and s[-1] == TOKENS for f, s, _ in functions):
                found["attn_tanh"] = True
            for f, s, t in functions:
                # a gate on the output: a sigmoid after the scores' softmax, as wide as the
                # output or one per head
                if f != "sigmoid" or not s or t < scores or TOKENS not in s[1:]:
                    continue
                width = math.prod(s) // (s[0] * TOKENS)  # values per token
                if width >= hidden // 2:
                    found["gate"].add("elementwise")
                elif width <= hidden // head_dim:
                    found["gate"].add("per_head")
            inside = recorder.within(child)
            linears = [c for c in inside if type(c.module).__name__ == "Linear"]
            for c in inside:
                kind = None
                if layer.role(c, memo) == "norm":
                    kind = "norm"
                elif norms.clips(c):
                    kind = "clip"
                if kind is None or (c.output is not None and _same(c.output, child.output)):
                    continue  # a container's own closing norm is the stream's (BERT)
                target = _source(c, linears) or _target(c.name.rsplit(".", 1)[-1])
                width = c.main_input.shape[-1]
                weighted = any(p.dim() == 1 for p in c.module.parameters())
                one_plus = kind == "norm" and weighted and norms.describe(c).weight == "1+w"
                if kind == "clip":
                    form = "clip"
                elif c.main_input.dim() >= 4 or width == head_dim:  # a heads axis: per head
                    form = ("head_1p" if one_plus else "head") if weighted else "head_noweight"
                elif width % head_dim == 0 and width >= hidden // 2:
                    form = "proj" if weighted else "proj_noweight"
                else:
                    form = "latent"
                for t in target:
                    found["qk"].add((t, form))
    return found


def _same(a, b) -> bool:
    return a.numel() == b.numel() and layer._close(a, b)


def _within(values, pool) -> bool:
    import torch

    return values.numel() <= pool.numel() and bool(
        torch.isin(values.flatten(), pool.flatten()).all()
    )


def _source(norm_call, linears) -> tuple[str, ...]:
    """Which projection's output a norm in attention reads (q, k, v), or that its output
    goes into the last projection (o), by matching values; () when neither matches."""
    x, y = norm_call.main_input, norm_call.output
    before = [c for c in linears if c.end < norm_call.start and c.output is not None]
    for c in reversed(before):
        if _within(x, c.output):
            letters = _target(c.name.rsplit(".", 1)[-1])
            return () if letters == ("latent",) or len(c.output.shape) == 0 else letters
    after = [c for c in linears if c.start > norm_call.end]
    if after and y is not None and _within(after[-1].main_input, y):
        return ("o",)
    return ()


def _target(name: str) -> tuple[str, ...]:
    """Which of q, k, v, the output or a latent a norm in attention acts on, by its name."""
    name = name.lower()
    for prefix, target in (
        ("qk", ("q", "k")),
        ("query", ("q",)),
        ("key", ("k",)),
        ("value", ("v",)),
        ("q", ("q",)),
        ("k", ("k",)),
        ("v", ("v",)),
        ("o", ("o",)),
    ):
        if name.startswith(prefix):
            return target
    return ("latent",)


def final_cap(model, ids, recorder) -> float | None:
    """The bound on the logits: the output head's weights made huge, the logits' largest
    magnitude, when a tanh acted on vocabulary-wide values."""
    import torch

    top = next(c for c in recorder.calls if c.name == "")
    logits = top.output
    if logits is None or logits.dim() != 3:
        return None
    vocab = logits.shape[-1]
    if not any(f == "tanh" and s and s[-1] == vocab for f, s in top.functions):
        return None
    head = model.get_output_embeddings()
    if head is None:
        return None
    saved = head.weight.detach().clone()
    try:
        with torch.no_grad():
            head.weight.mul_(1e6)
            out = model(input_ids=ids, use_cache=False)
            return round(float(out.logits.abs().max()), 3)
    finally:
        with torch.no_grad():
            head.weight.copy_(saved)
