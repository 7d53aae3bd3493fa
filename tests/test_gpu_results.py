"""GPU figures on the site: scripts/bench_gpu.py writes the results file, `make bench-gpu`
and the GPU job run it, and resnorm_site/gpu_results.py shows it on a page (present,
absent, stale).

No results file is typed by hand: the fixture runs the benchmark's own code (its CPU
fallback, the wall clock, tiny sizes) and writes the file with bench_gpu.document into
a copy of the measured code in tmp_path.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import re
import shutil
import statistics
import subprocess
import tarfile
from types import SimpleNamespace

import pytest
import torch
import yaml
from mkdocs.exceptions import PluginError

from resnorm_site import gpu_results
from snippets import norm_speed
from snippets.layer_norm import LayerNorm
from snippets.rms_norm import RMSNorm
from tests.conftest import ROOT, bilingual_site, mkdocs_build

SCRATCH = {"layer_norm": LayerNorm, "rms_norm": RMSNorm}
MARKER = "Before.\n\n[[gpu-results:norm_speed]]\n\nAfter."


def bench_gpu():
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "scripts/bench_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants(norm, hidden, dtype):
    out = norm_speed.norm_variants(norm, hidden, SCRATCH[norm], compile=False, dtype=dtype)
    # Dynamo's graph capture without code generation: quick, and counted as Inductor's is
    out["compiled"] = torch.compile(out["scratch"], dynamic=False, backend="eager")
    return out


@pytest.fixture(scope="module")
def measured():
    """(rows, failures) of gpu_benchmark on the CPU: real samples of tiny sizes."""
    return norm_speed.gpu_benchmark(
        [(4, 8), (8, 16)],
        variants,
        dtypes=(torch.float32, torch.bfloat16),
        device="cpu",
        repeats=3,
        min_sample_s=0,
        l2_bytes=256,
    )


@pytest.fixture(scope="module")
def measured_old():
    """The old way's rows (bench_gpu.old_method), on the CPU."""
    rows, _ = bench_gpu().old_method(
        3,
        sizes=[(4, 8)],
        device="cpu",
        variants=lambda norm, hidden: variants(norm, hidden, torch.float32),
    )
    return rows


@pytest.fixture
def site_root(tmp_path, measured, measured_old):
    """A copy of the measured code, and the results file bench_gpu writes for it."""
    for name in gpu_results.CODE_FILES:
        if (ROOT / name).exists():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, tmp_path / name)
    rows, failures = measured
    gpu = {"gpu": "Test GPU", "driver": "1.2.3", "cuda": "13.0", "torch": torch.__version__}
    gpu |= {"triton": "3.9.0", "l2_bytes": 256}
    doc = bench_gpu().document(
        rows, failures, [], [], gpu, {"repeats": 3}, root=tmp_path, old_rows=measured_old
    )
    path = tmp_path / gpu_results.RESULTS_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return tmp_path


def test_without_a_results_file_the_page_says_how_to_record_one(tmp_path):
    for lang, words in (("en", "No GPU figures have been recorded yet"), ("zh", "还没有记录")):
        out = gpu_results.fill_markdown(MARKER, lang, root=tmp_path)
        assert words in out and "`make bench-gpu`" in out and gpu_results.RESULTS_FILE in out
        assert out.startswith("Before.\n\n") and out.endswith("\n\nAfter.")
        assert "[[gpu-results" not in out and "|" not in out  # no table, no figure
        old = gpu_results.fill_markdown("[[gpu-results:old_method]]", lang, root=tmp_path)
        assert old in {
            "No GPU figures have been recorded yet (see above).",
            "还没有记录任何 GPU 数据（见上文）。",
        }


