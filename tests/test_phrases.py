"""Measured results are numbers and keys; each language words them (resnorm_site/phrases.py).

The notebooks publish what the claims ledger and other pages quote with
``[[measured:NOTEBOOK:KEY]]``. A value is a number as text or a phrase key with fields, never
an English sentence, so a Chinese page quoting it reads Chinese.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from resnorm_site import paths, phrases
from resnorm_site.notebooks import cache, measured, source
from snippets.lm_experiment import TrainResult, outcome
from tests import codeblocks
from tests.cjk_spaces import prose_runs
from tests.terms import chinese_pages
from tests.test_i18n import english_pages, markdown_of

# Names a Chinese sentence keeps in their own spelling: the norms and placements, the
# implementations timed, the hardware and the library, and the baseline the notebooks'
# output calls unigram.
NAMES = re.compile(
    r"RMSNorm|LayerNorm|Post-LN|Pre-LN|Xavier|GPT-2|CUDA|CPU|GPU|torch\.compile|torch|unigram|"
    r"nn\.\*|F\.\*|sqrt\(L\)|float\d+|bfloat16"
)
WORD_RUN = re.compile(r"[A-Za-z]{2,}(?:[\s,;:'-]+[A-Za-z]{2,})*")
FIELD = re.compile(r"\{\w+\}")
# the fields of the "machine" phrase that hold what the system reports: names as they are
MACHINE_NAMES = {"cpu", "name", "torch"}
CHINESE_PAGES = chinese_pages()
NOTEBOOKS = [p for p in english_pages() if p.suffix == ".py"]


def english_words(text: str) -> list[str]:
    """Runs of English words in ``text``, once the names and fields are taken out."""
    return WORD_RUN.findall(NAMES.sub(" ", FIELD.sub(" ", text)))


def test_every_phrase_is_worded_in_every_language_with_the_same_fields():
    en, zh = phrases.PHRASES["en"], phrases.PHRASES["zh"]
    assert set(en) == set(zh)
    for ident in en:
        assert phrases.fields(en[ident]) == phrases.fields(zh[ident]), ident


@pytest.mark.parametrize("ident", sorted(phrases.PHRASES["zh"]))
def test_a_chinese_phrase_holds_no_english_words(ident):
    assert english_words(phrases.PHRASES["zh"][ident]) == []


def test_the_english_word_finder_bites():
    assert english_words("RMSNorm slower; no measurable difference") == [
        "slower; no measurable difference"
    ]
    assert english_words("RMSNorm 更慢，CPU 上 {size}") == []


def test_a_phrase_is_worded_with_its_fields_nested_and_listed():
    value = {
        "phrase": "speed.verdict",
        "pass": {"phrase": "pass.forward"},
        "size": {"phrase": "size", "rows": "8", "hidden": "16", "dtype": "float32"},
        "by_impl": [
            {"phrase": "speed.by_impl", "impl": {"phrase": f"impl.{i}"}, "word": {"phrase": w}}
            for i, w in (("nn", "speed.faster"), ("fastest", "speed.unresolved"))
        ],
    }
    assert phrases.word("en", value) == (
        "RMSNorm against LayerNorm, forward, 8 x 16 float32 on the CPU: nn.*, RMSNorm faster; "
        "fastest of each, no measurable difference (a difference counts only where the "
        "interquartile ranges of the timings do not overlap)"
    )
    assert phrases.word("zh", value) == (
        "RMSNorm 对 LayerNorm，前向，CPU 上 8 × 16 的 float32 张量：nn.*：RMSNorm 更快；"
        "各取最快：测不出差别（只有两者计时的四分位距不重叠，才算有差别）"
    )
    assert phrases.word("zh", "0.87") == "0.87"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"phrase": "outcome.won"}, r"no 'zh' phrase 'outcome.won'"),
        ({"phrase": "depth.ratio_at", "ratio": "0.9"}, r"takes fields \['layers', 'ratio'\]"),
        ({"phrase": "claim.holds", "extra": "1"}, r"takes fields \[\], got \['extra'\]"),
        ({"ratio": "0.9"}, r"must be text, a list or"),
        (0.5, r"must be text, a list or .* got 0.5"),
        (None, r"got None"),
    ],
)
def test_a_value_no_table_can_word_is_refused(value, error):
    with pytest.raises(phrases.PhraseError, match=error):
        phrases.word("zh", value)


@pytest.mark.parametrize(
    ("final_loss", "diverged"), [(0.5, False), (2.0, False), (float("nan"), True)]
)
def test_every_verdict_a_run_can_get_is_worded(final_loss, diverged):
    """The notebooks publish lm_experiment.outcome's own words as the phrase key."""
    run = TrainResult(losses=[], final_loss=final_loss, eval_loss=final_loss, diverged=diverged)
    verdict = outcome(run, {"unigram": 2.0})
    for lang in ("en", "zh"):
        assert phrases.word(lang, {"phrase": f"outcome.{verdict}"})


