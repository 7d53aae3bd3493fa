"""A census of every decoder model family in the installed transformers, computed from
its code: which norm each uses, where, with which ε and weight convention, and what
carries its residual.

``census()`` returns it, from the build cache when a census of the same transformers
version by the same census code is there (``<cache>/census/<version>-<hash>.json``),
else computed in a process of its own (run.py) and cached. A process computes or reads
it once; both languages of a build share it. The modules, one job each:

- families.py: which folders are decoder families, and the class and config of each;
- shrink.py: a config at toy size;
- trace.py: one forward pass recorded;
- norms.py: what a norm module computes;
- layer.py: where a layer's norms sit, from what flows through it;
- attention.py: the norms, gate, sinks and caps inside attention; stack.py: the residual's
  carrier and the final norm;
- probe.py: one family's findings from a toy run; source.py: the same read with ``ast``;
- run.py: every family, in a process of its own;
- cells.py: a row's cells and the page's counts; words.py, page.py: the page.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from resnorm_site import paths
from resnorm_site.census.cells import cells
from resnorm_site.census.families import CensusError, version

HERE = Path(__file__).resolve().parent
TIMEOUT = 900  # seconds for a whole census; one takes about a minute on two cores
_MEMO: dict[tuple[str, str], dict] = {}


def code_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_file(transformers_version: str | None = None) -> Path:
    name = f"{transformers_version or version()}-{code_hash()}.json"
    return paths.cache_root() / "census" / name


def compute() -> dict:
    """The census computed now, in a fresh interpreter (torch and transformers load there)."""
    hooks = str(HERE.parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([hooks, os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "census.json"
        proc = subprocess.run(
            [sys.executable, "-m", "resnorm_site.census.run", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if proc.returncode != 0 or not out.is_file():
            raise CensusError(f"the census failed to run:\n{proc.stderr[-2000:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    for row in data["rows"]:
        row["cells"] = cells(row)
    data["code_hash"] = code_hash()
    return data


def census(recompute: bool = False) -> dict:
    """The census of the installed transformers: cached per version and census code."""
    key = (version(), code_hash())
    if key in _MEMO and not recompute:
        return _MEMO[key]
    path = cache_file(key[0])
    if path.is_file() and not recompute:
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        data = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        partial.replace(path)
        for older in path.parent.glob("*.json"):  # earlier census code or versions
            if older != path:
                older.unlink()
    _MEMO[key] = data
    return data


def row(data: dict, family: str) -> dict:
    """One family's row; a clear error for a name that is no decoder family."""
    for found in data["rows"]:
        if found["family"] == family:
            return found
    for rule, names in data["left_out"].items():
        if any(n.split(":")[0] == family for n in names):
            raise CensusError(f"{family!r} has no row: it is left out ({rule})")
    raise CensusError(f"no model family {family!r} in transformers {data['transformers']}")


__all__ = ["CensusError", "cache_file", "census", "code_hash", "compute", "row"]
