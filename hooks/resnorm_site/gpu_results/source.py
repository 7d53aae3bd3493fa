"""The results file and the code it measured: where the file is, what it must hold
(``read`` checks it), and the hash of the benchmark and kernel code (``code_hash``) that
tells whether the figures describe the code as it is now."""

from __future__ import annotations

import hashlib
import io
import json
import tokenize
from pathlib import Path

from resnorm_site.paths import ROOT

SCHEMA = 1
RESULTS_FILE = "docs/experiments/results/gpu_norm_speed.json"
# What the figures depend on: a change to any of these makes them stale. A file missing
# from the tree being hashed is hashed as absent.
CODE_FILES = (
    "scripts/bench_gpu.py",
    "snippets/norm_speed.py",
    "snippets/layer_norm.py",
    "snippets/rms_norm.py",
    "snippets/fused_add_rms_norm.py",
)
# The sections of the file a page can show: the list of rows each reads, and which
# operations (the rows' "norm") it shows. old_method: the compiled modules timed as the
# norm-speed page once timed them on a GPU, kept to show what that got wrong.
SECTIONS = {
    "norm_speed": ("rows", ("layer_norm", "rms_norm")),
    "fused_add_rms_norm": ("fused_rows", ("fused_add_rms_norm",)),
    "old_method": ("old_method_rows", ("layer_norm", "rms_norm")),
}
# The section's own kernel, the handbook's, that [[gpu-results:SECTION-sizes]] weighs
# against the others at every size ([[gpu-results:SECTION-sizes-IMPL]]: another one).
HAND = {"fused_add_rms_norm": "triton"}
ROW_KEYS = {"norm", "impl", "rows", "hidden", "dtype", "passes", "samples", "copy_samples"}
ROW_KEYS |= {"bytes", "copy_bytes", "compile"}
TOP_KEYS = {"schema", "date", "commit", "code_hash", "machine", "settings", "rows"}


class ResultsError(ValueError):
    """The results file is not one that scripts/bench_gpu.py writes."""


def code_text(source: bytes) -> bytes:
    """Python source without its comments and blank lines, each line's trailing spaces
    cut: a comment that is reworded does not change what was measured. Source that does
    not tokenize is taken as it is."""
    try:
        text = source.decode("utf-8")
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (UnicodeDecodeError, tokenize.TokenError, SyntaxError):
        return source
    lines = text.splitlines()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:  # a comment runs to the end of its line
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip()).encode("utf-8")


def code_hash(root: Path = ROOT, files=CODE_FILES) -> str:
    """sha256 over each code file's path and code (code_text: comments left out), in
    order ("absent" for a missing one)."""
    digest = hashlib.sha256()
    for name in files:
        path = Path(root) / name
        digest.update(name.encode() + b"\0")
        digest.update(code_text(path.read_bytes()) if path.exists() else b"absent")
        digest.update(b"\0")
    return digest.hexdigest()


def read(path: Path) -> dict | None:
    """The results file, checked; None where there is none."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ResultsError(f"{path}: expected schema {SCHEMA}, got {got!r}")
    missing = TOP_KEYS - set(data)
    if missing:
        raise ResultsError(f"{path}: missing {sorted(missing)}")
    for i, row in enumerate(r for key, _ in SECTIONS.values() for r in data.get(key, [])):
        lacking = ROW_KEYS - set(row)
        if lacking:
            raise ResultsError(f"{path}: row {i} lacks {sorted(lacking)}")
        for key in ("samples", "copy_samples"):
            values = row[key]
            if not values or not all(isinstance(v, (int, float)) and v > 0 for v in values):
                raise ResultsError(f"{path}: row {i} {key} must be positive seconds")
    return data
