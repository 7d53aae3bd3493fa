"""One family's row, computed from a toy instance of its text model.

The model is built from its config class's defaults at toy size (shrink.py), run once on
seven tokens while every module call is recorded (trace.py), and read: the decoder
layers' norms by what they compute (norms.py), their placement by what flows through
each layer (layer.py), the final norm by what reaches the output head, the residual
topology by running a layer with its sublayers' outputs set to zero, and the attention's
norms, gate, sinks and caps by the tensors and torch functions inside it. The config's
defaults give ε and the soft-caps' values. The page names every method.
"""

from __future__ import annotations

import re

from resnorm_site.census import attention, families, layer, norms, shrink, stack
from resnorm_site.census.trace import Recorder

TOKENS = stack.TOKENS  # odd, so that no other axis of a toy model has this length
EPS_NAMES = (
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "norm_eps",
    "norm_epsilon",
    "rms_norm_epsilon",
    "epsilon",
    "eps",
)
ATTN_CAP = re.compile(r"(attn|attention).*(softcap|soft_cap|logit_cap)")
FINAL_CAP = re.compile(r"(final.*(softcap|soft_cap|logit_cap))|^logits_soft_cap$|^output_softcap")


def config_values(family: families.Family) -> dict:
    """ε and the soft-caps as the config class's defaults set them."""
    values = shrink.defaults(families.config_class_of(family))
    eps = {k: v for k, v in values.items() if k in EPS_NAMES and isinstance(v, float)}
    main = next((k for k in EPS_NAMES if k in eps), None)
    others = {
        k: v
        for k, v in values.items()
        if isinstance(v, float)
        and re.search(r"norm.*eps|eps.*norm|rms_eps", k)
        and k != main
        and v != eps.get(main)
    }
    attn_cap = next((v for k, v in values.items() if ATTN_CAP.search(k)), None)
    final_cap = next((v for k, v in values.items() if FINAL_CAP.search(k)), None)
    return {
        "eps": eps.get(main),
        "eps_name": main or "",
        "eps_others": others,
        "attn_cap_config": attn_cap,
        "final_cap_config": final_cap,
    }


MAX_PARAMETERS = 150_000_000  # a toy model is far smaller; a bigger one did not shrink


class ProbeError(Exception):
    """A stage of the probe that failed: config, build, too_big, run or probe."""

    def __init__(self, stage: str, detail: str):
        super().__init__(f"{stage}: {detail}")
        self.stage = stage


def _stage(stage: str, step, *args):
    try:
        return step(*args)
    except ProbeError:
        raise
    except Exception as err:
        raise ProbeError(stage, f"{type(err).__name__}: {err}") from err


def build(family: families.Family):
    import torch

    config = _stage("config", shrink.toy_config, families.config_class_of(family))
    cls = _stage("build", families.model_class, family)

    def size() -> int:
        with torch.device("meta"):  # its size first, without allocating it
            return sum(p.numel() for p in cls(config).parameters())

    if _stage("build", size) > MAX_PARAMETERS:
        raise ProbeError("too_big", f"the toy instance would still hold {size() / 1e6:.0f} M")
    torch.manual_seed(0)
    model = _stage("build", lambda: cls(config).eval().float())
    _stage("build", _unit_scale, model)
    return config, model


def _unit_scale(model) -> None:
    """Weight matrices drawn at unit gain, so that a sublayer's output is as large as the
    stream it is added to; at a checkpoint's small initial scale a toy branch is so small
    that the stream and its norm could not be told apart. Vectors (norm weights, biases,
    gates) keep their initial values."""
    import torch

    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and p.is_floating_point():
                fan_in = p.shape[-1] if p.dim() == 2 else p[0].numel() // p.shape[1]
                p.copy_(torch.randn(p.shape, generator=gen) / max(fan_in, 1) ** 0.5)
            elif p.dim() == 1 and p.is_floating_point():
                # a little off their initial values: a norm of an already normalized input
                # (BLOOM's first layer) must still differ from that input
                p.add_(0.1 * torch.randn(p.shape, generator=gen))


def run(model, vocab: int):
    import torch

    ids = torch.randint(1, min(vocab, 100), (1, TOKENS), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), Recorder(model) as recorder:
        output = model(input_ids=ids, use_cache=False)
    return recorder, output, ids


def decoder_layers(model, recorder) -> list:
    """The calls of the decoder stack's layers: the ModuleList with the most weights whose
    members ran."""
    import torch

    best, weight = None, -1
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0:
            size = sum(p.numel() for p in module.parameters())
            called = any(c.name.startswith(f"{name}.") for c in recorder.calls)
            if called and size > weight:
                best, weight = name, size
    if best is None:
        return []
    pattern = re.compile(re.escape(best) + r"\.\d+$")
    return [c for c in recorder.calls if pattern.match(c.name)]


def layer_rows(layers, recorder, memo) -> list[dict]:
    rows = []
    for call in layers:
        steps, out, scales = layer.expressions(call, recorder, memo)
        places = layer.placements(steps, out)
        norm_calls = [c for c, kind, _ in steps if kind == "norm"]
        connections = []
        for c, kind, expr in steps if not norm_calls else ():
            # no norm of its own: a sublayer fed by a connection module that normalizes
            # inside it (Qwen4-Exp)
            readers = [e for _, k, e in steps if k == "sub" and e[2] == expr]
            if kind != "sub" or not readers:
                continue
            inner = [n for n in recorder.within(c) if layer.role(n, memo) == "norm"]
            if inner:
                norm_calls += inner
                connections.append(expr[1])
                for reader in readers:
                    places[reader[1]] = "connection"
        rows.append(
            {
                "placement": places,
                "parallel": layer.parallel(steps, out),
                "norms": [norms.describe(c).as_dict() for c in norm_calls],
                "resolved": out != layer.UNKNOWN,
                "scaled_sum": bool(scales),
                "connections": connections,
            }
        )
    return rows


def probe(family: families.Family) -> dict:
    """The row's cells as computed, or raise (the caller falls back to the source)."""
    values = _stage("config", config_values, family)
    config, model = build(family)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = int(
        next(v for k in ("hidden_size", "n_embd", "d_model", "dim") if (v := _get(text, k)))
    )
    heads = _get(text, "num_attention_heads") or _get(text, "n_head") or 4
    head_dim = _get(text, "head_dim") or hidden // heads
    recorder, _, ids = _stage("run", run, model, _get(text, "vocab_size") or 512)
    return _stage("probe", _read, family, values, model, recorder, ids, hidden, head_dim)


def _read(family, values, model, recorder, ids, hidden, head_dim) -> dict:
    layers = decoder_layers(model, recorder)
    if not layers:
        raise RuntimeError("no decoder layers ran")
    memo: dict = {}
    rows = layer_rows(layers, recorder, memo)
    branches = set(rows[0]["placement"]) - set(rows[0]["connections"])
    return {
        **values,
        "layers": rows,
        "final_norm": stack.final_norm(recorder, layers, memo),
        "topology": stack.topology(layers, recorder, hidden, branches),
        "attention": _sets(attention.parts(layers, recorder, memo, head_dim, hidden)),
        "final_cap": attention.final_cap(model, ids, recorder),
    }


def _get(config, name: str):
    """An attribute of the config, or of its first layer's where it varies per layer."""
    try:
        return getattr(config, name, None)
    except Exception:
        layers = getattr(config, "per_layer_config", None) or [None]
        return getattr(layers[0], name, None)


def _sets(found: dict) -> dict:
    return {k: sorted(v) if isinstance(v, set) else v for k, v in found.items()}
