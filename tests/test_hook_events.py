"""Every hook's event handler takes the arguments MkDocs passes it, by name: MkDocs calls
``on_page_markdown(markdown, page=..., config=..., files=...)``, so a handler whose
parameter is spelled otherwise fails every build at its first page."""

from __future__ import annotations

import importlib.util
import inspect

import pytest
from mkdocs.plugins import PluginCollection

from tests.conftest import ROOT

HOOKS = sorted((ROOT / "hooks").glob("*.py"))


def _handlers(path):
    spec = importlib.util.spec_from_file_location(f"hook_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, fn in vars(module).items():
        if name.startswith("on_") and callable(fn) and fn.__module__ == module.__name__:
            yield name, fn


@pytest.mark.parametrize("path", HOOKS, ids=lambda p: p.name)
def test_handlers_take_mkdocs_s_argument_names(path):
    for name, fn in _handlers(path):
        params = inspect.signature(getattr(PluginCollection, name)).parameters.values()
        # the event's item comes by position; the rest by name
        expected = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        got = list(inspect.signature(fn).parameters)
        positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        got = got[len(positional) - 1 :]  # less self
        assert got == expected, f"{path.name}: {name} takes {got} by name, MkDocs passes {expected}"
