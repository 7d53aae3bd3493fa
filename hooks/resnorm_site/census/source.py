"""A family read from its modeling source (with ``ast``) when no toy instance of it runs.

The decoder layer class is the one named ``...DecoderLayer`` (a text one first); its
``__init__`` says which attributes are norms (their class's name holds ``Norm``) and which
are sublayers; its ``forward`` is read statement by statement into the same expressions
the toy run produces (layer.py), so the placement follows by the same rules. The norm
classes' source says the weight convention (``1 + self.weight``) and the float32 upcast.
Every cell read this way is marked as read from the source on the page.
"""

from __future__ import annotations

import ast
from pathlib import Path

from resnorm_site.census import families, layer
from resnorm_site.census.layer import UNKNOWN, X

SKIP = ("Dropout", "Identity", "ACT2FN", "Activation", "GELU", "SiLU", "ReLU", "Rotary")


def _classes(family) -> dict[str, ast.ClassDef]:
    folder = families.models_dir() / family.name
    found: dict[str, ast.ClassDef] = {}
    for path in sorted(folder.glob("modeling_*.py")):
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


def _method(cls: ast.ClassDef, name: str):
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _constructors(cls: ast.ClassDef) -> dict[str, list[str]]:
    """``self.attr = Class(...)`` in ``__init__``: each attribute's possible classes."""
    init = _method(cls, "__init__")
    found: dict[str, list[str]] = {}
    if init is None:
        return found
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    found[target.attr] = [
                        _name(c.func) for c in ast.walk(node.value) if isinstance(c, ast.Call)
                    ]
    return found


def _name(func) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _decoder_layer(classes: dict) -> ast.ClassDef:
    names = [n for n in classes if n.endswith(("DecoderLayer", "Block", "Layer"))]
    names = [n for n in names if not any(w in n for w in ("Vision", "Audio", "Encoder", "Patch"))]
    names = [n for n in names if _method(classes[n], "forward") is not None]
    ranked = sorted(names, key=lambda n: (not n.endswith("DecoderLayer"), "Text" not in n))
    for name in ranked:
        attrs = _constructors(classes[name])
        if any("Norm" in c for cs in attrs.values() for c in cs):
            return classes[name]
    raise families.CensusError("no decoder layer class with a norm in the source")


def _role(attr: str, attrs: dict) -> str:
    kinds = attrs.get(attr, [])
    if any("Norm" in k for k in kinds):
        return "norm"
    if not kinds or any(k.startswith(SKIP) or k in SKIP for k in kinds):
        return "op"
    return "sub"


class _Reader:
    def __init__(self, attrs: dict, first_arg: str):
        self.attrs = attrs
        self.values: dict[str, tuple] = {first_arg: X}

    def expr(self, node) -> tuple:
        if isinstance(node, ast.Name):
            return self.values.get(node.id, UNKNOWN)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return ("add", self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("to", "float", "type_as"):
                return self.expr(func.value)
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
            ):
                role = _role(func.attr, self.attrs)
                args = [a for a in node.args] + [
                    k.value for k in node.keywords if k.arg == "hidden_states"
                ]
                first = self.expr(args[0]) if args else UNKNOWN
                if role == "op":
                    return first
                return (role, func.attr, first)
        if isinstance(node, ast.Subscript):
            return self.expr(node.value)
        return UNKNOWN

    def run(self, body) -> tuple:
        out = UNKNOWN
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                value = self.expr(stmt.value)
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.values[target.id] = value
                    elif isinstance(target, ast.Tuple) and target.elts:
                        first = target.elts[0]
                        if isinstance(first, ast.Name):
                            self.values[first.id] = value
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                if isinstance(stmt.op, ast.Add):
                    name = stmt.target.id
                    self.values[name] = (
                        "add",
                        self.values.get(name, UNKNOWN),
                        self.expr(stmt.value),
                    )
            elif isinstance(stmt, ast.If | ast.With):
                # one branch is read: the sublayer is called the same way in each
                inner = self.run(stmt.body)
                out = inner if inner != UNKNOWN else out
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                value = stmt.value.elts[0] if isinstance(stmt.value, ast.Tuple) else stmt.value
                out = self.expr(value)
        return out


def _norm_class(classes: dict, names: list[str]) -> dict:
    """Kind, weight convention and upcast of a norm class, from its name and source."""
    name = next((n for n in names if "Norm" in n), "")
    cls = classes.get(name)
    text = ast.unparse(cls) if cls is not None else ""
    kind = "rms" if "RMS" in name.upper() or ("variance" in text and "mean(" in text) else "layer"
    if "LayerNorm" in name and cls is None:
        kind = "layer"
    if cls is None:
        weight, upcast = "w", "yes"  # torch's own LayerNorm / RMSNorm
    else:
        squeezed = text.replace(" ", "")
        if "1.0+self.weight" in squeezed or "1+self.weight" in squeezed:
            weight = "1+w"
        elif "self.weight" in squeezed or "elementwise_affine" in squeezed:
            weight = "w"
        else:
            weight = "none"
        upcast = "yes" if ("float()" in text or "float32" in text) else "no"
    return {"kind": kind, "weight": weight, "bias": False, "scale_first": False,
            "float32": upcast, "width": 0, "eps": None}  # fmt: skip


def read(family) -> dict:
    """The row's cells as far as the source says them (the caller marks the method)."""
    from resnorm_site.census import attention, probe

    classes = _classes(family)
    cls = _decoder_layer(classes)
    attrs = _constructors(cls)
    forward = _method(cls, "forward")
    params = [a.arg for a in forward.args.args if a.arg != "self"]
    reader = _Reader(attrs, params[0] if params else "hidden_states")
    out = reader.run(forward.body)
    steps = [(None, e[0], e) for e in layer._walk(out) if e[0] in ("norm", "sub")]
    places = layer.placements(steps, out) if out != UNKNOWN else {}
    norm_attrs = [a for a in attrs if _role(a, attrs) == "norm"]
    norms = [_norm_class(classes, attrs[a]) for a in norm_attrs]
    qk = set()
    for attr, kinds in attrs.items():
        inner = classes.get(next((k for k in kinds if k in classes), ""), None)
        if inner is None or _role(attr, attrs) != "sub":
            continue
        for name, made in _constructors(inner).items():
            if any("Norm" in m for m in made):
                for target in attention._target(name):
                    qk.add((target, "named"))
    return {
        **probe.config_values(family),
        "layers": [
            {
                "placement": places,
                "parallel": False,
                "norms": norms,
                "resolved": out != UNKNOWN,
                "scaled_sum": False,
            }
        ],
        "final_norm": _final_norm(classes),
        "topology": {"streams": 1, "depth_attention": False, "identity": None, "skip": ""},
        "attention": {"qk": sorted(qk), "gate": [], "sinks": [], "attn_tanh": None},
        "final_cap": None,
        "read_from": cls.name,
    }


def _final_norm(classes: dict) -> str:
    for name, cls in classes.items():
        if not name.endswith(("TextModel", "Model")) or "Vision" in name or "Audio" in name:
            continue
        attrs = _constructors(cls)
        if "layers" in attrs or "h" in attrs:
            names = ("norm", "final_layernorm", "ln_f", "norm_f", "final_norm", "final_layer_norm")
            return "yes" if any(a in attrs and _role(a, attrs) == "norm" for a in names) else "no"
    return "unknown"
