"""The snippet modules a notebook imports, put into it as cells of their own.

Each ``from snippets.NAME import a, b`` becomes a comment and snippets/NAME.py a code
cell (tagged SNIPPET_TAG, collapsed), so the notebook runs with nothing of the
repository on its path, as a reader's download does.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

SNIPPET_TAG = "snippet-source"
DEMO_SECTION = re.compile(
    r"^# --8<-- \[start:demo\]\n.*?^# --8<-- \[end:demo\]\n?", re.DOTALL | re.MULTILINE
)
SECTION_MARKER = re.compile(r"^# --8<-- \[(?:start|end):[\w-]+\]\n", re.MULTILINE)


def snippet_cell_source(name: str, root: Path) -> str:
    """snippets/NAME.py as a notebook cell: its code without the demo and the markers."""
    path = root / "snippets" / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"imports snippets.{name}, but snippets/{name}.py does not exist")
    code = SECTION_MARKER.sub("", DEMO_SECTION.sub("", path.read_text(encoding="utf-8")))
    if "__main__" in code:
        raise ValueError(
            f"snippets/{name}.py has a __main__ block outside its demo section; a notebook "
            "runs as __main__, so the block would run in the notebook"
        )
    header = (
        f"# snippets/{name}.py, the handbook's code that this notebook imports, included by\n"
        "# the build so that the notebook runs on its own (see the handbook's snippets/).\n"
    )
    return header + code.strip("\n")


def _stored_names(tree: ast.AST) -> set[str]:
    """Names a module binds at its top level (not inside functions or classes)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)  # its body binds nothing at the top level
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                continue  # the same imports in two cells bind the same objects
            else:
                visit(child)

    visit(tree)
    return names


def inline_snippets(nb, root: Path) -> list[str]:
    """Put the snippet modules the notebook imports into it, ahead of its first code cell.

    Each ``from snippets.NAME import a, b`` becomes a comment; snippets/NAME.py becomes
    a code cell (tagged SNIPPET_TAG, collapsed in Jupyter). All of them share the
    notebook's one namespace, so a name bound by two of them, or by one of them and by
    the notebook, would let one silently replace the other: that is an error.
    Returns the snippet names, in the order they are first imported.
    """
    import nbformat

    modules: list[str] = []
    notebook_names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as err:
            raise ValueError(f"a code cell does not parse: {err}") from None
        imported_modules: list[str] = []  # this cell's, in the order they first appear
        lines = cell.source.split("\n")
        for node in reversed(tree.body):  # bottom up: a rewrite keeps the lines above in place
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] == "snippets" for a in node.names
            ):
                raise ValueError(
                    f"line {node.lineno} of a cell imports the snippets package itself; "
                    "write `from snippets.NAME import ...`, which the build can inline"
                )
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            parts = node.module.split(".")
            if parts[0] != "snippets":
                continue
            if len(parts) != 2 or any(a.name == "*" for a in node.names):
                raise ValueError(
                    f"`from {node.module} import ...` on line {node.lineno} of a cell: only "
                    "`from snippets.NAME import a, b` can be inlined"
                )
            if parts[1] not in imported_modules:
                imported_modules.insert(0, parts[1])
            elif imported_modules.index(parts[1]) > 0:  # keep the order of first use
                imported_modules.remove(parts[1])
                imported_modules.insert(0, parts[1])
            first, last = node.lineno - 1, node.end_lineno - 1
            lines[first : last + 1] = textwrap.wrap(
                ", ".join(a.name for a in node.names),
                width=88,
                initial_indent=f"# from snippets/{parts[1]}.py, in the first cells of this "
                "notebook: ",
                subsequent_indent="#   ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        cell.source = "\n".join(lines)
        notebook_names |= _stored_names(ast.parse(cell.source))
        modules += [m for m in imported_modules if m not in modules]

    cells, owner = [], {}
    for name in modules:
        source = snippet_cell_source(name, root)
        for bound in sorted(_stored_names(ast.parse(source))):
            if bound in owner:
                raise ValueError(
                    f"snippets/{owner[bound]}.py and snippets/{name}.py both define "
                    f"{bound!r}; in one notebook one would replace the other"
                )
            owner[bound] = name
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [SNIPPET_TAG]
        cell.metadata["jupyter"] = {"source_hidden": True}
        cell.metadata["resnorm"] = {"snippet": f"snippets/{name}.py"}
        cells.append(cell)
    clashes = sorted(set(owner) & notebook_names)
    if clashes:
        where = ", ".join(f"{n!r} (snippets/{owner[n]}.py)" for n in clashes)
        raise ValueError(f"the notebook rebinds names its snippets define: {where}")
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells[first_code:first_code] = cells
    return modules
