"""Find the code blocks of the handbook's pages and run them as a reader would.

A page's fenced blocks are read from its Markdown source. Their
``--8<--`` includes are expanded by ``pymdownx.snippets`` with the very options
``mkdocs.yml`` gives it, so the code that runs is the code the page shows.

Markers (HTML comments on the line(s) just above a fence; the site shows a
visible label for the first two, see ``hooks/codeblock_labels.py``):

- ``<!--pytest-codeblocks:cont-->``: the block continues the executable block
  above it; both run, in order, in one interpreter.
- ``<!--pytest-codeblocks:expected-output-->``: the block (usually ``text``) is
  what the executable block above prints; the test compares them.
- ``<!--pytest.mark.skip(reason="...")-->``: the block is not run, for the
  stated reason (a reason is required).

Two kinds of block lean on the handbook's modules (``snippets/NAME.py``, which the site
serves at ``downloads/NAME.py``):

- a block that imports one (``from resnorm import Block``) runs with that file
  copied beside it, as a reader who saved the download next to the script runs it;
- an excerpt, an empty fence ```` ```python excerpt="resnorm.py:Residual.forward" ````,
  shows the lines of that name in the module (``resnorm_site.excerpts`` fills it, for
  the build and here alike). It is not a program: its test checks that it is the
  module's lines.

The markers are spelled as in pytest-codeblocks, but that package cannot read
these pages, so they are parsed here. Its extractor merges a continued block
into the block above and gives the merged block one output, while here every
block of a chain keeps its own id and output (it stops with an error on most
pages). It also misses ``~~~`` fences, drops blank lines in indented fences
(content tabs, admonitions) and carries a marker over text to a later block.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
if str(ROOT / "hooks") not in sys.path:  # run as a script: import resnorm_site as the build does
    sys.path.append(str(ROOT / "hooks"))

from resnorm_site import excerpts  # noqa: E402
from resnorm_site.paths import SNIPPETS  # noqa: E402

# Info-string languages that are Python code to run.
PYTHON = {"python", "py", "python3", "py3"}
# Interactive transcripts: not a program; a page that uses one must say why.
TRANSCRIPT = {"pycon"}
SHELL = {"bash", "sh", "shell", "console"}

FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
MARKER = re.compile(r"^[ \t]*<!--\s*(?P<body>pytest[-\w.:]*(?:\((?P<args>.*)\))?)\s*-->[ \t]*$")
SKIP_REASON = re.compile(r"""^reason\s*=\s*(?P<q>["'])(?P<reason>.+)(?P=q)$""")


@dataclasses.dataclass
class Block:
    page: str  # "docs/…/page.md"
    lineno: int  # 1-based line of the opening fence
    lang: str  # first word of the info string, lower case ("" if none)
    info: str
    source: str  # the block as written in the Markdown
    cont: bool = False
    skip: str | None = None  # reason
    expected_output: str | None = None  # what this block must print
    is_output: bool = False  # this block shows the output of the block above
    previous: Block | None = None  # the block this one continues
    excerpt: tuple[str, str] | None = None  # (module file, name) it shows lines of

    @property
    def id(self) -> str:
        return f"{self.page}:{self.lineno}"

    @property
    def runnable(self) -> bool:
        return self.lang in PYTHON | SHELL | TRANSCRIPT and not self.is_output


class MarkerError(ValueError):
    pass


def language(info: str) -> str:
    """``python title="x.py"`` -> ``python``; ``{.py .annotate}`` -> ``py``."""
    word = info.strip().lstrip("{").split()[0] if info.strip() else ""
    return word.lstrip(".").rstrip("}").lower()


def parse(path: Path) -> list[Block]:
    """All fenced blocks of one Markdown page, with their markers applied."""
    page = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: list[tuple[int, str, str | None]] = []  # markers seen above the next fence
    last_runnable: Block | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line)
        if marker:
            pending.append((i + 1, marker.group("body"), marker.group("args")))
            i += 1
            continue
        opening = FENCE_OPEN.match(line)
        if not opening:
            if line.strip():
                if pending:
                    where = ", ".join(f"{page}:{n}" for n, _, _ in pending)
                    raise MarkerError(f"marker at {where} is not directly above a code block")
                pending = []
            i += 1
            continue
        indent, fence, info = opening.group("indent", "fence", "info")
        body: list[str] = []
        j = i + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while j < len(lines) and not closing.match(lines[j]):
            body.append(lines[j])
            j += 1
        if j == len(lines):
            raise MarkerError(f"{page}:{i + 1}: code block is never closed")
        # strip the fence's own indentation (content tabs, admonitions), nothing more
        source = "\n".join(b[len(indent) :] if b.startswith(indent) else b.lstrip() for b in body)
        block = Block(page, i + 1, language(info), info, source + "\n")
        named = excerpts.EXCERPT_ATTR.search(info)
        if named:
            block.excerpt = named.group("file", "name")
            block.skip = f"an excerpt: lines of {block.excerpt[0]}, which the import blocks run"
        for n, body_, args in pending:
            _apply(block, body_, args, f"{page}:{n}", last_runnable, blocks)
        pending = []
        if block.runnable and not block.excerpt:  # an excerpt shows lines, it runs nothing
            last_runnable = block
        blocks.append(block)
        i = j + 1
    if pending:
        raise MarkerError(f"{page}: marker at the end of the page is above no code block")
    return blocks


