"""The vector widget opened by a link that sets its controls, e.g.
``experiments/vector_widget/?placement=post&depth=24`` (the placement pages link so).

In headless Chromium against the built site, as ``test_widget.py``: a good link starts
the widget with its setting, and every number shown is the Python reference's for that
setting; a value the widget cannot use is left out, its control keeps the default and
the status line names the key, what was expected and what came. Without a browser, the
links the pages write are checked against the keys and ranges of vector-widget.js.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from snippets.vector_through_block import WIDGET_NORMS, WIDGET_PLACEMENTS, widget_weights
from tests.browser import Visit
from tests.conftest import ROOT
from tests.test_widget import JSON_PATH, URL, ZH_URL, Widget, check_shown, random_vector

SCRIPT = ROOT / "docs/javascripts/vector-widget.js"
DOCS = ROOT / "docs"

# The start a link leaves alone (START in vector-widget.js), as the status line says it.
KEPT = {
    "placement": "Pre-LN",
    "norm": "LayerNorm",
    "s": "1",
    "d": "8",
    "depth": "12",
    "seed": "0",
    "eps": "0.00001",
}
ONE_OF_PLACEMENTS = "placement must be one of post, pre, sandwich, output, none"
WHOLE = {
    "d": "d must be a whole number from 2 to 16",
    "depth": "N must be a whole number from 1 to 64",
    "seed": "The seed must be a whole number from 0 to 4294967295",
}
EXPECTED = {
    "placement": ONE_OF_PLACEMENTS,
    "norm": "norm must be one of layernorm, rmsnorm",
    "s": "s must be a number",
    "eps": "ε must be a number > 0",
    **WHOLE,
}


def said(key: str, value: str) -> str:
    """What the status line says of a value the widget leaves out."""
    return f"{EXPECTED[key]}, but the link gives {key}={value}; the widget keeps {KEPT[key]}."


@pytest.fixture(scope="module")
def weights(built_site: Path) -> dict:
    text = (built_site / JSON_PATH).read_text(encoding="utf-8")
    assert text == json.dumps(widget_weights(), separators=(",", ":"))
    return json.loads(text)


def open_with(browser, server, query: str) -> Visit:
    return Visit(browser, f"{server}{URL}?{query}")


def status_of(widget: Widget) -> str:
    return widget.root.locator(".rn-vw-status").text_content()


def chosen(widget: Widget, group: str) -> str:
    return widget.control(group).locator("input:checked").get_attribute("value")


# --- Good links ------------------------------------------------------------------------------


@pytest.mark.browser
def test_a_link_starts_the_widget_with_post_ln_at_depth_24(browser, server, weights):
    visit = open_with(browser, server, "placement=post&depth=24")
    try:
        widget = Widget(visit)
        widget.setting |= {"placement": "post", "depth": 24}
        assert chosen(widget, "placement") == "post"
        assert widget.control("depth-number").input_value() == "24"
        assert widget.control("depth-range").input_value() == "24"
        assert status_of(widget) == ""
        check_shown(widget.read(), widget.setting, weights, [])  # 25 layers, all Post-LN's
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.browser
def test_a_link_can_set_every_control(browser, server, weights):
    query = "placement=sandwich&norm=rmsnorm&s=-2.5&d=3&depth=40&seed=7&eps=1e-3&h=post"
    visit = open_with(browser, server, query)  # h= is Material's search, not the widget's
    try:
        widget = Widget(visit)
        widget.setting |= {
            "placement": "sandwich",
            "norm": "rmsnorm",
            "scale": -2.5,
            "depth": 40,
            "seed": 7,
            "eps": 1e-3,
            "x": random_vector(3, 7),
        }
        assert (chosen(widget, "placement"), chosen(widget, "norm")) == ("sandwich", "rmsnorm")
        shown = {
            name: widget.control(name).input_value()
            for name in ("d-number", "seed", "eps", "scale-number", "depth-number")
        }
        assert shown == {
            "d-number": "3",
            "seed": "7",
            "eps": "0.001",
            "scale-number": "-2.5",
            "depth-number": "40",
        }
        assert status_of(widget) == ""
        check_shown(widget.read(), widget.setting, weights, [])
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.browser
def test_a_link_followed_with_instant_navigation_sets_the_widget(browser, server, weights):
    """Material swaps pages without a reload; the link's setting arrives all the same."""
    visit = Visit(browser, server + "/experiments/vector_through_block/")
    try:
        page = visit.page
        page.evaluate(
            """() => {
                const a = document.createElement('a');
                a.href = '../vector_widget/?placement=post&depth=24';
                a.id = 'rn-test-link';
                a.textContent = 'Post-LN at depth 24';
                document.querySelector('.md-content').prepend(a);
            }"""
        )
        page.locator("#rn-test-link").click()
        page.wait_for_url(lambda url: url.endswith(URL + "?placement=post&depth=24"))
        widget = Widget(visit)
        widget.setting |= {"placement": "post", "depth": 24}
        check_shown(widget.read(), widget.setting, weights, [])
        visit.check_clean()
    finally:
        visit.close()


