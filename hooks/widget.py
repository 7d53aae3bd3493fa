"""Write the interactive vector widget's sublayer weights into the site at build time.

The widget (``docs/javascripts/vector-widget.js``) computes in the reader's browser
with no server; the one thing it needs from Python is its sublayer F for each
dimension. ``widget_weights`` in ``snippets/vector_through_block.py`` draws them
(PyTorch's default initialization under a fixed seed), and this hook writes them
to ``assets/widget/vector_block.json`` in the built site whenever a page mounts
the widget, so the numbers the browser shows come from the weights the tests use.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from pathlib import Path

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.widget")

ROOT = Path(__file__).resolve().parent.parent  # the repository
SNIPPET = ROOT / "snippets/vector_through_block.py"
OUTPUT = "assets/widget/vector_block.json"  # relative to the site's root
MOUNT = "rn-vector-widget"  # the class of the element the widget mounts on

_wanted = False  # some page of this build mounts the widget
_cache: dict[str, str] = {}  # hash of the snippet -> the JSON it exports


CACHE = ROOT / ".cache/widget"  # the JSON, kept between builds: no torch import when warm


def weights_json() -> str:
    """The JSON of widget_weights(), recomputed only when the snippet (or torch) changes."""
    code = SNIPPET.read_bytes()
    key = hashlib.sha256(code + (ROOT / "requirements.txt").read_bytes()).hexdigest()[:20]
    stored = CACHE / f"{key}.json"
    if key not in _cache and stored.is_file():
        _cache[key] = stored.read_text(encoding="utf-8")
    if key not in _cache:
        # Loaded from its file: the hook must not depend on the repository being on sys.path.
        spec = importlib.util.spec_from_file_location("_resnorm_vector_through_block", SNIPPET)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            data = module.widget_weights()
        except Exception as err:  # the build must say why the widget has no weights
            raise PluginError(f"{SNIPPET.name}: widget_weights() failed: {err!r}") from err
        _cache.clear()
        _cache[key] = json.dumps(data, separators=(",", ":"))
        CACHE.mkdir(parents=True, exist_ok=True)
        for old in CACHE.glob("*.json"):
            old.unlink()
        stored.write_text(_cache[key], encoding="utf-8")
    return _cache[key]


def on_files(files, config):
    """Some page mounts the widget: read from the sources, since a dirty rebuild
    (make serve) renders only the pages that changed, and the weights may have."""
    global _wanted
    _wanted = any(
        MOUNT in Path(f.abs_src_path).read_text(encoding="utf-8")
        for f in files.documentation_pages()
        if f.src_uri.endswith(".md")
    )
    return files


def on_post_build(config) -> None:
    if not _wanted:
        return
    path = Path(config["site_dir"]) / OUTPUT
    path.parent.mkdir(parents=True, exist_ok=True)
    text = weights_json()
    path.write_text(text, encoding="utf-8")
    log.debug("wrote %s (%d bytes)", OUTPUT, len(text))
