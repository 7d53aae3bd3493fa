"""Notebook pages: each runs once per change of its code, and the page shows that run.

mkdocs-jupyter renders a notebook but would key its cache on the notebook's bytes and
run it in the repository. Here each notebook is executed by resnorm_site.notebooks
(snippets inlined, a fresh kernel in an empty directory, errors fail the build), kept
under a key of everything its outputs depend on, and the page is pointed at the
executed copy (a translation at the English run with its own prose). Under ``mkdocs
serve`` runs go on in the background and the page says so until they are done.
hooks/notebook_pages.py trims the rendered pages; hooks/README.md draws the data flow.
"""

from __future__ import annotations

import logging

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from resnorm_site import compat, paths
from resnorm_site.labels import language
from resnorm_site.notebooks import cache, pages
from resnorm_site.notebooks.run import RunFailed
from resnorm_site.state import STATE

# mkdocs-jupyter logs three INFO lines per notebook page (converting, its own cache,
# the copied .ipynb); the runs are reported here, so keep only its warnings.
for _name in ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def on_config(config):
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None:  # its render cache under the configured root, whatever the cwd
        jupyter.config["cache_dir"] = str(paths.jupyter_render_cache())
    return config


def on_serve(server, config, builder):
    stamp = paths.ready_stamp()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    server.watch(str(stamp.parent))  # a background run ends: the server rebuilds
    return server


def as_page(file, config):
    """mkdocs-static-i18n re-creates every file as a plain File, which drops mkdocs-jupyter's
    wrapper that makes a .py notebook a page: wrap it again, keeping the i18n destination."""
    compat.require("mkdocs-jupyter", "hooks/notebooks.py's NotebookFile re-wrap")
    from mkdocs_jupyter.plugin import NotebookFile

    page = NotebookFile(file, **config)
    page.dest_path, page.abs_dest_path, page.url = file.dest_path, file.abs_dest_path, file.url
    return page


@event_priority(-150)  # after mkdocs-jupyter and mkdocs-static-i18n have set up the files
def on_files(files, config):
    notebooks = []
    for file in [f for f in files if paths.is_notebook(f.src_uri)]:
        page = file if file.is_documentation_page() else as_page(file, config)
        if page is not file:
            files.remove(file)
            files.append(page)
        notebooks.append(page)
    try:
        pages.show_runs(notebooks, language(config.theme.get("language")))
    except (RunFailed, ValueError) as err:
        raise PluginError(str(err)) from None
    return files


@event_priority(-250)  # after mkdocs-static-i18n's nested builds: every language's pages
def on_post_build(config) -> None:
    if STATE.languages == [paths.DEFAULT_LANGUAGE]:
        cache.evict_older_runs(STATE.site.runs)