# --- Bad links -------------------------------------------------------------------------------

BAD = [
    ("placement", "sideways"),
    ("placement", "Post"),
    ("norm", "batchnorm"),
    ("s", "abc"),
    ("s", "Infinity"),
    ("d", "17"),
    ("d", "1"),
    ("d", "2.5"),
    ("d", "0x10"),
    ("d", ""),
    ("depth", "0"),
    ("depth", "65"),
    ("seed", "-4"),
    ("eps", "0"),
    ("eps", "-1e-3"),
    ("eps", "small"),
]


@pytest.mark.browser
@pytest.mark.parametrize(("key", "value"), BAD, ids=[f"{k}={v}" for k, v in BAD])
def test_a_bad_value_in_a_link_is_refused_and_said(browser, server, weights, key, value):
    visit = open_with(browser, server, f"{key}={value}")
    try:
        widget = Widget(visit)  # its model is the default setting
        assert status_of(widget) == said(key, value)
        assert widget.root.locator(".rn-vw-status").get_attribute("role") == "status"
        assert chosen(widget, "placement") == "pre" and chosen(widget, "norm") == "layernorm"
        for name, default in [
            ("d-number", "8"),
            ("depth-number", "12"),
            ("seed", "0"),
            ("scale-number", "1"),
            ("eps", "1e-5"),
        ]:
            control = widget.control(name)
            assert control.input_value() == default, name
            assert control.get_attribute("aria-invalid") in (None, "false"), name
        check_shown(widget.read(), widget.setting, weights, [])
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.browser
def test_a_link_keeps_its_good_values_and_the_reader_clears_the_message(browser, server, weights):
    visit = open_with(browser, server, "placement=post&d=17&eps=0&norm=rmsnorm")
    try:
        widget = Widget(visit)
        widget.setting |= {"placement": "post", "norm": "rmsnorm"}
        assert status_of(widget) == f"{said('d', '17')} {said('eps', '0')}"
        check_shown(widget.read(), widget.setting, weights, [])
        widget.type_into("d-number", "5")  # the reader sets d: its message goes
        widget.resize(5)
        assert status_of(widget) == said("eps", "0")
        widget.type_into("eps", "1e-4")
        widget.setting["eps"] = 1e-4
        assert status_of(widget) == ""
        check_shown(widget.read(), widget.setting, weights, [])
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.browser
def test_a_bad_placement_message_goes_when_the_reader_chooses_one(browser, server):
    visit = open_with(browser, server, "placement=sideways")
    try:
        widget = Widget(visit)
        assert status_of(widget) == said("placement", "sideways")
        widget.choose("placement", WIDGET_PLACEMENTS, "output")
        assert status_of(widget) == ""
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.browser
def test_the_chinese_page_says_a_bad_link_in_chinese(browser, server, built_site):
    if not (built_site / ZH_URL.lstrip("/") / "index.html").is_file():
        pytest.skip(f"the build has no Chinese edition yet (no {ZH_URL}index.html)")
    visit = Visit(browser, f"{server}{ZH_URL}?d=17&depth=24")
    try:
        visit.page.wait_for_selector('.rn-vector-widget[data-mounted="true"] .rn-vw-num')
        root = visit.page.locator(".rn-vector-widget")
        assert root.locator('[data-control="depth-number"]').input_value() == "24"
        text = root.locator(".rn-vw-status").text_content()
        assert text == "d 必须是 2 到 16 之间的整数，但链接给出的是 d=17；组件仍沿用 8。", text
        visit.check_clean()
    finally:
        visit.close()


