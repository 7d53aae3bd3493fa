"""Notebook pages: a jupytext ``.py`` source, executed once per change of its code,
rendered by mkdocs-jupyter from the executed copy. One module per step; the data flow
is drawn in hooks/README.md."""
