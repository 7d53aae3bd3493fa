"""Jupyter's stylesheets on notebook pages: moved out of the page, linked once each,
and pruned to the rules some notebook page of the site can use.

mkdocs-jupyter inlines JupyterLab's whole stylesheet (580 KB: toolbars, dialogs,
widgets) into every notebook page; a static notebook page uses a small part of it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re

CLASS_ATTR = re.compile(r'class="([^"]*)"')
CLASS_IN_SELECTOR = re.compile(r"\.(-?[A-Za-z_][\w-]*)")
INLINE_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)


@functools.lru_cache(maxsize=64)
def selector_classes(css: str) -> tuple[bool, tuple[frozenset[str], ...]]:
    """What prune_css decides on, read once per stylesheet: whether the sheet keeps
    something whatever the page uses (an at-rule, a selector without a class, stray
    text), and the classes each other selector needs (inside @media too)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    always, needs, i, n = False, [], 0, len(css)
    while i < n:
        open_at = css.find("{", i)
        if open_at < 0:
            always = always or bool(css[i:].strip())
            break
        depth, j = 1, open_at + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        head = css[i:open_at].strip()
        if head.startswith("@media"):
            inner_always, inner = selector_classes(css[open_at + 1 : j - 1])
            always, needs = always or inner_always, needs + list(inner)
        elif head.startswith("@"):
            always = True
        else:
            for sel in head.split(","):
                if sel.strip():
                    needs.append(frozenset(CLASS_IN_SELECTOR.findall(sel)))
        i = j
    return always, tuple(needs)


def keeps_anything(css: str, used: set[str]) -> bool:
    """Whether prune_css(css, used) keeps any rule, without building its output."""
    always, needs = selector_classes(css)
    return always or any(classes <= used for classes in needs)


def prune_css(css: str, used: set[str]) -> str:
    """Drop the rules whose every selector names a class that no page uses.

    JupyterLab's stylesheet styles its whole application (toolbars, dialogs,
    widgets); a static notebook page uses a small part of it. Rules without
    class selectors, and at-rules other than @media, are kept as they are.
    """
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    out, i, n = [], 0, len(css)
    while i < n:
        open_at = css.find("{", i)
        if open_at < 0:
            out.append(css[i:])
            break
        prelude = css[i:open_at]
        depth, j = 1, open_at + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        body = css[open_at + 1 : j - 1]
        head = prelude.strip()
        if head.startswith("@media"):
            inner = prune_css(body, used)
            if inner.strip():
                out.append(f"{prelude}{{{inner}}}")
        elif head.startswith("@"):
            out.append(css[i:j])
        else:
            selectors = [sel for sel in head.split(",") if sel.strip()]
            if any(set(CLASS_IN_SELECTOR.findall(sel)) <= used for sel in selectors):
                out.append(css[i:j])
        i = j
    return "".join(out)


def page_classes(html: str) -> set[str]:
    return {name for classes in CLASS_ATTR.findall(html) for name in classes.split()}


def python_list(text: str) -> list[str] | None:
    """``text`` read as the repr() of a list of strings, or None if it is not one."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def move_styles_out(html: str, href: str, sheets: dict[str, str]) -> str:
    """Every <style> leaves the page (HTML has no <style> in <body>): each sheet that
    something on the page uses is linked once, from ``href``/assets/jupyter/<digest>.css,
    and recorded in ``sheets`` (digest -> CSS) for the end of the build to write."""
    used = page_classes(html)
    linked: set[str] = set()

    def link(css: str) -> str:
        if not keeps_anything(css, used):
            return ""
        digest = hashlib.sha256(css.encode()).hexdigest()[:12]
        if digest in linked:
            return ""
        linked.add(digest)
        sheets[digest] = css
        return f'<link rel="stylesheet" href="{href}/assets/jupyter/{digest}.css">'

    def move_out(match: re.Match) -> str:
        css = match.group(1).strip()
        # mkdocs-jupyter appends one more <style> holding the repr() of the Python list
        # of Jupyter's stylesheets, which the page already has one <style> each for.
        if css.startswith("[") and css.endswith("]"):
            listed = python_list(css)
            if listed is not None:
                return "".join(link(sheet.strip()) for sheet in listed)
        return link(css)

    return INLINE_STYLE.sub(move_out, html)


def write_stylesheets(folder, sheets: dict[str, str], classes: set[str], memo: dict) -> None:
    """Write each sheet, pruned to ``classes`` (those of every notebook page of the
    site); an unchanged file is left alone. ``memo`` keeps pruning results by input:
    a serve rebuild usually has the same pages."""
    folder.mkdir(parents=True, exist_ok=True)
    for digest, css in sheets.items():
        key = (digest, frozenset(classes))
        if key not in memo:
            memo[key] = prune_css(css, classes)
        target = folder / f"{digest}.css"
        if not target.is_file() or target.read_text(encoding="utf-8") != memo[key]:
            target.write_text(memo[key], encoding="utf-8")