# --- The links the pages write (no browser) ----------------------------------------------------

WIDGET_LINK = re.compile(r"\]\(((?:\.\./)*(?:experiments/)?vector_widget\.md\?[^)\s#]*)")


def script_range(name: str) -> tuple[int, int]:
    """A range the widget declares, e.g. ``const DIM = { min: 2, max: 16 };``."""
    text = SCRIPT.read_text(encoding="utf-8")
    m = re.search(rf"const {name} = \{{ min: (\d+), max: (\d+) \}};", text)
    assert m, f"vector-widget.js declares no {name}"
    return int(m[1]), int(m[2])


def link_problems(query: str) -> list[str]:
    """Why a link's query would not start the widget as written: an unknown key, a key
    twice, or a value the widget refuses."""
    d, depth = script_range("DIM"), script_range("DEPTH")
    problems = []
    pairs = parse_qsl(query, keep_blank_values=True)
    keys = [k for k, _ in pairs]
    for key, value in pairs:
        if keys.count(key) > 1:
            problems.append(f"{key} given {keys.count(key)} times")
        if key == "placement" and value not in WIDGET_PLACEMENTS:
            problems.append(f"placement={value}")
        elif key == "norm" and value not in WIDGET_NORMS:
            problems.append(f"norm={value}")
        elif key in {"d", "depth", "seed"}:
            lo, hi = {"d": d, "depth": depth, "seed": (0, 2**32 - 1)}[key]
            if not (value.isdigit() and lo <= int(value) <= hi):
                problems.append(f"{key}={value}")
        elif key in {"s", "eps"}:
            try:
                number = float(value)
            except ValueError:
                number = float("nan")
            if not (number == number and abs(number) != float("inf")) or (
                key == "eps" and number <= 0
            ):
                problems.append(f"{key}={value}")
        elif key not in {"placement", "norm"}:
            problems.append(f"unknown key {key}")
    return sorted(set(problems))


def test_the_link_keys_are_the_scripts():
    text = SCRIPT.read_text(encoding="utf-8")
    keys = re.findall(r'\{ key: "(\w+)", field:', text)
    assert sorted(keys) == sorted(EXPECTED), keys
    assert script_range("DIM") == (2, 16) and script_range("DEPTH") == (1, 64)
    assert link_problems("placement=post&depth=24") == []
    assert link_problems("placement=sideways&d=17&eps=0&x=1&depth=3&depth=4") == [
        "d=17",
        "depth given 2 times",
        "eps=0",
        "placement=sideways",
        "unknown key x",
    ]


def test_every_link_to_the_widget_sets_what_it_can():
    """Each page's link to the widget with a setting uses the widget's keys and values."""
    found, wrong = 0, []
    for page in sorted(DOCS.rglob("*.md")) + sorted(DOCS.rglob("*.py")):
        text = page.read_text(encoding="utf-8")
        for m in WIDGET_LINK.finditer(text):
            found += 1
            query = urlsplit(m[1]).query
            line = text.count("\n", 0, m.start()) + 1
            for problem in link_problems(query):
                wrong.append(f"{page.relative_to(ROOT)}:{line}: {m[1]}: {problem}")
    assert found, "no page links to the widget with a setting"
    assert not wrong, "\n".join(wrong)