def test_a_results_file_gives_its_table_where_and_when(site_root, measured):
    data = json.loads((site_root / gpu_results.RESULTS_FILE).read_text())
    out = gpu_results.fill_markdown(MARKER, "en", root=site_root)
    assert "Measured on **Test GPU** (driver 1.2.3, CUDA 13.0" in out
    assert data["date"] in out and data["commit"][:12] in out
    assert "unchanged since" in out and "changed since" not in out.replace("unchanged", "")
    assert "Timed with the wall clock" in out  # the fixture ran on the CPU
    assert "`dynamic=False`, mode `default`" in out
    assert "2 graphs and 1 recompilations" in out and ", 0 while timing" in out
    # every row of the file is a cell of the table: the snippet's pct_of_copy, and in
    # brackets the same at the third and first quartiles of its own times
    rows, _ = measured
    for row in rows:
        m, t = norm_speed.pct_of_copy(row).median, norm_speed.quartiles(row["samples"])
        low, high = m * t.median / t.high, m * t.median / t.low
        assert f"{m:.0f}% ({low:.0f}–{high:.0f})" in out
    header = "| Forward | float32 4×8 | float32 8×16 | bfloat16 4×8 | bfloat16 8×16 |"
    assert header in out and "| Forward+backward | float32 4×8" in out
    assert out.count("| compiled RMSNorm |") == 2  # one line per pass
    zh = gpu_results.fill_markdown(MARKER, "zh", root=site_root)
    assert "测量于 **Test GPU**" in zh and "| 前向 |" in zh and "没有改动" in zh


def test_a_change_to_the_measured_code_is_reported(site_root):
    (site_root / "snippets/norm_speed.py").write_text("# changed\n", encoding="utf-8")
    out = gpu_results.fill_markdown(MARKER, "en", root=site_root)
    assert "**The code has changed since these figures were measured**" in out
    assert "| compiled RMSNorm |" in out  # the figures are still shown, marked
    zh = gpu_results.fill_markdown(MARKER, "zh", root=site_root)
    assert "代码已经改动" in zh


def test_the_code_hash_covers_every_measured_file_even_an_absent_one(tmp_path):
    empty = gpu_results.code_hash(tmp_path)
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets/fused_add_rms_norm.py").write_text("x = 1\n")
    added = gpu_results.code_hash(tmp_path)
    assert added != empty
    (tmp_path / "snippets/fused_add_rms_norm.py").write_text("x = 2\n")
    assert gpu_results.code_hash(tmp_path) not in {empty, added}
    assert gpu_results.code_hash(ROOT) == gpu_results.code_hash(ROOT)
    assert set(gpu_results.CODE_FILES) >= {"scripts/bench_gpu.py", "snippets/norm_speed.py"}


def test_a_reworded_comment_keeps_the_hash_and_a_changed_string_does_not(tmp_path):
    kernel = tmp_path / "snippets/fused_add_rms_norm.py"
    kernel.parent.mkdir()
    kernel.write_text('PROGRAMS = 2  # why two\n\n\ndef f(x):\n    return x + "#"\n')
    before = gpu_results.code_hash(tmp_path)
    kernel.write_text(
        'PROGRAMS = 2  # reworded: why two\n\ndef f(x):  # new\n    return x + "#"  \n'
    )
    assert gpu_results.code_hash(tmp_path) == before
    kernel.write_text('PROGRAMS = 2\n\ndef f(x):\n    return x + "# "\n')  # inside a string
    assert gpu_results.code_hash(tmp_path) != before
    kernel.write_text("PROGRAMS = 4  # why two\n\n\ndef f(x):\n    return x + '#'\n")
    assert gpu_results.code_hash(tmp_path) != before
    assert gpu_results.code_text(b"x = (\n") == b"x = (\n"  # does not tokenize: as it is


def test_a_notebook_paragraph_becomes_an_html_table(site_root, tmp_path_factory):
    html = "<h2>On a GPU</h2>\n<p>[[gpu-results:norm_speed]]</p>\n<p>more</p>"
    out = gpu_results.fill_html(html, "en", root=site_root)
    assert "<table>" in out and "<strong>Test GPU</strong>" in out and "<p>more</p>" in out
    absent = gpu_results.fill_html(html, "en", root=tmp_path_factory.mktemp("empty"))
    assert "No GPU figures have been recorded yet" in absent and "<table>" not in absent
    with pytest.raises(gpu_results.ResultsError, match="a paragraph of its own"):
        gpu_results.fill_html("<p>see [[gpu-results:norm_speed]] here</p>", "en", root=site_root)


