"""A family read from its modeling source (with ``ast``) when no toy instance of it runs.

The decoder layer class is the one named ``...DecoderLayer`` (a text one first); its
``__init__`` says which attributes are norms (their class's name holds ``Norm``) and which
are sublayers; its ``forward`` is read statement by statement into the same expressions
the toy run produces (layer.py), so the placement follows by the same rules. Each norm
class is built on its own and run where it can be (norms.py then reads its weight
convention and float32 arithmetic from what it computes); where it cannot, its source
says them (``1 + self.weight``, the casts around the weight in ``forward``).
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


def _norm_class(classes: dict, names: list[str], family=None, options=None) -> dict:
    """A norm class of the layer: run on its own where it builds (norms.py reads what it
    computes), else read from its name and source."""
    name = next((n for n in names if "Norm" in n), "")
    made = _constructors(classes[name]) if name in classes else {}
    inner = [a for a, cs in made.items() if any("Norm" in c and c != name for c in cs)]
    if inner:  # a container named for its norms (DBRX's NormAttentionNorm): its first norm
        return _norm_class(classes, made[inner[0]], family, _options(classes[name], inner[0]))
    ran = _run_norm(family, name, options or {}) if family is not None else None
    if ran is not None:
        return ran
    cls = classes.get(name)
    text = ast.unparse(cls) if cls is not None else ""
    kind = "rms" if "RMS" in name.upper() or ("variance" in text and "mean(" in text) else "layer"
    if "LayerNorm" in name and cls is None:
        kind = "layer"
    if cls is None:
        weight, upcast = "w", ""  # a class from elsewhere that did not run: not read
    else:
        squeezed = text.replace(" ", "")
        if "1.0+self.weight" in squeezed or "1+self.weight" in squeezed:
            weight = "1+w"
        elif "self.weight" in squeezed or "elementwise_affine" in squeezed:
            weight = "w"
        else:
            weight = "none"
        upcast = upcast_of(cls)
    return {"kind": kind, "weight": weight, "bias": False, "scale_first": False,
            "float32": upcast, "width": 0, "eps": None}  # fmt: skip


WIDTH = 16


def _run_norm(family, name: str, options: dict) -> dict | None:
    """The norm class built at width 16, with the constant options the layer passes it
    (``bias=False``), and run once: what norms.py reads from it, or None when it does not
    build or is no norm."""
    import importlib

    import torch

    from resnorm_site.census import norms
    from resnorm_site.census.trace import Recorder

    found = None
    folder = families.models_dir() / family.name
    for path in sorted(folder.glob("modeling_*.py")):
        try:
            module = importlib.import_module(f"transformers.models.{family.name}.{path.stem}")
        except Exception:
            continue
        found = getattr(module, name, None)
        if found is not None:
            break
    found = found or getattr(torch.nn, name, None)
    if found is None:
        return None
    for args, kwargs in (((WIDTH,), {}), ((), {"hidden_size": WIDTH}), ((), {"dim": WIDTH})):
        try:
            norm = found(*args, **kwargs, **options).float().eval()
            x = torch.randn(1, 7, WIDTH, generator=torch.Generator().manual_seed(0))
            with torch.no_grad(), Recorder(norm) as recorder:
                norm(x)
            call = recorder.calls[0]
            if norms.normalizes(call):
                return norms.describe(call).as_dict()
        except Exception:
            continue
    return None


def _options(cls: ast.ClassDef, attr: str) -> dict:
    """The constant keyword arguments of ``self.attr = Class(..., bias=False)``."""
    init = _method(cls, "__init__")
    for node in ast.walk(init) if init is not None else ():
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == attr for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            return {
                k.arg: k.value.value
                for k in node.value.keywords
                if k.arg in ("bias", "elementwise_affine", "with_scale")
                and isinstance(k.value, ast.Constant)
            }
    return {}


CASTS = ("to", "type_as", "type", "float", "half", "bfloat16")


def upcast_of(cls: ast.ClassDef) -> str:
    """The float32 cell of a norm class read from its ``forward``, where it cannot run: no
    cast to float32 ("bf16": the input's dtype throughout); the weight multiplied inside the
    cast back ("f32_w32") or onto its result ("f32_w16"); only the inverse RMS cast back
    ("rms_only"); no weight ("f32"); "" when the return statement says none of these."""
    forward = _method(cls, "forward")
    if forward is None:
        return ""
    text = ast.unparse(forward)
    if "float()" not in text and "float32" not in text:
        return "bf16"
    values: dict[str, ast.AST] = {}
    returned = None
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id] = node.value
        elif isinstance(node, ast.Return) and node.value is not None:
            returned = node.value
    if returned is None:
        return ""

    def weighted(node, depth: int = 0) -> bool:
        """Whether the expression reads ``self.weight``, through earlier assignments."""
        source = ast.unparse(node)
        if "self.weight" in source:
            return True
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return depth < 4 and any(weighted(values[n], depth + 1) for n in names if n in values)

    def cast(node) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CASTS
        )

    if isinstance(returned, ast.Name) and returned.id in values:
        returned = values[returned.id]
    if not weighted(returned):
        if isinstance(returned, ast.BinOp) and any(
            cast(side) and "rsqrt" in ast.unparse(side) for side in (returned.left, returned.right)
        ):
            return "rms_only"
        return "f32"
    if cast(returned):
        return "f32_w32" if weighted(returned.func.value) else ""
    if isinstance(returned, ast.BinOp) and isinstance(returned.op, ast.Mult):
        sides = (returned.left, returned.right)
        if any(cast(side) and not weighted(side) for side in sides):
            return "f32_w16"
    return ""


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
    norms = [_norm_class(classes, attrs[a], family, _options(cls, a)) for a in norm_attrs]
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
