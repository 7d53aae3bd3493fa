"""A row's cells, as keys the page words in its language (words.py), from what the toy run
(or the source) found. Plain Python: no torch here."""

from __future__ import annotations

MIXER = ("attn", "attention", "self", "mixer", "mamba", "conv", "rnn", "recurrent", "temporal")
MIXER += ("lstm", "ssm", "time", "token")
GROUPS = ("pre", "parallel", "around", "post", "mixed", "other", "unprobed")
MLP = ("mlp", "ffn", "feed_forward", "moe", "expert", "fc1", "intermediate", "channel", "ff")


def _norm_key(n: dict) -> str:
    if n["kind"] == "layer":
        key = "layernorm" if n["bias"] or n["weight"] == "none" else "layernorm_nobias"
    else:
        key = "rmsnorm"
    return f"{key}_scale_first" if n["scale_first"] else key


NOT_SUBLAYER = ("input", "hc", "gate", "norm", "connection", "convolution")


def _is(name: str, words: tuple) -> bool:
    """A sublayer named as one of ``words`` (self_attn, mlp, feed_forward, ...), not a
    module that feeds or follows one (attention_input, attn_hc, post_attention_convolution)."""
    name = name.lower()
    return any(w in name for w in words) and not any(w in name for w in NOT_SUBLAYER)


def _pick(places: list):
    """The placement of the sublayer a name picks out: one with norms, if several match
    (DeepSeek-V4's ``attn_hc`` beside ``self_attn``)."""
    normed = [p for p in places if p != "none"]
    return (normed or places or [None])[0]


def _sorted(values) -> list:
    return sorted(set(values))


def placement(layers: list[dict]) -> list[list]:
    """Each distinct layer form: [[part, place], ...] plus ["parallel", True] when so."""
    forms = []
    for lay in layers:
        parts = lay["placement"]  # sublayer attribute -> placement
        mixer = _pick([v for k, v in parts.items() if _is(k, MIXER)])
        mlp = _pick([v for k, v in parts.items() if _is(k, MLP) and not _is(k, MIXER)])
        form = [p for p in (["mixer", mixer], ["mlp", mlp]) if p[1] is not None]
        if lay.get("parallel"):
            form.append(["parallel", True])
        if form and form not in forms:
            forms.append(form)
    return forms


def topology(raw: dict, forms: list) -> str:
    top = raw["topology"]
    if top.get("depth_attention"):
        return "depth"
    if top.get("streams", 1) > 1:
        return "streams_mixed" if top.get("identity") is False else "streams"
    if top.get("skip") == "vector":
        return "gated"
    scaled = any(lay.get("scaled_sum") for lay in raw["layers"])
    if top.get("skip") == "scalar" or scaled:
        return "scaled"
    return "one"


def qk(found: list) -> dict:
    """The forms of the norms on q and k, on v, on each head's output, on latents."""
    by_target: dict[str, set] = {}
    for target, form in found:
        if form == "latent":  # a norm on a compressed projection (MLA), not on heads
            target = "latent"
        by_target.setdefault(target, set()).add(form)
    qk_forms = by_target.get("q", set()) | by_target.get("k", set())
    return {
        "qk": sorted(qk_forms),
        "v": sorted(by_target.get("v", set())),
        "o": sorted(by_target.get("o", set())),
        "latent": sorted(by_target.get("latent", set())),
    }