def _apply(block, body, args, where, last_runnable, blocks) -> None:
    if body == "pytest-codeblocks:cont":
        if last_runnable is None:
            raise MarkerError(f"{where}: a continuation needs an executable block above it")
        block.cont, block.previous = True, last_runnable
    elif body == "pytest-codeblocks:expected-output":
        if last_runnable is None:
            raise MarkerError(f"{where}: expected output needs an executable block above it")
        if last_runnable.expected_output is not None:
            raise MarkerError(f"{where}: {last_runnable.id} already has an expected output")
        last_runnable.expected_output = block.source
        block.is_output = True
    elif body.startswith("pytest.mark.skip"):
        reason = SKIP_REASON.match((args or "").strip())
        if not reason:
            raise MarkerError(
                f'{where}: a skip must name its reason: pytest.mark.skip(reason="...")'
            )
        block.skip = reason.group("reason")
    else:
        raise MarkerError(f"{where}: unknown marker <!--{body}-->")


def pages() -> list[Path]:
    """Every Markdown page, English (``page.md``) and Chinese (``page.zh.md``)."""
    return sorted(DOCS.rglob("*.md"))


LOCALE_SUFFIX = re.compile(r"\.(zh)$")


def built_path(page: Path) -> Path:
    """docs/x/page.md -> x/page/index.html; docs/x/page.zh.md -> zh/x/page/index.html."""
    rel = page.relative_to(DOCS)
    stem = LOCALE_SUFFIX.sub("", rel.stem)
    lang = LOCALE_SUFFIX.search(rel.stem)
    built = rel.parent if stem == "index" else rel.parent / stem
    return (Path(lang.group(1)) / built if lang else built) / "index.html"


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in parse(page)]


@cache
def _snippet_preprocessor():
    """The pymdownx.snippets preprocessor, configured exactly as mkdocs.yml does."""
    import markdown
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    options = dict(config["mdx_configs"].get("pymdownx.snippets", {}))
    # mkdocs resolves base_path against the directory it runs in: the repository root.
    base = options.get("base_path", ["."])
    base = [base] if isinstance(base, str) else base
    options["base_path"] = [str((ROOT / p).resolve()) for p in base]
    options["auto_append"] = []  # appended files belong to pages, not to code blocks
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"], extension_configs={"pymdownx.snippets": options}
    )
    return md.preprocessors["snippet"]


def expand(source: str) -> str:
    """The block with its ``--8<--`` includes replaced, as the built page shows it."""
    lines = _snippet_preprocessor().run(source.splitlines())
    return "\n".join(lines) + "\n"


def excerpt_lines(block: Block) -> tuple[int, int, str]:
    """An excerpt's first and last line in its module, and the lines themselves."""
    return excerpts.locate(*block.excerpt)


@cache
def handbook_modules() -> frozenset[str]:
    """The names a block imports the handbook's modules by: ``resnorm`` for
    snippets/resnorm.py."""
    return frozenset(p.stem for p in SNIPPETS.glob("*.py"))


def imported_modules(code: str) -> set[str]:
    """The handbook modules that ``code`` imports (``import x``, ``from x import y``)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names & handbook_modules()


def module_files(codes) -> list[Path]:
    """The module files a chain of code needs beside it."""
    names = set().union(*(imported_modules(c) for c in codes)) if codes else set()
    return [SNIPPETS / f"{name}.py" for name in sorted(names)]


def chain(block: Block) -> list[Block]:
    """The block and every block it continues, first one first."""
    out = [block]
    while out[0].previous is not None:
        out.insert(0, out[0].previous)
    return out


def chain_group(block: Block, blocks: list[Block]) -> list[Block]:
    """The whole chain ``block`` belongs to: its first block and every block that
    continues it, in page order (continuations are linear: each continues the
    executable block just above it)."""
    root = chain(block)[0]
    group = [root]
    for other in blocks:
        if other.previous is group[-1]:
            group.append(other)
    return group


RUNNER = r"""
import contextlib, io, json, sys, traceback
blocks = json.loads(sys.stdin.read())
outputs = []
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
for name, code in blocks:
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, name, "exec"), namespace)
    except BaseException:
        outputs.append(buffer.getvalue())
        sys.__stderr__.write(f"\n--- {name} failed ---\n" + traceback.format_exc())
        print(json.dumps({"outputs": outputs, "failed": name}))
        sys.exit(1)
    outputs.append(buffer.getvalue())
