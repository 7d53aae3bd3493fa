"""Where the norms of one decoder layer sit, read from what flows through it.

Each call of a direct child of the layer gets an expression for its input, found by
matching values: the layer's input ``x``, an earlier call's output, or a sum of two or
three of these. A norm child becomes ``norm(...)``, a child with weight matrices (attention,
MLP, mixer) ``sub(...)``, any other child ``op(...)``. The layer's output then reads like
``add(add(x, sub(norm(x))), sub(norm(add(...))))``, from which the placement of each
sublayer follows: a norm on its input (pre), on its output (output only; around with
both), on the sum with the stream (post), or a normalized stream as the skip (normed skip).
"""

from __future__ import annotations

import itertools

from resnorm_site.census import norms
from resnorm_site.census.trace import Call

X = ("x",)
UNKNOWN = ("?",)


def _close(a, b) -> bool:
    import torch

    if a.shape != b.shape:
        if a.numel() != b.numel():
            return False
        b = b.reshape(a.shape)
    a, b = a.double(), b.double()
    scale = max(a.abs().max().item(), b.abs().max().item(), 1e-12)
    return bool(torch.allclose(a, b, rtol=1e-3, atol=1e-4 * scale))


class Flow:
    """Values seen so far in a layer, each with its expression."""

    def __init__(self, x):
        self.nodes: list[tuple[tuple, object]] = [(X, x.float())]
        self.scales: list[tuple[float, float]] = []  # the weights of sums that are not plain

    def resolve(self, t) -> tuple:
        if t is None or not t.is_floating_point():
            return UNKNOWN
        t = t.float()
        same = [(e, v) for e, v in self.nodes if v.numel() == t.numel()]
        for expr, value in reversed(same):
            if _close(t, value):
                return expr
        for size in (2, 3):
            for combo in itertools.combinations(same, size):
                total = sum(v.reshape(t.shape) for _, v in combo)
                if _close(t, total):
                    return self._known(("add", *(e for e, _ in combo)), t)
        for (ea, a), (eb, b) in itertools.combinations(same, 2):
            weights = _weights(t, a.reshape(t.shape), b.reshape(t.shape))
            if weights is not None:
                self.scales.append(weights)
                return self._known(("add", ea, eb), t)
        return UNKNOWN

    def _known(self, expr: tuple, t) -> tuple:
        self.nodes.append((expr, t))
        return expr

    def add(self, expr: tuple, t) -> None:
        if t is not None and t.is_floating_point():
            self.nodes.append((expr, t.float()))


def _weights(t, a, b):
    """Scalars (p, q) with t = p a + q b (a residual sum scaled by depth), if any."""
    import torch

    basis = torch.stack([a.flatten(), b.flatten()], dim=1).double()
    if torch.linalg.matrix_rank(basis) < 2:
        return None
    solution = torch.linalg.lstsq(basis, t.flatten().double().unsqueeze(1)).solution.flatten()
    p, q = (float(v) for v in solution)
    sensible = all(0.05 <= abs(v) <= 20 for v in (p, q))
    if sensible and _close(t, (p * a.double() + q * b.double()).float()):
        return round(p, 6), round(q, 6)
    return None


def role(call: Call, norm_memo: dict) -> str:
    key = id(call.module)
    if key not in norm_memo:
        norm_memo[key] = norms.normalizes(call)
    if norm_memo[key]:
        return "norm"
    if any(p.dim() >= 2 for p in call.module.parameters()):
        return "sub"
    return "op"


def _ends_in_norm(call: Call, recorder, shape, norm_memo: dict) -> bool:
    """A container (BERT's attention output block) whose output is a norm of its input plus
    something it computed: the residual sum and its norm are inside it, so its children
    are the layer's steps. A norm on the container's own branch alone (a MoE's output
    norm) does not count."""
    inside = recorder.within(call)
    for inner in inside:
        if inner.main_input is None or tuple(inner.main_input.shape) != tuple(shape):
            continue
        if inner.output is None or not _close(inner.output, call.output):
            continue
        if role(inner, norm_memo) != "norm":
            continue
        given = [t for t in call.inputs if t.numel() == inner.main_input.numel()]
        for x in given:
            branch = inner.main_input.float() - x.float().reshape(inner.main_input.shape)
            if any(c.output is not None and c.output.numel() == branch.numel()
                   and _close(c.output, branch) for c in inside):  # fmt: skip
                return True
    return False


def _own_matrices(module) -> bool:
    return any(p.dim() >= 2 for p in module.parameters(recurse=False))


def _steps(layer: Call, recorder, norm_memo: dict, shape=None, owner=None) -> list:
    """(call, the flattened container whose own weights may have made its input)."""
    shape = layer.main_input.shape if shape is None else shape
    calls = []
    for call in recorder.children(layer):
        if (
            call.output is not None
            and role(call, norm_memo) == "sub"
            and _ends_in_norm(call, recorder, shape, norm_memo)
        ):
            inner = call if _own_matrices(call.module) else owner
            calls += _steps(call, recorder, norm_memo, shape, inner)
        else:
            calls.append((call, owner))
    return calls


