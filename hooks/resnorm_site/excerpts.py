"""Excerpts of the handbook's modules, shown on pages line for line.

A page shows a few lines of a module with an empty fence that names them:

    ```python excerpt="resnorm.py:Residual.forward"
    ```

The build (``hooks/excerpts.py``) and the tests (``tests/codeblocks.py``) fill it with
the exact lines of that class, function, method or module-level name in
``snippets/resnorm.py``, decorators included, titled with the file and the lines'
numbers (in the title only: numbered lines would add a link per line that the page's
validity and contrast checks refuse). The page therefore cannot drift from the module
that runs: the lines are read from it at every build, found by name, not by number.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from resnorm_site.paths import SNIPPETS

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?"
    r"\bexcerpt=\"(?P<file>[\w.]+\.py):(?P<name>[\w.]+)\"[^`\n]*?)[ \t]*\n"
    r"(?P<body>(?:(?!^[ \t]*(?P=fence)[ \t]*$).*\n)*?)"
    r"^[ \t]*(?P=fence)[ \t]*$",
    re.M,
)
EXCERPT_ATTR = re.compile(r"\bexcerpt=\"(?P<file>[\w.]+\.py):(?P<name>[\w.]+)\"")

TITLE = {"en": "{file}, lines {first}–{last}", "zh": "{file}，第 {first}–{last} 行"}


class ExcerptError(ValueError):
    pass


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


@cache
def _parsed(path: Path, stamp: tuple[int, int]) -> tuple[list[str], ast.Module]:
    text = path.read_text(encoding="utf-8")
    return text.splitlines(), ast.parse(text)


def _named(body: list[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            return node
    return None


def locate(file: str, name: str, folder: Path = SNIPPETS) -> tuple[int, int, str]:
    """First and last line (1-based) of ``name`` (``Class.method`` for a method) in
    ``folder/file``, and those lines as they stand in the file."""
    path = folder / file
    if not path.is_file():
        raise ExcerptError(f"excerpt of {file}: no such module in {folder.name}/")
    lines, tree = _parsed(path, _stat(path))
    node: ast.AST = tree
    for part in name.split("."):
        found = _named(getattr(node, "body", []), part)
        if found is None:
            raise ExcerptError(f"excerpt {file}:{name}: {file} has no {part!r} there")
        node = found
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    last = node.end_lineno
    return first, last, "\n".join(lines[first - 1 : last]) + "\n"


def expand(markdown: str, lang: str = "en", folder: Path = SNIPPETS) -> str:
    """The page with every excerpt fence filled with its lines, titled with their numbers."""

    def fill(match: re.Match) -> str:
        if match.group("body").strip():
            raise ExcerptError(
                f"excerpt {match.group('file')}:{match.group('name')}: the fence must be "
                "empty (the build fills it from the module)"
            )
        indent, fence, file = match.group("indent", "fence", "file")
        first, last, code = locate(file, match.group("name"), folder)
        title = TITLE.get(lang, TITLE["en"]).format(file=file, first=first, last=last)
        info = EXCERPT_ATTR.sub("", match.group("info")).strip()
        head = f'{indent}{fence}{info} title="{title}"'
        body = "".join(f"{indent}{line}\n" if line else "\n" for line in code.splitlines())
        return f"{head}\n{body}{indent}{fence}"

    return FENCE.sub(fill, markdown)
