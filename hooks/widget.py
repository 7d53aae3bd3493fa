"""Write the interactive vector widget's sublayer weights into the site at build time
(resnorm_site/widget.py computes them), whenever a page mounts the widget."""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.exceptions import PluginError

from resnorm_site import widget
from resnorm_site.state import STATE

log = logging.getLogger("mkdocs.hooks.widget")


def on_post_build(config) -> None:
    # read from the sources: a dirty rebuild renders only the pages that changed
    docs = Path(config["docs_dir"])
    if not any(widget.MOUNT in p.read_text(encoding="utf-8") for p in docs.rglob("*.md")):
        return
    path = Path(config["site_dir"]) / widget.OUTPUT
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        text = widget.weights_json(STATE.process.widget)
    except widget.WidgetFailed as err:
        raise PluginError(str(err)) from None
    path.write_text(text, encoding="utf-8")
    log.debug("wrote %s (%d bytes)", widget.OUTPUT, len(text))
