"""The interactive vector widget's sublayer weights, as the JSON the browser reads.

The widget (``docs/javascripts/vector-widget.js``) computes in the reader's browser
with no server; the one thing it needs from Python is its sublayer F for each
dimension. ``widget_weights`` in ``snippets/vector_through_block.py`` draws them
(PyTorch's default initialization under a fixed seed), so the numbers the browser
shows come from the weights the tests use.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import platform
from importlib.metadata import version

from resnorm_site import paths

SNIPPET = paths.SNIPPETS / "vector_through_block.py"
OUTPUT = "assets/widget/vector_block.json"  # relative to the site's root
MOUNT = "rn-vector-widget"  # the class of the element the widget mounts on


class WidgetFailed(RuntimeError):
    pass


def weights_json(memo: dict[str, str]) -> str:
    """The JSON of widget_weights(), kept in the cache between builds (no torch import
    when warm) and recomputed only when the snippet or torch changes."""
    code = SNIPPET.read_bytes()
    runtime = f"python {platform.python_version()} torch {version('torch')}".encode()
    key = hashlib.sha256(code + b"\0" + runtime).hexdigest()[:20]
    folder = paths.widget_cache()
    stored = folder / f"{key}.json"
    if key not in memo and stored.is_file():
        memo[key] = stored.read_text(encoding="utf-8")
    if key not in memo:
        # Loaded from its file: the build must not depend on the repository being on sys.path.
        spec = importlib.util.spec_from_file_location("_resnorm_vector_through_block", SNIPPET)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            data = module.widget_weights()
        except Exception as err:  # the build must say why the widget has no weights
            raise WidgetFailed(f"{SNIPPET.name}: widget_weights() failed: {err!r}") from err
        memo.clear()
        memo[key] = json.dumps(data, separators=(",", ":"))
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        stored.write_text(memo[key], encoding="utf-8")
    return memo[key]
