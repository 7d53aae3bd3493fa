"""The census's counts on other pages: ``[[census:count-CATEGORY]]`` and
``[[census:list-CATEGORY]]`` (hooks/resnorm_site/census/page.py) give what the census rows
say, counted here again without the page's code; an unknown key is a clear error; the
decision page and the claims ledger fill in both languages with the same keys; and the
families those pages name as examples of a category are in it.

The census is read from the build cache when one for the installed transformers and the
same census code is there, else computed once for the session (about a minute).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from resnorm_site import census as census_module
from resnorm_site.census import page
from resnorm_site.census.cells import summary

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["docs/reference/choosing.md", "docs/experiments/claims.md"]


@pytest.fixture(scope="session")
def data() -> dict:
    return census_module.census()


def fill(key: str, data: dict, lang: str = "en") -> str:
    return page.fill(f"[[census:{key}]]", lang, data)


# --- the categories, counted here from the rows -----------------------------------------


def placement(row: dict) -> str:
    """Where a probed row's norms sit, read from its cells as the census page groups them,
    with "around" (both sides) and "output" (after the sublayer only) apart."""
    c = row.get("cells")
    if row.get("method") != "probed" or not c:
        return "unprobed"
    forms = c["placement"]
    if not forms:
        return "other"
    if len(forms) > 1:
        return "mixed"
    if ["parallel", True] in forms[0]:
        return "parallel"
    places = {p for _, p in forms[0]}
    if len(places) > 1:
        return "mixed"
    place = places.pop()
    if place in ("post", "normed_skip"):
        return "post"
    return place if place in ("pre", "around", "output") else "other"


PLACEMENTS = ("pre", "around", "output", "parallel", "post", "mixed", "other", "unprobed")

BY_CELLS = {
    "norm-rmsnorm": lambda c: "rmsnorm" in c["norm"] or "rmsnorm_scale_first" in c["norm"],
    "norm-layernorm": lambda c: any("layernorm" in k for k in c["norm"]),
    "qk-norm": lambda c: len(c["qk"]["qk"]) > 0,
    "gate": lambda c: len(c["gate"]) > 0,
    "sinks": lambda c: len(c["sinks"]) > 0,
    "sinks-learned": lambda c: "learned" in c["sinks"],
    "sinks-computed": lambda c: "computed" in c["sinks"],
    "attn-cap": lambda c: c["attn_cap"] is not None,
    "final-cap": lambda c: c["final_cap"] is not None,
    "topology-one": lambda c: c["topology"] == "one",
    "topology-streams": lambda c: c["streams"] > 1,
    "topology-streams-mixed": lambda c: c["topology"] == "streams_mixed",
    "topology-streams-unmixed": lambda c: c["topology"] == "streams",
    "topology-depth": lambda c: c["topology"] == "depth",
    "topology-gated": lambda c: c["topology"] == "gated",
    "topology-scaled": lambda c: c["topology"] == "scaled",
    "final-norm": lambda c: c["final_norm"] in ("yes", "after_collapse"),
}


def expected(data: dict, category: str) -> list[str]:
    rows = data["rows"]
    if category.startswith("placement-"):
        where = category.removeprefix("placement-")
        return [r["family"] for r in rows if placement(r) == where]
    test = BY_CELLS[category]
    return [r["family"] for r in rows if r.get("cells") and test(r["cells"])]


def test_every_category_is_tested():
    tested = {f"placement-{p}" for p in PLACEMENTS} | set(BY_CELLS)
    assert tested == set(page.CATEGORIES)


@pytest.mark.parametrize("category", list(page.CATEGORIES))
def test_a_count_is_the_number_of_rows_in_its_category(data: dict, category: str):
    want = expected(data, category)
    assert fill(f"count-{category}", data) == str(len(want))
    assert fill(f"count-{category}", data, "zh") == str(len(want))


@pytest.mark.parametrize("category", list(page.CATEGORIES))
def test_a_list_names_those_rows_each_linked_to_its_code(data: dict, category: str):
    want = expected(data, category)
    version = data["transformers"]
    for lang, sep in (("en", ", "), ("zh", "、")):
        text = fill(f"list-{category}", data, lang)
        if not want:
            assert text == "–"
            continue
        links = re.findall(r"\[`([\w-]+)`\]\(([^)]+)\)", text)
        assert [name for name, _ in links] == want
        for name, url in links:
            file = census_module.row(data, name)["file"]
            assert (
                url
                == f"https://github.com/huggingface/transformers/blob/v{version}/src/transformers/{file}"
            )
        assert text.count(sep) == len(want) - 1


def test_the_totals(data: dict):
    assert fill("count-rows", data) == str(len(data["rows"]))
    probed = [r for r in data["rows"] if r.get("method") == "probed"]
    assert fill("count-probed", data) == str(len(probed))


def test_the_placements_share_out_every_row(data: dict):
    total = sum(int(fill(f"count-placement-{p}", data)) for p in PLACEMENTS)
    assert total == len(data["rows"])


def test_the_counts_agree_with_the_census_pages_summary(data: dict):
    numbers = summary(data["rows"])

    def count(category: str) -> int:
        return int(fill(f"count-{category}", data))

    assert count("placement-pre") == numbers["pre"]
    assert count("placement-around") + count("placement-output") == numbers["around"]
    assert count("placement-output") == numbers["output"]
    for category, key in [
        ("placement-parallel", "parallel"),
        ("placement-post", "post"),
        ("placement-mixed", "mixed"),
        ("placement-unprobed", "unprobed"),
        ("norm-rmsnorm", "rmsnorm"),
        ("norm-layernorm", "layernorm"),
        ("qk-norm", "qk_norm"),
        ("gate", "gate"),
        ("sinks", "sinks"),
        ("attn-cap", "attn_cap"),
        ("final-cap", "final_cap"),
        ("topology-streams", "streams"),
        ("topology-depth", "depth"),
        ("final-norm", "final_norm"),
    ]:
        assert count(category) == numbers[key], category
    assert count("topology-gated") + count("topology-scaled") == numbers["gated"]


# --- errors -----------------------------------------------------------------------------

TINY = {"transformers": "0.0.0", "rows": []}


@pytest.mark.parametrize(
    "key", ["nope", "count-nope", "list-nope", "count-", "list-rows", "count-placement"]
)
def test_an_unknown_key_names_the_known_ones(key: str):
    with pytest.raises(page.PageError, match=rf"\[\[census:{re.escape(key)}\]\]") as err:
        page.fill(f"[[census:{key}]]", "en", TINY)
    message = str(err.value)
    assert "count-rows" in message and "list-CATEGORY" in message
    assert all(category in message for category in page.CATEGORIES)


def test_an_unknown_category_in_code_is_a_clear_error():
    with pytest.raises(page.PageError, match="no census category 'nope'; known: placement-pre"):
        page.members(TINY, "nope")


def test_an_empty_category_reads_as_none():
    assert page.fill("[[census:count-gate]] [[census:list-gate]]", "en", TINY) == "0 –"


# --- the pages that use them --------------------------------------------------------------


@pytest.mark.parametrize("source", PAGES)
def test_the_pages_fill_in_both_languages_with_the_same_keys(data: dict, source: str):
    en = (ROOT / source).read_text(encoding="utf-8")
    zh = (ROOT / source.replace(".md", ".zh.md")).read_text(encoding="utf-8")
    keys = page.MARKER.findall(en)
    assert keys, f"{source} takes no count from the census"
    assert keys == page.MARKER.findall(zh)
    for text, lang in ((en, "en"), (zh, "zh")):
        assert "[[census:" not in page.fill(text, lang, data)


# Families the decision page and the claims ledger name as examples of a category, and
# those they say are not in one: the census must agree, or the page is to be reread.
NAMED = {
    "placement-around": ["gemma4", "muse_spark", "muse_glimmer", "afmoe"],
    "placement-pre": [
        "glm_moe_dsa",
        "mistral_large4",
        "step3p7",
        "deepseek_v4",
        "hy_v4",
        "inkling2",
    ],
    "final-cap": ["inkling2", "mistral_large4", "muse_spark", "muse_glimmer", "gemma2"],
    "gate": ["qwen3_next", "qwen3_5", "inkling2", "hy_v4", "step3p7", "afmoe", "muse_spark"],
    "sinks-learned": ["gpt_oss", "deepseek_v4", "hy_v4"],
    "sinks-computed": ["inkling2"],
    "topology-streams-mixed": ["deepseek_v4", "glm5_next"],
    "topology-streams-unmixed": ["hy_v4", "qwen4_exp"],
    "topology-depth": ["inkling2"],
}
NOT_IN = {
    "final-cap": ["gemma4"],  # its config class leaves the cap at None; Google's code sets 30
    "attn-cap": ["gemma4"],
}


@pytest.mark.parametrize("category", list(NAMED))
def test_the_families_the_pages_name_are_in_their_category(data: dict, category: str):
    # A family the toy run missed this time (a timeout on a loaded machine) is read from
    # its source, which sees less: it proves nothing either way.
    for family in NAMED[category] + NOT_IN.get(category, []):
        row = census_module.row(data, family)
        if row.get("method") != "probed":
            pytest.skip(f"{family} was not probed in this census: {row.get('why')}")
    found = {r["family"] for r in page.members(data, category)}
    assert set(NAMED[category]) <= found, set(NAMED[category]) - found
    assert not set(NOT_IN.get(category, [])) & found