def test_a_page_without_the_marker_is_untouched(tmp_path):
    text = "<p>[[measured:norm_speed:verdict]]</p>"
    assert gpu_results.fill_html(text, "en", root=tmp_path) == text
    assert gpu_results.fill_markdown(text, "en", root=tmp_path) == text


def test_bad_results_files_and_sections_are_clear_errors(site_root):
    path = site_root / gpu_results.RESULTS_FILE
    data = json.loads(path.read_text())
    with pytest.raises(gpu_results.ResultsError, match="unknown section 'speed'"):
        gpu_results.fill_markdown("[[gpu-results:speed]]", "en", root=site_root)
    for broken, message in [
        ("{not json", "not JSON"),
        (json.dumps(data | {"schema": 99}), "expected schema 1, got 99"),
        (json.dumps({k: v for k, v in data.items() if k != "code_hash"}), "missing.*code_hash"),
        (json.dumps(data | {"rows": [{"norm": "rms_norm"}]}), "row 0 lacks"),
        (
            json.dumps(data | {"rows": [data["rows"][0] | {"samples": [0.1, -1.0]}]}),
            "row 0 samples must be positive seconds",
        ),
    ]:
        path.write_text(broken)
        with pytest.raises(gpu_results.ResultsError, match=message):
            gpu_results.fill_markdown(MARKER, "en", root=site_root)


def test_the_page_figures_are_the_snippets(measured):
    """The hook's figures and verdict, written without torch, agree with norm_speed's."""
    rows, _ = measured
    for row in rows:
        t = norm_speed.quartiles(row["samples"])
        assert gpu_results.quartiles(row["samples"]) == pytest.approx(tuple(t))
        m = norm_speed.pct_of_copy(row).median
        want = (m, m * t.median / t.high, m * t.median / t.low)
        assert gpu_results.share(row) == pytest.approx(want)
    for col in {(r["dtype"], r["rows"], r["hidden"], r["passes"], r["norm"]) for r in rows}:
        group = [
            r for r in rows if (r["dtype"], r["rows"], r["hidden"], r["passes"], r["norm"]) == col
        ]
        best = min(group, key=lambda r: r["seconds"])
        fastest = gpu_results.fastest_group(group)
        # what compare() cannot tell from the fastest is among them (the printed ranges,
        # rounded, can only tie more), and every one left out is slower than each of them
        assert fastest >= {
            r["impl"]
            for r in group
            if norm_speed.compare(r["samples"], best["samples"]) != norm_speed.SLOWER
        }
        for out in (r for r in group if r["impl"] not in fastest):
            for r in (r for r in group if r["impl"] in fastest):
                assert norm_speed.compare(out["samples"], r["samples"]) == norm_speed.SLOWER


def test_bench_gpu_without_cuda_writes_nothing_and_fails(tmp_path, monkeypatch, capsys):
    module = bench_gpu()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "results.json"
    assert module.main(["--output", str(out)]) == 2
    assert not out.exists()
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_the_results_file_holds_provenance_and_every_sample(site_root, measured):
    data = gpu_results.read(site_root / gpu_results.RESULTS_FILE)
    assert data["schema"] == gpu_results.SCHEMA
    assert data["code_hash"] == gpu_results.code_hash(site_root)
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", data["commit"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", data["date"])
    assert {"gpu", "driver", "cuda", "torch", "triton"} <= set(data["machine"])
    rows, _ = measured
    assert [r["samples"] for r in data["rows"]] == [r["samples"] for r in rows]
    assert all(len(r["copy_samples"]) == 3 for r in data["rows"])


def test_no_results_file_with_figures_is_typed_into_the_repository():
    """Figures come from a run of bench_gpu on a GPU, which records the GPU it ran on."""
    path = ROOT / gpu_results.RESULTS_FILE
    if path.exists():
        data = gpu_results.read(path)
        assert data["machine"]["gpu"] and data["machine"]["driver"]
        assert all(r["timer"] == "cuda events" for r in data["rows"])