def cells(row: dict) -> dict:
    """The cells of one row; empty when the family was neither probed nor read."""
    raw = row.get("raw")
    if not raw:
        return {}
    stream_norms = [n for lay in raw["layers"] for n in lay["norms"]]
    forms = placement(raw["layers"])
    attention = raw["attention"]
    measured = _sorted(n["eps"] for n in stream_norms if n.get("eps") is not None)
    attn_cap = None
    if attention.get("attn_tanh"):
        attn_cap = raw.get("attn_cap_config") or "yes"
    elif attention.get("attn_tanh") is None:  # read from the source: the config says
        attn_cap = raw.get("attn_cap_config")
    final_cap = raw.get("final_cap")
    final_cap_method = "ran" if final_cap is not None else "config"
    if final_cap is None:
        final_cap = raw.get("final_cap_config")
    return {
        "norm": _sorted(_norm_key(n) for n in stream_norms) or ["none"],
        "weight": _sorted(n["weight"] for n in stream_norms) or ["none"],
        "float32": _sorted(n["float32"] for n in stream_norms if n["float32"]),
        "eps": raw.get("eps"),
        "eps_name": raw.get("eps_name", ""),
        "eps_others": raw.get("eps_others", {}),
        "eps_measured": measured,
        "placement": forms,
        "qk": qk(attention.get("qk", [])),
        "gate": attention.get("gate", []),
        "sinks": attention.get("sinks", []),
        "attn_cap": attn_cap,
        "final_cap": final_cap,
        "final_cap_method": final_cap_method if final_cap is not None else "",
        "topology": topology(raw, forms),
        "streams": raw["topology"].get("streams", 1),
        "final_norm": _final(raw),
    }


def _final(raw: dict) -> str:
    """A final norm reading something other than the last layer's output: the combined
    streams where there are several, else another step (an output head's transform)."""
    found = raw.get("final_norm", "unknown")
    several = raw["topology"].get("streams", 1) > 1 or raw["topology"].get("depth_attention")
    if found == "after_collapse" and not several:
        return "after_other"
    return found


def group(row: dict) -> str:
    """The table a row goes into: by where its norms sit."""
    c = row.get("cells")
    if row.get("method") != "probed" or not c:
        return "unprobed"
    forms = c["placement"]
    if len(forms) != 1:
        return "mixed" if forms else "other"
    form = forms[0]
    if any(part == "parallel" for part, _ in form):
        return "parallel"
    places = {p for _, p in form}
    if len(places) != 1:
        return "mixed"
    place = places.pop()
    return {"pre": "pre", "around": "around", "output": "around", "post": "post"}.get(
        place, "post" if place == "normed_skip" else "other"
    )


def summary(rows: list[dict]) -> dict:
    """The counts the page opens with, over the rows with cells."""
    with_cells = [r for r in rows if r.get("cells")]
    probed = [r for r in rows if r.get("method") == "probed"]

    def count(test) -> int:
        return sum(1 for r in with_cells if test(r["cells"]))

    def places(c) -> set:
        return {p for form in c["placement"] for part, p in form if part != "parallel"}

    return {
        "rows": len(rows),
        "probed": len(probed),
        "source": sum(1 for r in rows if r.get("method") == "source"),
        "not_probed": sum(1 for r in rows if r.get("method") != "probed"),
        "rmsnorm": count(lambda c: any(k.startswith("rmsnorm") for k in c["norm"])),
        "layernorm": count(lambda c: any(k.startswith("layernorm") for k in c["norm"])),
        "one_plus_w": count(lambda c: "1+w" in c["weight"]),
        "weightless": count(lambda c: c["weight"] == ["none"]),
        **{g: sum(1 for r in rows if group(r) == g) for g in GROUPS},
        "output": count(lambda c: places(c) == {"output"}),
        "normed_skip": count(lambda c: "normed_skip" in places(c)),
        "qk_norm": count(lambda c: bool(c["qk"]["qk"])),
        "qk_head": count(lambda c: any(f.startswith("head") for f in c["qk"]["qk"])),
        "qk_proj": count(lambda c: any(f.startswith("proj") for f in c["qk"]["qk"])),
        "v_norm": count(lambda c: bool(c["qk"]["v"])),
        "gate": count(lambda c: bool(c["gate"])),
        "sinks": count(lambda c: bool(c["sinks"])),
        "attn_cap": count(lambda c: c["attn_cap"] is not None),
        "final_cap": count(lambda c: c["final_cap"] is not None),
        "streams": count(lambda c: c["topology"] in ("streams", "streams_mixed")),
        "depth": count(lambda c: c["topology"] == "depth"),
        "gated": count(lambda c: c["topology"] in ("gated", "scaled")),
        "final_norm": count(lambda c: c["final_norm"] in ("yes", "after_collapse")),
    }