print(json.dumps({"outputs": outputs, "failed": None}))
"""


DOCTEST_RUNNER = r"""
import doctest, sys
name, page, lineno = sys.argv[1], sys.argv[2], int(sys.argv[3])
globs = {"__name__": "__main__"}
test = doctest.DocTestParser().get_doctest(sys.stdin.read(), globs, name, page, lineno)
runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
runner.run(test)
sys.exit(1 if runner.failures else 0)
"""


@dataclasses.dataclass
class Result:
    outputs: list[str]
    failed: str | None
    stderr: str
    returncode: int


class KeptResults:
    """Results of chains that passed, kept between test runs in the cache
    (resnorm_site.paths, ``codeblocks/``) under a hash of everything a run depends on: the
    code of its blocks, the runner, the Python and package versions, and the devices torch
    sees (a CUDA machine runs the blocks again). A chain that failed is never kept, so it
    runs, and fails, again. Delete the folder to run every chain."""

    def __init__(self):
        from resnorm_site import paths

        self.folder = paths.cache_root() / "codeblocks"
        self.read: set[str] = set()
        self.context = _run_context()

    def path(self, codes: tuple[str, ...]) -> Path:
        h = hashlib.sha256(self.context.encode())
        for code in codes:
            h.update(b"\0" + code.encode())
        for path in module_files(codes):  # a changed module runs its chains again
            h.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
        return self.folder / f"{h.hexdigest()[:32]}.json"

    def get(self, codes: tuple[str, ...]) -> Result | None:
        path = self.path(codes)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        self.read.add(path.name)
        return Result(data["outputs"], None, "", 0)

    def put(self, codes: tuple[str, ...], result: Result) -> None:
        if result.failed or result.returncode != 0 or len(result.outputs) != len(codes):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.path(codes)
        path.write_text(json.dumps({"outputs": result.outputs}), encoding="utf-8")
        self.read.add(path.name)

    def forget_unused(self) -> None:
        for path in self.folder.glob("*.json"):
            if path.name not in self.read:
                path.unlink(missing_ok=True)


def _run_context() -> str:
    """What a chain's outcome depends on besides its code: the runner, the packages a
    notebook run depends on too (the build's own list), the machine and its devices."""
    import platform

    import torch

    from resnorm_site.notebooks.cache import runtime_versions

    devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return "\0".join(
        [
            RUNNER,
            runtime_versions(),
            platform.machine(),
            *devices,
            os.environ.get("REQUIRE_CUDA", ""),
        ]
    )


def run_python(blocks: list[Block], cwd: Path, timeout: float = 600) -> Result:
    """Run the blocks, in order, in one fresh interpreter with ``__name__ == "__main__"``,
    in ``cwd`` with the handbook modules they import copied beside them."""
    codes = [expand(b.source) for b in blocks]
    for path in module_files(codes):
        shutil.copyfile(path, cwd / path.name)
    payload = json.dumps([(f"{b.id}", code) for b, code in zip(blocks, codes, strict=True)])
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=payload,
        capture_output=True,
        text=True,
        cwd=cwd,  # a scratch directory: a block cannot lean on files of the repository
        env=env,
        timeout=timeout,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
    try:
        data = json.loads(last)
    except json.JSONDecodeError:
        data = {"outputs": [], "failed": "the interpreter itself"}
    return Result(data.get("outputs", []), data.get("failed"), proc.stderr, proc.returncode)


def main(argv: list[str]) -> int:
    """Print what each executable block of the given pages prints.

    python -m tests.codeblocks docs/page.md [...]            # show the outputs
    python -m tests.codeblocks --update docs/page.md [...]   # and rewrite the
        expected-output blocks with them (read the diff before committing)
    """
    import tempfile

    update = "--update" in argv
    status = 0
    for name in [a for a in argv if a != "--update"]:
        path = ROOT / name
        blocks = parse(path)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        edits = []  # (first line, last line, new text) of output blocks, 0-based, inclusive
        for i, block in enumerate(blocks):
            if not block.runnable or block.lang not in PYTHON or block.skip:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                result = run_python(chain(block), cwd=Path(tmp))
            print(f"--- {block.id}" + (" (continues)" if block.cont else ""))
            if result.failed:
                print(result.stderr)
                status = 1
                continue
            print(result.outputs[-1], end="")
            if block.expected_output is not None:
                out = next(b for b in blocks[i + 1 :] if b.is_output)
                n = len(out.source.rstrip("\n").splitlines()) if out.source.strip() else 0
                edits.append((out.lineno, out.lineno + n - 1, result.outputs[-1]))
        if update and edits:
            for first, last, text in reversed(edits):
                indent = re.match(r"[ \t]*", lines[first - 1]).group(0)
                body = [indent + line + "\n" for line in text.rstrip("\n").splitlines()]
                lines[first : last + 1] = body
            path.write_text("".join(lines), encoding="utf-8")
            print(f"updated {len(edits)} output block(s) in {name}")
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
