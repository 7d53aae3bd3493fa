"""GPU figures on a page, from the results file ``make bench-gpu`` writes.

The site is built on a machine without a GPU, so its GPU figures cannot come from a
notebook run. ``scripts/bench_gpu.py`` measures them on a GPU and writes
``docs/experiments/results/gpu_norm_speed.json``: the GPU, driver, torch and Triton
versions, the commit, a hash of the benchmark and kernel code (``code_hash``), the date
and every sample. A page holds ``[[gpu-results:SECTION]]`` or ``[[gpu-results:SECTION-VIEW]]``
and the build puts in what it stands for.

One job per module, and this one keeps their public names, so that importers need not
know which module holds what:

- ``source``: the results file (where, what it must hold) and the code hash;
- ``figures``: a row's printed figure, the rule that compares figures
  (``fastest_group``), the launch-bound mark, the columns and the headline one;
- ``words``: the words, per language;
- ``tables``: a section's Markdown tables;
- ``chart``: a section's SVG charts;
- ``verdict``: the sentences that conclude: the verdict, the advice by size, the
  host's time per call;
- ``page``: the markers on a page, filled (``render``, ``fill_markdown``, ``fill_html``).
"""

from resnorm_site.gpu_results.chart import chart
from resnorm_site.gpu_results.figures import (
    LAUNCH_BOUND,
    PASSES,
    column,
    column_name,
    dagger,
    fastest_group,
    figure_text,
    gpu_us,
    headline,
    host_us,
    launch_bound,
    order,
    printed,
    quartiles,
    share,
)
from resnorm_site.gpu_results.page import (
    INLINE,
    MARKER,
    PARAGRAPH,
    VIEWS,
    fill_html,
    fill_markdown,
    render,
)
from resnorm_site.gpu_results.source import (
    CODE_FILES,
    HAND,
    RESULTS_FILE,
    ROW_KEYS,
    SCHEMA,
    SECTIONS,
    TOP_KEYS,
    ResultsError,
    code_hash,
    code_text,
    read,
)
from resnorm_site.gpu_results.tables import launch_note, table
from resnorm_site.gpu_results.verdict import host, sizes, verdict
from resnorm_site.gpu_results.words import TIMER, WORDS, name, short_name
from resnorm_site.paths import ROOT

# the names these had when they were one module's private helpers
_column, _column_name, _order = column, column_name, order
_figure, _dagger, _name = figure_text, dagger, name

__all__ = [
    "CODE_FILES", "HAND", "INLINE", "LAUNCH_BOUND", "MARKER", "PARAGRAPH", "PASSES",
    "RESULTS_FILE", "ROOT", "ROW_KEYS", "SCHEMA", "SECTIONS", "TIMER", "TOP_KEYS", "VIEWS",
    "WORDS", "ResultsError", "chart", "code_hash", "code_text", "column", "column_name",
    "dagger", "fastest_group", "figure_text", "fill_html", "fill_markdown", "gpu_us",
    "headline", "host", "host_us", "launch_bound", "launch_note", "name", "order",
    "printed", "quartiles", "read", "render", "share", "short_name", "sizes", "table",
    "verdict",
]  # fmt: skip
