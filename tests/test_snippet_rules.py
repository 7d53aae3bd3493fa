"""House rules for snippets/: one test file per snippet; self-contained imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = sorted(p for p in (ROOT / "snippets").glob("*.py") if p.name != "__init__.py")
ALLOWED = set(sys.stdlib_module_names) | {"torch"}
ALLOWED_FOR_PLOTS = {"numpy", "matplotlib"}
ALLOWED_FOR_KERNELS = {"triton"}  # only where the snippet defines a @triton.jit kernel


def test_there_are_snippets():
    assert SNIPPETS


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.name)
def test_each_snippet_has_its_mirrored_test(snippet: Path):
    assert (ROOT / "tests" / "snippets" / f"test_{snippet.name}").is_file()


def test_no_orphan_snippet_tests():
    """Each test file mirrors a snippet: test_<snippet>.py, or test_<snippet>_<topic>.py where
    one snippet's tests are split by topic (the module's 2026 designs, each against its model)."""
    stems = {p.stem for p in SNIPPETS}
    orphans = [
        p.name
        for p in (ROOT / "tests" / "snippets").glob("test_*.py")
        if p.stem[5:] not in stems and not any(p.stem[5:].startswith(f"{s}_") for s in stems)
    ]
    assert not orphans


def _defines_a_triton_kernel(tree: ast.Module) -> bool:
    """A function decorated with triton.jit (or a name imported as it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                if ast.unparse(d) in ("triton.jit", "jit"):
                    return True
    return False


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.name)
def test_snippet_imports_only_stdlib_and_torch(snippet: Path):
    tree = ast.parse(snippet.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a snippet never imports another snippet"
            modules.add(node.module.split(".")[0])
    allowed = ALLOWED | (ALLOWED_FOR_PLOTS if "matplotlib" in modules else set())
    if _defines_a_triton_kernel(tree):
        allowed |= ALLOWED_FOR_KERNELS
    assert modules <= allowed, f"{snippet.name} imports {sorted(modules - allowed)}"
    assert "snippets" not in modules


def _one_edit_apart(a: str, b: str) -> bool:
    """Equal, or one letter added, dropped or changed (Levenshtein distance at most 1)."""
    if a == b:
        return True
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return len(long) - len(short) == 1 and any(
        long[:i] + long[i + 1 :] == short for i in range(len(long))
    )


def test_one_edit_apart_finds_the_old_module_name():
    """The check below would have refused the module's old name, one letter from Hugging
    Face's package."""
    assert _one_edit_apart("transformer", "transformers")
    assert _one_edit_apart("torch", "torch")
    assert not _one_edit_apart("resnorm", "transformers")
    assert not _one_edit_apart("rms_norm", "layer_norm")


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda p: p.name)
def test_snippet_name_cannot_be_mistaken_for_a_package(snippet: Path):
    """A reader puts a downloaded module beside their script and imports it next to torch and
    transformers: its name is neither a standard-library or installed package's import name
    nor one letter from one, so it cannot shadow one or be misread as one."""
    from importlib.metadata import packages_distributions

    names = set(sys.stdlib_module_names) | set(packages_distributions())
    close = sorted(n for n in names if _one_edit_apart(snippet.stem.lower(), n.lower()))
    assert not close, f"{snippet.name} is at most one letter from the package(s) {close}"
