"""Pages and notebooks: quoted numbers filled in, notebook pages trimmed.

- ``[[measured:NOTEBOOK:KEY]]`` on any page becomes the number that notebook's run
  published (a missing one fails the build);
- a notebook page loses the scripts mkdocs-jupyter adds from other hosts, gets its
  translated heading anchors, shows its inlined snippets and long cells collapsed, and
  links Jupyter's stylesheets (pruned, at the end of the build) instead of inlining them.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from resnorm_site import paths
from resnorm_site.labels import label, language
from resnorm_site.notebooks import css, measured, page_html
from resnorm_site.state import STATE


def on_page_markdown(markdown: str, page, config, files) -> str:
    lang = language(config.theme.get("language"))
    stems = {paths.notebook_stem(f.src_uri) for f in files if paths.is_notebook(f.src_uri)}
    running = stems if STATE.process.serving else set()
    try:
        return measured.quote_numbers(
            markdown,
            STATE.site.results,
            running,
            label(lang, "measuring"),
            page.file.src_uri,
            lang,
        )
    except measured.MissingNumber as err:
        raise PluginError(str(err)) from None


def on_page_content(html: str, page, config, files) -> str:
    if not paths.is_notebook(page.file.src_uri):
        return html
    html, ids = page_html.heading_ids(html)

    def fix(items) -> None:
        for item in items:
            item.title = page_html.without_anchor_attr(item.title)
            item.id = ids.get(item.id, item.id)
            fix(item.children)

    fix(page.toc or [])
    if page.title:
        page.title = page_html.without_anchor_attr(page.title)
    return html


@event_priority(-50)  # after mkdocs-jupyter's, which may add a script to every page
def on_post_page(html: str, page, config) -> str:
    html = page_html.without_remote_scripts(html)
    if not paths.is_notebook(page.file.src_uri):
        return html
    STATE.site.classes.update(css.page_classes(html))
    lang = language(config.theme.get("language"))
    html = page_html.without_tagged_cells(html)
    html = page_html.collapse_snippet_cells(html, label(lang, "imports"))
    html = page_html.collapse_tagged_cells(html, "collapse", label(lang, "collapsed"))
    html = page_html.collapse_tagged_cells(html, "collapse-output", label(lang, "collapsed_output"))
    href = "/".join([".."] * page.url.count("/")) or "."
    return css.move_styles_out(html, href, STATE.site.stylesheets)


def on_post_build(config) -> None:
    folder = Path(config["site_dir"]) / "assets" / "jupyter"
    site = STATE.site
    css.write_stylesheets(folder, site.stylesheets, site.classes, STATE.process.pruned)