def test_make_bench_gpu_runs_the_script_and_ci_publishes_its_file():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "make bench-gpu" in makefile.split("\n\n", 1)[0]  # the header names it
    recipe = makefile.split("\nbench-gpu:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/bench_gpu.py" in recipe
    ci = yaml.safe_load((ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8"))
    gpu_steps = ci["jobs"]["test-gpu"]["steps"]
    assert any(s.get("run") == "make bench-gpu" for s in gpu_steps)
    (upload,) = [s for s in gpu_steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["with"]["path"] == gpu_results.RESULTS_FILE
    build = ci["jobs"]["build"]["steps"]
    (download,) = [s for s in build if s.get("uses", "").startswith("actions/download-artifact")]
    assert download["with"]["name"] == upload["with"]["name"]
    assert download["with"]["path"] == str(gpu_results.RESULTS_FILE).rsplit("/", 1)[0]
    names = [s.get("uses", s.get("run", "")) for s in build]
    assert names.index(download["uses"]) < next(i for i, n in enumerate(names) if "make build" in n)


def test_the_adapter_fills_both_kinds_of_page(monkeypatch, tmp_path):
    import gpu_results as adapter  # hooks/gpu_results.py

    page = SimpleNamespace(file=SimpleNamespace(src_uri="experiments/norm_speed.py"))
    config = SimpleNamespace(theme={"language": "zh"})
    monkeypatch.setattr(gpu_results, "ROOT", tmp_path)
    monkeypatch.setattr(gpu_results.fill_markdown, "__defaults__", (tmp_path,))
    monkeypatch.setattr(gpu_results.fill_html, "__defaults__", (tmp_path,))
    md = adapter.on_page_markdown(MARKER, page, config, None)
    assert "还没有记录" in md
    html = adapter.on_page_content("<p>[[gpu-results:norm_speed]]</p>", page, config, None)
    assert "还没有记录" in html
    with pytest.raises(PluginError, match=r"experiments/norm_speed\.py: unknown section"):
        adapter.on_page_markdown("[[gpu-results:nope]]", page, config, None)


def test_the_measured_size_list_fills_a_large_gpu():
    module = bench_gpu()
    assert (32768, 4096) in module.SIZES and (16384, 8192) in module.SIZES
    assert module.DTYPES == (torch.float32, torch.bfloat16)
    # the fused operation's ideal traffic: x, residual in, y, h out (+ the weight)
    fused = module.FUSED  # the signature of norm_speed.bytes_moved, which time_rows calls
    assert module.fused_bytes(fused, 2, 3, itemsize=2, passes="forward") == 4 * 12 + 6
    assert module.fused_bytes(fused, 2, 3, itemsize=2, passes="forward+backward") == (
        (4 * 12 + 6 + 8) + (4 * 12 + 8 + 12)
    )


def test_a_launch_bound_figure_is_marked(site_root):
    path = site_root / gpu_results.RESULTS_FILE
    data = json.loads(path.read_text())
    plain = gpu_results.fill_markdown(MARKER, "en", root=site_root)
    assert "†" not in plain  # the wall clock (the fixture's CPU run) records no launch time
    row = data["rows"][0]
    slow = row | {"host_samples": [t * 0.9 for t in row["samples"]]}  # host ~ GPU time
    fast = data["rows"][1] | {"host_samples": [t * 0.1 for t in data["rows"][1]["samples"]]}
    path.write_text(json.dumps(data | {"rows": [slow, fast, *data["rows"][2:]]}))
    out = gpu_results.fill_markdown(MARKER, "en", root=site_root)
    assert out.count(" †") == 1 and "†: the host's median time to launch one call" in out
    assert f"was at least {gpu_results.LAUNCH_BOUND:.0%} of the GPU's" in out
    assert gpu_results.launch_bound(slow) and not gpu_results.launch_bound(fast)


def test_the_old_way_is_shown_apart(site_root):
    out = gpu_results.fill_markdown("[[gpu-results:old_method]]", "en", root=site_root)
    assert "Timed as this page times the CPU: `torch.compile(dynamic=True)`" in out
    assert "| Forward | float32 4×8 |" in out and "| compiled RMSNorm |" in out
    assert "| F.rms_norm |" not in out  # only the compiled modules and nn.*
    data = gpu_results.read(site_root / gpu_results.RESULTS_FILE)
    assert all(r["compile"]["reused"] for r in data["old_method_rows"] if r["compile"])
    zh = gpu_results.fill_markdown("[[gpu-results:old_method]]", "zh", root=site_root)
    assert "按本页在 CPU 上计时的方式测得" in zh


@pytest.mark.build
def test_a_built_page_in_both_languages_says_what_the_repository_holds(tmp_path):
    page = "# GPU\n\n[[gpu-results:norm_speed]]\n"
    config = bilingual_site(
        tmp_path, {"index.md": page, "index.zh.md": page}, hooks=["gpu_results.py"]
    )
    proc = mkdocs_build(tmp_path / "site", config)
    assert proc.returncode == 0, proc.stderr
    en = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    zh = (tmp_path / "site/zh/index.html").read_text(encoding="utf-8")
    if (ROOT / gpu_results.RESULTS_FILE).exists():
        assert "Measured on" in en and "测量于" in zh
    else:
        assert "No GPU figures have been recorded yet" in en and "还没有记录" in zh
    assert "[[gpu-results" not in en + zh


def test_the_chart_draws_every_figure_under_the_copy_roof(site_root, measured):
    out = gpu_results.fill_markdown(MARKER, "en", root=site_root)
    svgs = re.findall(r"<svg\b.*?</svg>", out, re.S)
    assert len(svgs) == 2  # one per pass
    rows, _ = measured
    for svg, p in zip(svgs, gpu_results.PASSES, strict=True):
        assert 'role="img"' in svg and "<title id=" in svg
        assert f"Bar chart, {p}: for each dtype and size" in svg  # its alt text
        assert svg.count("<rect ") == sum(r["passes"] == p for r in rows)
        assert 'stroke-dasharray="4 3"' in svg and "copy bandwidth = 100 %" in svg  # the roof
        # colours as attributes: the notebook hook turns a <style> into a <link>, not SVG
        assert "<style" not in svg and 'stroke="currentColor"' in svg
    html = gpu_results.fill_html("<p>[[gpu-results:norm_speed]]</p>", "zh", root=site_root)
    assert html.count("<svg") == 2 and "条形图，前向：" in html
    assert "<svg" not in gpu_results.fill_markdown(MARKER, "en", root=site_root / "nothing")


def test_rehash_takes_the_code_at_the_recorded_commit_and_keeps_the_samples(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "rehash_gpu_results", ROOT / "scripts/rehash_gpu_results.py"
    )
    rehash = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rehash)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    # the code at HEAD, taken another way than git show: git archive
    archive = subprocess.run(
        ["git", "archive", "HEAD", *gpu_results.CODE_FILES], cwd=ROOT, capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp_path / "head", filter="data")
    doc = {"commit": head, "dirty": False, "code_hash": "stale", "rows": [{"samples": [1.5]}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert rehash.rehash(path) == gpu_results.code_hash(tmp_path / "head")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data == doc | {"code_hash": gpu_results.code_hash(tmp_path / "head")}
    for bad in ({"commit": "unknown"}, {"dirty": True}):
        path.write_text(json.dumps(doc | bad), encoding="utf-8")
        with pytest.raises(SystemExit, match="cannot be rehashed"):
            rehash.rehash(path)


def test_a_verdict_names_the_bold_cells_of_the_headline_size(site_root):
    data = gpu_results.read(site_root / gpu_results.RESULTS_FILE)
    rows = data["rows"]
    assert gpu_results.headline(rows) == ("bfloat16", 8, 16)  # bf16, the most elements
    out = gpu_results.fill_markdown("[[gpu-results:norm_speed-verdict]]", "en", root=site_root)
    head = f"On **Test GPU** (torch {torch.__version__}, Triton 3.9.0) at bfloat16 8×16"
    assert out.startswith(head) and "|" not in out
    assert ":\n\n- " in out  # a blank line before the list, or Markdown makes it one paragraph
    words = gpu_results.WORDS["en"]
    lines = [line for line in out.splitlines() if line.startswith("- ")]
    assert len(lines) == 4  # LayerNorm and RMSNorm, forward and forward+backward
    for line, (norm, p) in zip(
        lines, itertools.product(("layer_norm", "rms_norm"), gpu_results.PASSES), strict=True
    ):
        here = [r for r in rows if (r["norm"], r["passes"], r["rows"], r["dtype"]) ==
                (norm, p, 8, "bfloat16")]  # fmt: skip
        bold = gpu_results.fastest_group(here)
        best, _, rest = line.partition(". Then: ")
        for r in here:
            name = words["impl"][(norm, r["impl"])]
            m, low, high = gpu_results.printed(r)
            figure = f"{name}: {m}% ({low}–{high})"
            assert figure in (best if r["impl"] in bold else rest), (figure, line)
    zh = gpu_results.fill_markdown("[[gpu-results:norm_speed-verdict]]", "zh", root=site_root)
    assert zh.startswith("在 **Test GPU**（torch ") and "最快的实现" in zh
    (site_root / "snippets/rms_norm.py").write_text("changed = True\n")
    stale = gpu_results.fill_markdown("[[gpu-results:norm_speed-verdict]]", "en", root=site_root)
    assert "The code has changed since" in stale


def test_a_verdict_without_a_results_file_says_none_were_recorded(tmp_path):
    out = gpu_results.fill_markdown(
        "[[gpu-results:fused_add_rms_norm-verdict]]", "en", root=tmp_path
    )
    assert "No GPU figures have been recorded yet" in out
    with pytest.raises(gpu_results.ResultsError, match="unknown section 'nope'"):
        gpu_results.fill_markdown("[[gpu-results:nope-verdict]]", "en", root=tmp_path)
    with pytest.raises(gpu_results.ResultsError, match="unknown view 'table'"):
        gpu_results.fill_markdown("[[gpu-results:norm_speed-table]]", "en", root=tmp_path)
    for lang, words in (("en", "No GPU figures have been recorded yet."), ("zh", "还没有记录")):
        versions = "Pinned. [[gpu-results:fused_add_rms_norm-versions]]"
        assert words in gpu_results.fill_markdown(versions, lang, root=tmp_path)


FIGURE = re.compile(r"(\d+)% \((\d+)–(\d+)\)")  # median% (low–high), as a page prints it


def _ranges(text: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, f)) for f in FIGURE.findall(text)]


def verdict_splits(text: str) -> list[tuple[list, list]]:
    """Each verdict line's printed figures: (those named fastest, those after "Then")."""
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    return [tuple(map(_ranges, line.partition(". Then: ")[::2])) for line in lines]


def table_splits(text: str) -> dict:
    """Each group of cells the bold is drawn in (pass, column, operation): (bold figures,
    plain figures), read back from the Markdown tables."""
    names = {name: key[0] for key, name in gpu_results.WORDS["en"]["impl"].items()}
    passes = set(gpu_results.WORDS["en"]["pass"].values())
    groups, header = {}, None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in passes:
            header = cells
        elif header and cells[0] in names:  # not the copy's line, not the rule under the header
            for col, cell in zip(header[1:], cells[1:], strict=True):
                for figure in _ranges(cell):
                    group = groups.setdefault((header[0], col, names[cells[0]]), ([], []))
                    group[0 if cell.startswith("**") else 1].append(figure)
    return groups


def assert_never_split_where_ranges_overlap(fastest, rest):
    assert fastest, "a verdict names at least one fastest"
    for a in fastest:
        for b in rest:
            assert b[2] < a[1], f"{a} is put before {b}, but their printed ranges overlap"


def synthetic(impl, median, low, high, passes="forward"):
    """A row whose share() is (median, low, high): one copy of 1 s, as many bytes as it."""
    times = [100 / high * 0.99, 100 / high, 100 / median, 100 / low, 100 / low * 1.01]
    return {
        "norm": "rms_norm", "impl": impl, "rows": 8, "hidden": 16, "dtype": "bfloat16",
        "passes": passes, "samples": times, "copy_samples": [1.0] * 5, "bytes": 1,
        "copy_bytes": 1, "compile": None, "host_samples": None,
    }  # fmt: skip


def test_the_verdict_never_separates_ranges_that_overlap_as_printed():
    """The rule of the verdict and the bold cells is the one a reader applies to the
    printed ranges: nothing put after the fastest overlaps one of them."""
    data = gpu_results.read(ROOT / gpu_results.RESULTS_FILE)
    assert data, "the committed results file is read"
    for section in gpu_results.SECTIONS:
        full = gpu_results.render(section, data, data["code_hash"], "en")
        groups = table_splits(full)
        assert groups, section
        for fastest, rest in groups.values():
            assert_never_split_where_ranges_overlap(fastest, rest)
        if section != "old_method":
            brief = gpu_results.render(f"{section}-verdict", data, data["code_hash"], "en")
            for fastest, rest in verdict_splits(brief):
                assert_never_split_where_ranges_overlap(fastest, rest)
    # a chain: B overlaps A, A overlaps the fastest, B does not; and a tie that only the
    # rounding makes (99.6 against 99.8 prints 100 against 100): all are one group
    chain = [
        synthetic("triton", 100, 99, 101),
        synthetic("nn", 97, 96, 99),
        synthetic("scratch", 95, 94, 96),
        synthetic("F", 90, 89, 92),
        synthetic("triton", 100.2, 99.8, 100.6, passes="forward+backward"),
        synthetic("nn", 99.2, 98.9, 99.6, passes="forward+backward"),
    ]
    machine = {"gpu": "Synthetic", "torch": "0", "triton": "0"}
    out = gpu_results.verdict(chain, ("rms_norm",), "en", {"machine": machine, "date": "x"})
    (fwd_best, fwd_rest), (both_best, both_rest) = verdict_splits(out)
    assert fwd_best == [(100, 99, 101), (97, 96, 99), (95, 94, 96)]
    assert fwd_rest == [(90, 89, 92)] and both_rest == [] and len(both_best) == 2
    for fastest, rest in table_splits(gpu_results.table(chain, ("rms_norm",), "en")).values():
        assert_never_split_where_ranges_overlap(fastest, rest)


def test_each_dagger_is_the_launch_rule_with_its_times_under_the_verdict():
    """† marks a figure where the host's median time per call reached LAUNCH_BOUND of the
    GPU's, whatever the size; the note under the verdict gives both times."""
    data = gpu_results.read(ROOT / gpu_results.RESULTS_FILE)
    rows = [r for r in data["fused_rows"] if r["host_samples"]]
    col = gpu_results.headline(rows)
    out = gpu_results.render("fused_add_rms_norm-verdict", data, data["code_hash"], "en")
    words = gpu_results.WORDS["en"]
    lines = [line for line in out.splitlines() if line.startswith("- ")]
    for line, p in zip(lines, gpu_results.PASSES, strict=True):
        for r in (r for r in rows if r["passes"] == p and gpu_results._column(r) == col):
            host, gpu = (statistics.median(r[k]) for k in ("host_samples", "samples"))
            marked = host >= gpu_results.LAUNCH_BOUND * gpu
            m, low, high = gpu_results.printed(r)
            name = words["impl"][(r["norm"], r["impl"])]
            figure = f"{name}: {m}% ({low}–{high})"
            assert (figure + " †" in line) == marked and figure in line, (figure, line)
            times = f"{name}, {words['pass'][p].lower()}: host {host * 1e6:.0f} µs"
            assert (times + f", GPU {gpu * 1e6:.0f} µs" in out) == marked
    assert f"at least {gpu_results.LAUNCH_BOUND:.0%} of the GPU's median time" in out


def test_the_gpu_page_names_the_versions_that_measured_it_apart_from_the_pins():
    """The figures' torch and Triton come from the results file; the page types only the
    pins of requirements.txt, for installing."""
    machine = gpu_results.read(ROOT / gpu_results.RESULTS_FILE)["machine"]
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    pins = set(re.findall(r"^(torch|triton)==([\w.]+)", requirements, re.M))
    assert {name for name, _ in pins} == {"torch", "triton"}
    for name, lang in (("rmsnorm-gpu.md", "en"), ("rmsnorm-gpu.zh.md", "zh")):
        source = (ROOT / "docs/fast" / name).read_text(encoding="utf-8")
        shown = gpu_results.fill_markdown(source, lang, root=ROOT)
        assert "[[gpu-results:fused_add_rms_norm-versions]]" in source
        assert f"torch {machine['torch']}" in shown and f"Triton {machine['triton']}" in shown
        for version in (machine["torch"], machine["triton"]):
            assert version.split("+")[0] not in source, f"{version} typed into {name}"
        assert set(re.findall(r"\b(torch|triton)==([\w.]+)", source)) == pins, name


def test_the_advice_by_size_is_the_rule_of_the_bold_cells():
    """-sizes names a size under "among the fastest" exactly where the kernel is bold in
    the tables (fastest_group on the printed ranges), and under "slower" every other size,
    with the fastest there and the kernel's host and GPU time per call; -host gives each
    implementation's host time per call, lowest–highest over the sizes."""
    data = gpu_results.read(ROOT / gpu_results.RESULTS_FILE)
    rows, words = data["fused_rows"], gpu_results.WORDS["en"]
    for impl in ("triton", "compiled"):
        view = "fused_add_rms_norm-sizes" + ("" if impl == "triton" else f"-{impl}")
        out = gpu_results.render(view, data, data["code_hash"], "en")
        won, _, lost = out.partition(" It was slower than the fastest")
        for r in (r for r in rows if r["impl"] == impl):
            here = [x for x in rows if gpu_results.column(x) == gpu_results.column(r)
                    and x["passes"] == r["passes"]]  # fmt: skip
            item = f"{gpu_results.column_name(gpu_results.column(r))}, {r['passes']} ("
            if impl in gpu_results.fastest_group(here):
                assert item not in lost and f"{r['rows']}×{r['hidden']}" in won, (item, out)
                continue
            assert item in lost, (item, out)
            times = f"host {gpu_results.host_us(r):.0f} µs and GPU {gpu_results.gpu_us(r):.0f} µs"
            assert f"{gpu_results.figure_text(r)}{gpu_results.dagger(r)}, {times}" in lost
    host = gpu_results.render("fused_add_rms_norm-host", data, data["code_hash"], "en")
    for impl, short in (("triton", "this kernel"), ("nn", "eager")):
        for p in gpu_results.PASSES:
            us = [gpu_results.host_us(r) for r in rows if (r["impl"], r["passes"]) == (impl, p)]
            assert f"{min(us):.0f}–{max(us):.0f} µs {p}" in host.split(f"{short}, ")[1]
    assert words["short"][("fused_add_rms_norm", "triton")] == "this kernel"
    zh = gpu_results.render("fused_add_rms_norm-sizes-compiled", data, data["code_hash"], "zh")
    assert zh.startswith("在这次运行中，torch.compile 位列最快")  # a Latin name spaced


def test_the_advice_views_say_what_is_wrong_with_a_marker(tmp_path):
    for marker, message in [
        ("norm_speed-sizes", "needs one named"),
        ("fused_add_rms_norm-sizes-nope", "no implementation 'nope'"),
        ("fused_add_rms_norm-host-nn", "only the view 'sizes' takes an implementation"),
    ]:
        with pytest.raises(gpu_results.ResultsError, match=message):
            gpu_results.fill_markdown(f"[[gpu-results:{marker}]]", "en", root=ROOT)
    for view in ("sizes", "host"):  # inline: one short sentence without a results file
        out = gpu_results.fill_markdown(f"[[gpu-results:fused_add_rms_norm-{view}]]", "en",
                                        root=tmp_path)  # fmt: skip
        assert out == "No GPU figures have been recorded yet."


def test_the_gpu_page_leads_with_the_advice_by_size():
    for name in ("rmsnorm-gpu.md", "rmsnorm-gpu.zh.md"):
        source = (ROOT / "docs/fast" / name).read_text(encoding="utf-8")
        lead = source.split("\n## ", 1)[0]
        for view in ("sizes", "host", "verdict"):
            assert f"[[gpu-results:fused_add_rms_norm-{view}]]" in lead, (name, view)
        assert "[[gpu-results:fused_add_rms_norm-sizes-compiled]]" in source