def test_a_page_quoting_an_unworded_value_fails_the_build_naming_it():
    results = {"memory": {"verdict": {"phrase": "claim.maybe"}}}
    with pytest.raises(measured.MissingNumber, match=r"claims.zh.md: memory:verdict: no 'zh'"):
        measured.quote_numbers(
            "[[measured:memory:verdict]]", results, set(), "", "claims.zh.md", "zh"
        )


def test_a_quote_reads_in_the_language_of_its_page():
    results = {"memory": {"verdict": {"phrase": "claim.refuted"}, "ratio": "1.00"}}
    page = "[[measured:memory:ratio]], [[measured:memory:verdict]]"
    assert measured.quote_numbers(page, results, set(), "", "p", "en") == "1.00, refuted"
    assert measured.quote_numbers(page, results, set(), "", "p", "zh") == "1.00, 不成立"


def published(notebook: Path) -> dict:
    executed = paths.run_path(cache.cache_key(notebook), notebook.name)
    if not executed.is_file():
        pytest.fail(f"{notebook.name} has no executed copy: the site build runs it first")
    return source.published_results(executed)


def leaves(value, where: str):
    """Every text a published value holds, with where it sits."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "phrase":
                yield from leaves(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{where}[{i}]")
    else:
        yield where, str(value)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_publishes_numbers_and_keys_never_sentences(notebook, built_site):
    """Checked on the build's own runs: every value words in both languages, no text in it
    holds English words beyond names, and its Chinese wording holds none either (but for the
    machine's own names: its CPU model, GPU and torch version as the system reports them)."""
    for key, value in published(notebook).items():
        for lang in ("en", "zh"):
            phrases.word(lang, value)  # raises if a table cannot word it
        for where, text in leaves(value, key):
            if where.rsplit(".", 1)[-1] in MACHINE_NAMES:
                continue
            assert english_words(text) == [], (
                f"{notebook.stem}:{where} = {text!r}: English words; publish a phrase key"
            )
        if isinstance(value, dict) and value["phrase"] != "machine":
            zh = phrases.word("zh", value)
            assert english_words(zh) == [], f"{notebook.stem}:{key} in Chinese: {zh!r}"


def test_a_built_chinese_page_holds_no_english_a_measured_value_put_there(built_site):
    """Every /zh/ page that quotes measured values, as built: its prose (code, outputs and
    math left out) shows each value's Chinese wording, and none of the English words the
    same value reads with on the English page (names, in both wordings, aside)."""
    results = {p.stem: published(p) for p in NOTEBOOKS}
    quoting = [p for p in CHINESE_PAGES if measured.MEASURED.search(markdown_of(p))]
    assert len(quoting) >= 3
    found = []
    for page in quoting:
        html = (built_site / codeblocks.built_path(page)).read_text(encoding="utf-8")
        prose = "\n".join(prose_runs(html))
        for notebook, key in measured.MEASURED.findall(markdown_of(page)):
            en, zh = (phrases.word(lang, results[notebook][key]) for lang in ("en", "zh"))
            if zh not in prose:
                found.append(f"{page.name}: {notebook}:{key} is not shown as {zh!r}")
            shared = set(english_words(zh))
            for run in english_words(en):  # a phrase of two words or more, as words
                shown = re.search(rf"(?<![A-Za-z]){re.escape(run)}(?![A-Za-z])", prose)
                if " " in run and run not in shared and shown:
                    found.append(f"{page.name}: {notebook}:{key} put {run!r} there")
    assert not found, "\n".join(found)