def expressions(layer: Call, recorder, norm_memo: dict) -> tuple[list, tuple]:
    """Each child call with its role and expression, and the layer output's expression."""
    stream = layer.main_input
    flow = Flow(stream)
    steps = []
    for call, owner in _steps(layer, recorder, norm_memo):
        kind = role(call, norm_memo)
        same = [t for t in call.inputs if t.is_floating_point() and t.numel() == stream.numel()]
        args = tuple(flow.resolve(t) for t in same) or (flow.resolve(call.main_input),)
        if kind == "norm":
            args = (flow.resolve(call.main_input),)
        if owner is not None:
            # what the container computed with its own weights (XLNet's attention)
            made = ("sub", owner.name.rsplit(".", 1)[-1], flow.resolve(owner.main_input))
            args = tuple(made if a == UNKNOWN else a for a in args)
        expr = (kind, call.name.rsplit(".", 1)[-1], *args)
        if kind == "sub" and len(args) > 1 and _strip(args[0]) in args[1:]:
            # it was handed the stream beside its input: it adds the skip itself (BLOOM)
            expr = ("add", _strip(args[0]), (kind, expr[1], args[0]))
        out = call.output
        known = flow.resolve(out) if out is not None and kind == "op" else UNKNOWN
        if known != UNKNOWN:
            expr = known  # dropout, a cast: the value is one already seen
        else:
            flow.add(expr, out)
        steps.append((call, kind, expr))
    return steps, flow.resolve(layer.output), flow.scales


def _contains(expr: tuple, part: tuple) -> bool:
    if expr == part:
        return True
    return any(isinstance(e, tuple) and _contains(e, part) for e in expr[1:])


def _strip(expr: tuple) -> tuple:
    """The stream a branch reads: its input without the norm."""
    while expr[0] == "norm":
        expr = expr[2]
    return expr


def _walk(expr: tuple):
    yield expr
    for e in expr[1:]:
        if isinstance(e, tuple):
            yield from _walk(e)


def _through_ops(expr: tuple) -> tuple:
    """What an op of one argument (an activation, a dropout) was applied to."""
    while expr[0] == "op" and len(expr) == 3:
        expr = expr[2]
    return expr


def _uses(expr: tuple, out: tuple, nodes: list) -> set[str]:
    """How a value is used: as a term of a sum, as an argument of an op, as the output."""
    uses = set()
    if expr == out:
        uses.add("output")
    for n in nodes:
        if n[0] == "add" and expr in n[1:]:
            uses.add("term")
        elif n[0] == "op" and expr in n[2:]:
            uses.add("op")
    return uses


def placements(steps: list, out: tuple) -> dict[str, str]:
    """The placement of the norms around each sublayer whose branch reaches the output."""
    nodes = list(_walk(out))
    for _, _, expr in steps:
        nodes += list(_walk(expr))
    subs = list(dict.fromkeys(n for n in nodes if n[0] == "sub"))
    result: dict[str, str] = {}
    # a sublayer that reads another's output directly continues that one's branch
    heads = [s for s in subs if _through_ops(s[2])[0] != "sub"]
    for sub in heads:
        if out != UNKNOWN and not _contains(out, sub):
            continue
        branch, longer = sub, True
        while longer:
            longer = False
            for n in nodes:
                if n[0] in ("sub", "op") and len(n) == 3 and n[2] == branch:
                    branch, longer = n, True
        source = sub[2]
        pre = source[0] == "norm"
        after = any(n[0] == "norm" and n[2] == branch for n in nodes)
        post = any(
            n[0] == "norm"
            and n[2][0] == "add"
            and any(_contains(t, sub) for t in n[2][1:])
            and _uses(n, out, nodes)
            for n in nodes
        )
        skip_normed = pre and any(n[0] == "add" and source in n[1:] for n in nodes)
        if post and (out[0] == "norm" or not skip_normed):
            result[sub[1]] = "post"
        elif skip_normed:
            result[sub[1]] = "normed_skip"
        elif post:
            result[sub[1]] = "post"
        elif pre and after:
            result[sub[1]] = "around"
        elif pre:
            result[sub[1]] = "pre"
        elif after:
            result[sub[1]] = "output"
        else:
            result[sub[1]] = "none"
    return result


def parallel(steps: list, out: tuple) -> bool:
    """Two sublayers that read the same stream and are added to it together."""
    subs = [n for n in dict.fromkeys(_walk(out)) if n[0] == "sub"]
    subs = [s for s in subs if _through_ops(s[2])[0] != "sub"]
    streams = [_strip(s[2]) for s in subs]
    return len(subs) >= 2 and len(set(streams)) == 1 and streams[0] != UNKNOWN
