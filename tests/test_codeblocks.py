"""Every code block of every page runs, as the reader copies it.

Test ids are ``docs/page.md:LINE`` (the line of the opening fence).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import codeblocks
from tests.codeblocks import PYTHON, ROOT, SHELL, TRANSCRIPT

BLOCKS = codeblocks.all_blocks()
RUNNABLE = [b for b in BLOCKS if b.runnable]
_COMMAND_RESULTS: dict[tuple[str, str], subprocess.CompletedProcess] = {}


def _normalize(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def _chain_key(group: list[codeblocks.Block]) -> tuple[str, ...]:
    return tuple(codeblocks.expand(b.source) for b in group)


@pytest.fixture(scope="module")
def chains(tmp_path_factory) -> dict[tuple[str, ...], codeblocks.Result]:
    """Every Python chain, run once each, as many at a time as there are cores: each in a
    fresh interpreter and a scratch directory of its own. Results are keyed by the code
    that ran: a Chinese page's blocks are its English twin's, byte for byte
    (tests/test_i18n.py checks it), so each chain runs once for both languages.

    A chain that passed is not run again while its code, the runner and the installed
    packages stay the same (``codeblocks.KeptResults``); a clean clone runs them all."""
    groups = {}
    for block in RUNNABLE:
        if block.lang not in SHELL | TRANSCRIPT and not block.skip:
            group = codeblocks.chain_group(block, BLOCKS)
            groups.setdefault(_chain_key(group), group)
    kept = codeblocks.KeptResults()
    results = {key: kept.get(key) for key in groups}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {
            key: pool.submit(codeblocks.run_python, group, tmp_path_factory.mktemp("chain"))
            for key, group in groups.items()
            if results[key] is None
        }
        for key, future in futures.items():
            results[key] = future.result()
            kept.put(key, results[key])
    kept.forget_unused()
    return results


@pytest.mark.reader
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_code_block(block: codeblocks.Block, tmp_path: Path, chains):
    if block.excerpt:
        _check_excerpt(block)
        return
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    if block.lang in SHELL:
        code = codeblocks.expand(block.source)
        if ("bash", code) not in _COMMAND_RESULTS:
            _COMMAND_RESULTS["bash", code] = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
            )
        proc = _COMMAND_RESULTS["bash", code]
        assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"
        output = proc.stdout
    elif block.lang in TRANSCRIPT:
        code = codeblocks.expand(block.source)
        if ("doctest", code) not in _COMMAND_RESULTS:
            _COMMAND_RESULTS["doctest", code] = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    codeblocks.DOCTEST_RUNNER,
                    block.id,
                    block.page,
                    str(block.lineno),
                ],
                input=code,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
            )
        proc = _COMMAND_RESULTS["doctest", code]
        assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"
        output = ""
    else:
        # A chain runs once, in one interpreter, for all its blocks: a block's
        # output is captured when it runs, so the blocks after it change nothing.
        group = codeblocks.chain_group(block, BLOCKS)
        result = chains[_chain_key(group)]
        index = group.index(block)
        assert len(result.outputs) > index and result.failed != block.id, (
            f"{result.failed} failed"
            + (" (run after the blocks it continues)" if block.cont else " (run on its own)")
            + f":\n{result.stderr}"
        )
        output = result.outputs[index]
    if block.expected_output is not None:
        assert _normalize(output) == _normalize(block.expected_output), (
            f"{block.id}: the output shown on the page differs from what the block prints"
        )


def _check_excerpt(block: codeblocks.Block) -> None:
    """An excerpt is lines of the module that runs, found by name, never typed in."""
    assert not block.source.strip(), f"{block.id}: an excerpt's fence is empty; the build fills it"
    first, last, code = codeblocks.excerpt_lines(block)
    module = (codeblocks.SNIPPETS / block.excerpt[0]).read_text(encoding="utf-8")
    assert code.splitlines() == module.splitlines()[first - 1 : last]
    assert last - first + 1 <= OPEN_LINES, (
        f"{block.id}: {block.excerpt[1]} is {last - first + 1} lines; show a smaller part"
    )


# The most lines a code block may show open on arrival (a page shows what it explains).
OPEN_LINES = 40
DOWNLOAD = re.compile(r"\]\((?:\.\./)*downloads/(?P<name>\w+)\.py\)")


@pytest.mark.parametrize("page", codeblocks.pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_page_links_the_modules_its_code_needs(page: Path):
    """A block that imports a handbook module, or an excerpt of one, works for a reader
    who downloaded it: the page links the download (the site serves snippets/NAME.py at
    downloads/NAME.py), and says to save it next to the script."""
    needed = set()
    for block in codeblocks.parse(page):
        if block.excerpt:
            needed.add(Path(block.excerpt[0]).stem)
        elif block.lang in PYTHON and not block.is_output:
            needed |= codeblocks.imported_modules(codeblocks.expand(block.source))
    linked = {m.group("name") for m in DOWNLOAD.finditer(page.read_text(encoding="utf-8"))}
    assert needed <= linked, f"link the download of {sorted(needed - linked)} on this page"
    assert linked <= codeblocks.handbook_modules(), "a download link names no module"


def test_a_block_runs_beside_the_module_it_imports(tmp_path: Path):
    """The runner puts the imported module beside the block, and nothing else."""
    code = "import os\nfrom layer_norm import LayerNorm\nprint(sorted(os.listdir('.')))\n"
    block = codeblocks.Block("docs/x.md", 1, "python", "python", code)
    result = codeblocks.run_python([block], cwd=tmp_path)
    assert result.failed is None, result.stderr
    assert result.outputs == ["['layer_norm.py']\n"]
    assert codeblocks.imported_modules("import resnorm as t\nimport torch\n") == {"resnorm"}


def test_a_kept_result_follows_the_module_it_imports(tmp_path: Path, monkeypatch):
    """Editing a module runs the chains that import it again."""
    monkeypatch.setenv("RESNORM_CACHE_DIR", str(tmp_path))
    kept = codeblocks.KeptResults()
    codes = ("from layer_norm import LayerNorm\n",)
    plain = ("print(1)\n",)
    module = codeblocks.SNIPPETS / "layer_norm.py"
    before = (kept.path(codes), kept.path(plain))
    monkeypatch.setattr(Path, "read_bytes", lambda self: b"changed" if self == module else b"")
    assert kept.path(codes) != before[0] and kept.path(plain) == before[1]


def test_an_excerpt_is_filled_by_name(tmp_path: Path):
    """The build and the tests fill an excerpt with the named lines; a wrong name or a
    fence with typed lines is an error, not a silent copy."""
    from resnorm_site import excerpts

    page = '```python excerpt="layer_norm.py:LayerNorm.forward"\n```\n'
    first, last, code = excerpts.locate("layer_norm.py", "LayerNorm.forward")
    filled = excerpts.expand(page)
    assert f'title="layer_norm.py, lines {first}–{last}"' in filled
    assert code in filled and code.lstrip().startswith("def forward")
    assert f"第 {first}–{last} 行" in excerpts.expand(page, "zh")
    with pytest.raises(excerpts.ExcerptError, match="has no 'backward'"):
        excerpts.expand(page.replace("forward", "backward"))
    with pytest.raises(excerpts.ExcerptError, match="must be empty"):
        excerpts.expand(page.replace("\n```", "\nx = 1\n```"))
    block = codeblocks.parse(_write(tmp_path / "e.md", page))[0]
    assert block.excerpt == ("layer_norm.py", "LayerNorm.forward") and block.skip
    # a block continued across an excerpt continues the code above it, not the excerpt
    run = "```python\nx = 1\n```\n\n"
    cont = "<!--pytest-codeblocks:cont-->\n\n```python\nprint(x)\n```\n"
    first, _, after = codeblocks.parse(_write(tmp_path / "c.md", run + page + "\n" + cont))
    assert after.previous is first


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_blocks_are_found():
    """The collector sees the blocks that the pages hold (guards against an empty run)."""
    assert len(RUNNABLE) >= 5
    assert {b.page for b in RUNNABLE} >= {"docs/index.md", "docs/foundations/layer-norm.md"}


def test_every_fence_names_its_language():
    """Highlighting and the copy button need the language; outputs are fenced as text."""
    unnamed = [b.id for b in BLOCKS if not b.lang]
    assert not unnamed, f"code blocks without a language: {unnamed}"
    wrong = [b.id for b in BLOCKS if b.is_output and b.lang != "text"]
    assert not wrong, f"outputs must be fenced as text, never as code: {wrong}"


def test_no_block_left_uncollected(built_site: Path):
    """Count the Python blocks of each built page and compare with the collected ones.

    pymdownx.highlight marks each highlighted block with its language class,
    whatever spelling the fence used, so this catches a block that the
    collector misses (an unusual info string, a fence inside a tab, ...).
    """
    runnable_langs = PYTHON | TRANSCRIPT | SHELL
    html_counts = Counter()
    for page in codeblocks.pages():
        html = built_site / codeblocks.built_path(page)
        text = html.read_text(encoding="utf-8")
        for lang in re.findall(r'<div class="language-([\w+-]+) highlight"', text):
            if lang in runnable_langs:
                html_counts[page.relative_to(codeblocks.ROOT).as_posix()] += 1
    collected = Counter(b.page for b in RUNNABLE)
    assert html_counts == collected


def test_markers_are_checked(tmp_path: Path):
    """A skip without a reason, or a stray marker, is an error, not a silent skip."""
    page = tmp_path / "markers.md"
    cases = {
        "<!--pytest.mark.skip-->\n\n```python\nprint(1)\n```\n": "must name its reason",
        "<!--pytest-codeblocks:cont-->\n\n```python\nprint(1)\n```\n": "needs an executable block",
        "<!--pytest-codeblocks:bogus-->\n\n```python\nprint(1)\n```\n": "unknown marker",
        "```python\nprint(1)\n```\n<!--pytest-codeblocks:cont-->\nText.\n": "not directly above",
    }
    for text, message in cases.items():
        page.write_text(text, encoding="utf-8")
        with pytest.raises(codeblocks.MarkerError, match=message):
            codeblocks.parse(page)


def test_parser_sees_every_spelling(tmp_path: Path):
    page = tmp_path / "spellings.md"
    page.write_text(
        "```py\na = 1\n```\n\n"
        '```python title="x.py"\nb = 2\n```\n\n'
        '=== "Tab"\n\n    ```python3\n    c = 3\n\n    print(c)\n    ```\n\n'
        "```{.python .annotate}\nd = 4\n```\n\n"
        "~~~python\ne = 5\n```\n~~~\n",
        encoding="utf-8",
    )
    blocks = codeblocks.parse(page)
    assert [(b.lang, b.source.strip()) for b in blocks] == [
        ("py", "a = 1"),
        ("python", "b = 2"),
        ("python3", "c = 3\n\nprint(c)"),  # the blank line of the tab's block is kept
        ("python", "d = 4"),
        ("python", "e = 5\n```"),  # a ``` line does not close a ~~~ fence
    ]
    assert all(b.runnable for b in blocks)


def test_each_block_of_a_chain_keeps_its_output(tmp_path: Path):
    """A continued block is a test of its own, with the output shown below it."""
    page = tmp_path / "chain.md"
    page.write_text(
        "```python\nx = 1\nprint(x)\n```\n\n"
        "<!--pytest-codeblocks:expected-output-->\n\n```text\n1\n```\n\n"
        "<!--pytest-codeblocks:cont-->\n\n```python\nprint(x + 1)\n```\n\n"
        "<!--pytest-codeblocks:expected-output-->\n\n```text\n2\n```\n",
        encoding="utf-8",
    )
    blocks = codeblocks.parse(page)
    first, first_output, second, second_output = blocks
    assert [b.lineno for b in blocks] == [1, 8, 14, 20]
    assert second.cont and second.previous is first
    assert (first.expected_output, second.expected_output) == ("1\n", "2\n")
    assert first_output.is_output and second_output.is_output
    result = codeblocks.run_python(codeblocks.chain_group(second, blocks), cwd=tmp_path)
    assert result.failed is None and result.outputs == ["1\n", "2\n"]


def test_includes_are_expanded_like_the_build():
    code = codeblocks.expand('--8<-- "snippets/layer_norm.py"\n')
    assert "class LayerNorm(nn.Module):" in code
    assert "--8<--" not in code  # section markers are stripped from whole-file includes


def test_a_failing_block_fails(tmp_path: Path):
    block = codeblocks.Block("docs/x.md", 1, "python", "python", "raise SystemExit(3)\n")
    result = codeblocks.run_python([block], cwd=tmp_path)
    assert result.returncode != 0 and result.failed == "docs/x.md:1"


def test_blocks_run_as_main(tmp_path: Path):
    block = codeblocks.Block("docs/x.md", 1, "python", "python", "print(__name__)\n")
    result = codeblocks.run_python([block], cwd=tmp_path)
    assert result.outputs == ["__main__\n"]


def test_only_chains_that_passed_are_kept(tmp_path: Path, monkeypatch):
    """A kept result stands for a run only while the code is the same; a failure is never
    kept, so a broken block fails on every run until it is fixed."""
    monkeypatch.setenv("RESNORM_CACHE_DIR", str(tmp_path))
    kept = codeblocks.KeptResults()
    passed = codeblocks.Result(["a\n", "b\n"], None, "", 0)
    failed = codeblocks.Result(["a\n"], "page.md:9", "Traceback ...", 1)
    kept.put(("print('a')", "print('b')"), passed)
    kept.put(("print('a')", "1/0"), failed)
    assert kept.get(("print('a')", "print('b')")).outputs == ["a\n", "b\n"]
    assert kept.get(("print('a')", "1/0")) is None
    assert kept.get(("print('a')", "print('c')")) is None
    assert len(list((tmp_path / "codeblocks").glob("*.json"))) == 1
    later = codeblocks.KeptResults()  # the next run reads nothing: the entry goes
    later.forget_unused()
    assert not list((tmp_path / "codeblocks").glob("*.json"))


def test_a_kept_result_names_the_packages_and_devices_it_ran_with():
    from importlib.metadata import version

    from resnorm_site.notebooks.cache import runtime_versions

    context = codeblocks._run_context().split("\0")
    assert codeblocks.RUNNER in context and runtime_versions() in context
    assert f"torch=={version('torch')}" in runtime_versions()


def test_an_output_label_in_an_answer_is_a_paragraph_of_its_own():
    """Inside a folded answer (an indented block) the label is a paragraph with its class,
    not raw HTML nested in another paragraph (invalid HTML)."""
    import importlib.util
    import types

    import markdown

    spec = importlib.util.spec_from_file_location(
        "labels_hook", ROOT / "hooks" / "codeblock_labels.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    config = types.SimpleNamespace(theme={"language": "en"})
    page = (
        '??? success "Answer"\n    Text.\n\n    ```python\n    print(1)\n    ```\n\n'
        "    <!--pytest-codeblocks:expected-output-->\n\n    ```text\n    1\n    ```\n"
    )
    html = markdown.markdown(
        hook.on_page_markdown(page, None, config, None),
        extensions=["admonition", "attr_list", "pymdownx.details", "pymdownx.superfences"],
    )
    assert '<p class="rn-output">Output</p>' in html
    assert "<p><p" not in html
    top = hook.on_page_markdown(page.replace("\n    ", "\n").split("\n", 1)[1], None, config, None)
    assert top.startswith("Text.") and '<p class="rn-output">Output</p>' in top
