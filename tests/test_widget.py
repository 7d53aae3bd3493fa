"""The interactive vector widget (experiments/vector_widget.md) in headless Chromium.

A reader's session, driven with the keyboard alone: sliders with the arrow keys,
Home and End, numbers typed into the fields, options chosen with the arrow keys,
the random button pressed with Enter. For each of many random settings, every
number the widget shows (its ``data-value`` and its visible text) is compared with
the float64 reference in ``snippets/vector_through_block.py`` for the same setting.
Also: the erf it implements, its random vectors, Tab order, dark mode, a 375-px
screen, instant navigation, what the page transfers, and its words: a page in
another language (the Chinese twin) gives all of them, and the numbers stay the same.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch

from snippets.vector_through_block import (
    WIDGET_FORMULAS,
    WIDGET_NORMS,
    WIDGET_PLACEMENTS,
    connection_stages,
    mean_std,
    stream_stds,
    widget_weights,
)
from tests.browser import Visit
from tests.conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser

URL = "/experiments/vector_widget/"
JSON_PATH = "assets/widget/vector_block.json"
SETTINGS = 30  # random settings driven through the widget (each about 1.5 s of keys)
TOL = 1e-5  # absolute, and relative for values beyond 1 in magnitude
NORMS = tuple(WIDGET_NORMS)
ENTRY_MIN, ENTRY_MAX, SCALE_MIN, SCALE_MAX = -10, 10, -5, 5
PAGE_BUDGET = 400_000  # bytes, gzip: the site's goal for one page


# --- The widget's random vector, in Python -------------------------------------------------


def mulberry32(seed: int):
    """The widget's generator: 32-bit integer steps, as JavaScript's Math.imul and >>> do."""
    mask = 0xFFFFFFFF
    a = seed & mask
    while True:
        a = (a + 0x6D2B79F5) & mask
        t = ((a ^ (a >> 15)) * (a | 1)) & mask
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & mask)) & mask
        yield ((t ^ (t >> 14)) & mask) / 4294967296


def random_vector(d: int, seed: int) -> list[float]:
    uniforms = mulberry32(seed)
    x = []
    for _ in range(d):
        z = -6.0
        for _ in range(12):
            z += next(uniforms)
        v = math.floor((2 + 3 * z) * 10 + 0.5) / 10
        x.append(min(ENTRY_MAX, max(ENTRY_MIN, v)))
    return x


# --- Driving the page ----------------------------------------------------------------------


class Widget:
    """The widget on a loaded page, and a model of the setting it should hold."""

    def __init__(self, visit: Visit):
        self.visit = visit
        self.page = visit.page
        self.root = self.page.locator(".rn-vector-widget")
        self.page.wait_for_selector(".rn-vector-widget[data-mounted] .rn-vw-num")
        self.setting = {
            "x": random_vector(8, 0),
            "seed": 0,
            "placement": "pre",
            "norm": "layernorm",
            "eps": 1e-5,
            "scale": 1.0,
            "depth": 12,
        }

    def control(self, name: str):
        return self.root.locator(f'[data-control="{name}"]')

    def type_into(self, name: str, text: str):
        self.control(name).focus()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.type(text)
        self.page.keyboard.press("Tab")

    def keys(self, name: str, keys: list[str]):
        self.control(name).focus()
        for key in keys:
            self.page.keyboard.press(key)

    def resize(self, d: int):
        x = self.setting["x"]
        self.setting["x"] = [x[i] if i < len(x) else 0.0 for i in range(d)]

    def set_dimension(self, d: int, how: str):
        if how == "type":
            self.type_into("d-number", str(d))
            self.resize(d)
        elif how == "home":  # every step resizes x: the model follows each one
            self.keys("d-range", ["Home"])
            self.resize(2)
            for step in range(3, d + 1):
                self.page.keyboard.press("ArrowUp")
                self.resize(step)
        else:
            self.keys("d-range", ["End"])
            self.resize(16)
            for step in range(15, d - 1, -1):
                self.page.keyboard.press("ArrowDown")
                self.resize(step)

    def choose(self, group: str, options: tuple[str, ...], value: str):
        """Arrow keys in a radio group move the choice, wrapping at the end."""
        steps = (options.index(value) - options.index(self.setting[group])) % len(options)
        self.control(group).locator("input:checked").focus()
        for _ in range(steps):
            self.page.keyboard.press("ArrowDown")
        self.setting[group] = value

    def read(self) -> dict:
        return self.root.evaluate(
            """(root) => ({
                labels: [...root.querySelectorAll('.rn-vw-label')].map((e) => e.dataset.label),
                labelTexts: [...root.querySelectorAll('.rn-vw-label')].map((e) => e.textContent),
                numbers: [...root.querySelectorAll('[data-value]')].map((e) => ({
                    key: e.dataset.key,
                    value: e.dataset.value,
                    text: e.textContent,
                    cls: e.className,
                    visible: e.getClientRects().length > 0
                        && getComputedStyle(e).visibility === 'visible',
                })),
            })"""
        )


def slider_steps(rng: random.Random, lo: int, hi: int, step: Decimal) -> tuple[list[str], float]:
    """Keys that move a slider from one end, and the value they reach (Chromium steps in
    decimal, so 0.1 steps from -10 land on -9.9, -9.8, ... exactly)."""
    count = rng.randint(0, 12)  # each key re-renders the widget (about 25 ms a key)
    if rng.random() < 0.5:
        return ["Home"] + ["ArrowUp"] * count, float(Decimal(lo) + step * count)
    return ["End"] + ["ArrowDown"] * count, float(Decimal(hi) - step * count)


def drive(widget: Widget, rng: random.Random) -> None:
    """One random setting, entered with the keyboard; the model follows."""
    s = widget.setting
    widget.set_dimension(rng.randint(2, 16), rng.choice(["type", "home", "end"]))
    d = len(s["x"])
    if rng.random() < 0.25:
        seed = rng.randrange(2**32)
        widget.type_into("seed", str(seed))
        s["seed"], s["x"] = seed, random_vector(d, seed)
    elif rng.random() < 0.25:
        widget.keys("random", ["Enter"])  # the next seed
        s["seed"] = (s["seed"] + 1) % 2**32
        s["x"] = random_vector(d, s["seed"])
    for i in rng.sample(range(d), rng.randint(0, d)):
        kind = rng.random()
        if kind < 0.5:
            text = f"{rng.uniform(-15, 15):.{rng.randint(0, 3)}f}"
            widget.type_into(f"x{i}-number", text)
            s["x"][i] = float(text)
        elif kind < 0.6:
            text = f"{rng.uniform(1, 9):.1f}e{rng.randint(-3, 1)}"
            widget.type_into(f"x{i}-number", text)
            s["x"][i] = float(text)
        else:
            keys, value = slider_steps(rng, ENTRY_MIN, ENTRY_MAX, Decimal("0.1"))
            widget.keys(f"x{i}-range", keys)
            s["x"][i] = value
    widget.choose("placement", WIDGET_PLACEMENTS, rng.choice(WIDGET_PLACEMENTS))
    widget.choose("norm", NORMS, rng.choice(NORMS))
    if rng.random() < 0.7:
        text = rng.choice(["1e-5", "1e-6", "0.001", "0.1", "1", f"{10 ** rng.uniform(-8, 0):.3g}"])
        widget.type_into("eps", text)
        s["eps"] = float(text)
    if rng.random() < 0.5:
        text = f"{rng.uniform(-3, 3):.2f}"
        widget.type_into("scale-number", text)
        s["scale"] = float(text)
    else:
        keys, s["scale"] = slider_steps(rng, SCALE_MIN, SCALE_MAX, Decimal("0.1"))
        widget.keys("scale-range", keys)
    if rng.random() < 0.5:
        s["depth"] = rng.randint(1, 64)
        widget.type_into("depth-number", str(s["depth"]))
    else:
        count = rng.randint(0, 30)
        if rng.random() < 0.5:
            widget.keys("depth-range", ["Home"] + ["ArrowUp"] * count)
            s["depth"] = 1 + count
        else:
            widget.keys("depth-range", ["End"] + ["ArrowDown"] * count)
            s["depth"] = 64 - count


def expected_numbers(setting: dict, weights: dict) -> tuple[list[str], dict[str, float]]:
    """The stage labels and every number the widget should show, from the Python reference."""
    x = torch.tensor(setting["x"], dtype=torch.float64)
    args = (setting["placement"], setting["norm"], setting["eps"], setting["scale"])
    stages = connection_stages(x, weights, *args)
    numbers = {}
    for i, v in enumerate(stages.values()):
        numbers |= {f"stage.{i}.entry.{j}": t for j, t in enumerate(v.tolist())}
        numbers[f"stage.{i}.mean"], numbers[f"stage.{i}.std"] = mean_std(v)
    stds = stream_stds(x, weights, *args, depth=setting["depth"])
    numbers |= {f"depth.std.{layer}": t for layer, t in enumerate(stds)}
    finite = [t for t in stds if math.isfinite(t)]
    numbers["depth.min"], numbers["depth.max"] = min(finite), max(finite)
    return list(stages), numbers


SHOWN = re.compile(r"^-?\d+\.\d{4}$|^-?\d\.\d{4}e[+-]\d+$")


def check_shown(shown: dict, setting: dict, weights: dict, errors: list[tuple[float, float]]):
    labels, expected = expected_numbers(setting, weights)
    assert shown["labels"] == labels == shown["labelTexts"]
    numbers = {n["key"]: n for n in shown["numbers"]}
    assert len(numbers) == len(shown["numbers"]), "each number once"
    assert set(numbers) == set(expected), sorted(set(numbers) ^ set(expected))
    for key, want in expected.items():
        n = numbers[key]
        assert n["visible"] and "rn-vw-num" in n["cls"], key
        value = float(n["value"])
        if key.startswith("stage.0.entry."):  # x itself: exactly what the keys entered
            assert value == setting["x"][int(key.rsplit(".", 1)[1])], (key, value, setting)
        error = abs(value - want)
        assert error <= TOL * max(1.0, abs(want)), (key, value, want, setting)
        errors.append((error, abs(want)))
        # the visible text is the value to 4 decimals (or 5 significant digits from 1e5 up)
        text = n["text"]
        assert SHOWN.match(text) and text != "-0.0000", (key, text)
        limit = 5e-5 * (abs(value) if "e" in text else 1.0) * (1 + 1e-9)
        assert abs(float(text) - value) <= limit, (key, text, value)


@pytest.fixture(scope="module")
def weights(built_site: Path) -> dict:
    """The weights the built site serves; they must be widget_weights() itself."""
    text = (built_site / JSON_PATH).read_text(encoding="utf-8")
    assert text == json.dumps(widget_weights(), separators=(",", ":"))
    return json.loads(text)


@pytest.fixture
def visit(browser, server):
    v = Visit(browser, server + URL)
    yield v
    v.close()


# --- The numbers -------------------------------------------------------------------------


def test_every_number_matches_the_python_reference(visit, weights):
    widget = Widget(visit)
    errors: list[tuple[float, float]] = []
    check_shown(widget.read(), widget.setting, weights, errors)  # the start: seed 0, Pre-LN
    rng = random.Random(20250101)
    seen = {"placement": set(), "norm": set(), "d": set()}
    for _ in range(SETTINGS):
        drive(widget, rng)
        check_shown(widget.read(), widget.setting, weights, errors)
        seen["placement"].add(widget.setting["placement"])
        seen["norm"].add(widget.setting["norm"])
        seen["d"].add(len(widget.setting["x"]))
    assert seen["placement"] == set(WIDGET_PLACEMENTS) and seen["norm"] == set(NORMS)
    assert len(seen["d"]) >= 10
    visit.check_clean()
    small = max(e for e, w in errors if w <= 1)
    large = max((e / w for e, w in errors if w > 1), default=0.0)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "widget-agreement.json").write_text(
        json.dumps(
            {
                "settings": SETTINGS + 1,
                "numbers_compared": len(errors),
                "max_abs_error": max(e for e, _ in errors),
                "max_abs_error_where_value_at_most_1": small,
                "max_rel_error_where_value_above_1": large,
            },
            indent=1,
        )
    )
    visit.screenshot("widget-after-settings")


def test_widget_at_d8_is_the_notebooks_f(weights):
    """Seed 1 for every d: at d = 8 the widget's F is the notebook's FeedForward(8, 32)."""
    from snippets.resnorm import FeedForward

    torch.manual_seed(1)
    f = FeedForward(8, 32).double()
    x = torch.tensor(random_vector(8, 0), dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(connection_stages(x, weights, "post")["F(x)"], f(x))


def test_erf_and_gelu_match_python_and_torch(visit):
    rng = random.Random(0)
    xs = [i / 64 for i in range(-448, 449)]  # -7 .. 7, with 1.75 and 6 on the grid
    xs += [rng.uniform(-7, 7) for _ in range(3000)] + [rng.uniform(-2.5, 2.5) for _ in range(3000)]
    xs += [10.0 ** rng.uniform(-300, 0) * rng.choice([-1, 1]) for _ in range(500)]
    xs += [0.0, 1.75, -1.75, 1.75 - 2**-52, 6.0, 6.0 - 2**-50, 30.0, -30.0, 1e-310]
    got = visit.page.evaluate(
        "(xs) => xs.map((x) => [ResNormVectorWidget.erf(x), ResNormVectorWidget.gelu(x)])",
        xs,
    )
    t = torch.tensor(xs, dtype=torch.float64)
    torch_erf = torch.erf(t).tolist()
    torch_gelu = torch.nn.functional.gelu(t).tolist()
    worst_abs = worst_rel = worst_gelu = 0.0
    for x, (erf, gelu), te, tg in zip(xs, got, torch_erf, torch_gelu, strict=True):
        for reference in (math.erf(x), te):
            worst_abs = max(worst_abs, abs(erf - reference))
            if reference:
                worst_rel = max(worst_rel, abs(erf - reference) / abs(reference))
        worst_gelu = max(worst_gelu, abs(gelu - tg) / max(1.0, abs(tg)))
    assert worst_abs <= 2e-15, worst_abs  # about 10 units in the last place of 1
    assert worst_rel <= 4e-15, worst_rel  # for tiny x too, where erf(x) is tiny
    assert worst_gelu <= 4e-15, worst_gelu
    nan = visit.page.evaluate("Number.isNaN(window.ResNormVectorWidget.erf(NaN))")
    assert nan
    visit.check_clean()


def test_random_vectors_are_the_documented_generator(visit):
    for d, seed in [(2, 0), (8, 0), (16, 1), (16, 4294967295), (5, 123456789)]:
        got = visit.page.evaluate(
            "([d, seed]) => window.ResNormVectorWidget.randomVector(d, seed)", [d, seed]
        )
        assert got == random_vector(d, seed)
    shown = {n["key"]: float(n["value"]) for n in Widget(visit).read()["numbers"]}
    assert [shown[f"stage.0.entry.{i}"] for i in range(8)] == random_vector(8, 0)  # the start
    visit.check_clean()


# --- A reader's use ----------------------------------------------------------------------


def test_controls_offer_the_references_placements_and_norms(visit):
    widget = Widget(visit)
    options = widget.root.evaluate(
        """(root) => ['placement', 'norm'].map((group) =>
            [...root.querySelectorAll(`[data-control=${group}] input`)].map((input) => [
                input.value,
                input.parentElement.querySelector('code')?.textContent ?? null,
            ]))"""
    )
    assert options[0] == [[p, WIDGET_FORMULAS[p]] for p in WIDGET_PLACEMENTS]
    assert options[1] == [[n, None] for n in WIDGET_NORMS]
    visit.check_clean()


def test_bad_typed_values_are_kept_out_and_said(visit, weights):
    widget = Widget(visit)
    before = widget.read()
    status = widget.root.locator(".rn-vw-status")
    for name, text, message in [
        ("eps", "0", "ε must be a number > 0"),
        ("eps", "-1e-3", "ε must be a number > 0"),
        ("d-number", "17", "d must be a whole number from 2 to 16"),
        ("depth-number", "0", "N must be a whole number from 1 to 64"),
        ("seed", "-4", "The seed must be a whole number from 0 to 4294967295"),
    ]:
        box = widget.control(name)
        box.focus()
        visit.page.keyboard.press("Control+A")
        visit.page.keyboard.type(text)
        assert box.get_attribute("aria-invalid") == "true"
        assert message in status.text_content() and "the widget keeps" in status.text_content()
        assert widget.read() == before, f"{name} = {text!r} changed the numbers"
        visit.page.keyboard.press("Tab")  # leaving the field puts the kept value back
        assert box.get_attribute("aria-invalid") == "false" and status.text_content() == ""
    assert widget.control("eps").input_value() == "0.00001"
    check_shown(widget.read(), widget.setting, weights, [])
    visit.check_clean()


def test_every_control_is_reached_with_tab_in_order(visit):
    Widget(visit)
    page = visit.page
    page.locator(".md-content p a").first.focus()  # the link just above the widget
    stops = []
    for _ in range(200):
        page.keyboard.press("Tab")
        where = page.evaluate(
            """() => {
                const e = document.activeElement;
                if (!e.closest('.rn-vector-widget')) return null;
                const group = e.closest('fieldset[data-control]');
                return e.type === 'radio' ? group.dataset.control : e.dataset.control;
            }"""
        )
        if where is None and stops:
            break
        if where is not None:
            stops.append(where)
    entries = [f"x{i}-{kind}" for i in range(8) for kind in ("range", "number")]
    assert stops == [
        "d-range",
        "d-number",
        "seed",
        "random",
        *entries,
        "placement",
        "norm",
        "eps",
        "scale-range",
        "scale-number",
        "depth-range",
        "depth-number",
    ]
    visit.check_clean()


def _contrast(page, selector: str) -> float:
    """WCAG contrast of an element's colour (text, or background for a bar) against what
    is behind it, with translucent colours composited."""
    return page.evaluate(
        """(selector) => {
            const e = document.querySelector(selector);
            const rgba = (s) => {
                const v = s.match(/[\\d.]+/g).map(Number);
                return v.length === 3 ? [...v, 1] : v;
            };
            const over = (f, b) => f.slice(0, 3).map((c, i) => f[3] * c + (1 - f[3]) * b[i]);
            const behind = (node) => {
                const layers = [];
                for (let n = node; n; n = n.parentElement) {
                    const c = rgba(getComputedStyle(n).backgroundColor);
                    if (c[3] > 0) layers.push(c);
                    if (c[3] === 1) break;
                }
                return layers.reverse().reduce((b, f) => over(f, b), [255, 255, 255]);
            };
            const lum = (c) => {
                const lin = (v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
                const l = c.map((v) => lin(v / 255));
                return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
            };
            const isBar = e.classList.contains('rn-vw-bar');
            const back = behind(isBar ? e.parentElement : e);  // a bar sits on its track
            const style = getComputedStyle(e);
            const own = rgba(isBar ? style.backgroundColor : style.color);
            const [a, b] = [lum(over(own, back)), lum(back)];
            return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        }""",
        selector,
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_readable_in_light_and_dark_mode(browser, server, scheme):
    visit = Visit(browser, server + URL, color_scheme=scheme)
    try:
        widget = Widget(visit)
        expected = "slate" if scheme == "dark" else "default"
        assert visit.page.evaluate("document.body.dataset.mdColorScheme") == expected
        widget.choose("placement", WIDGET_PLACEMENTS, "post")  # bars of both signs
        assert _contrast(visit.page, ".rn-vw-num") >= 4.5
        assert _contrast(visit.page, ".rn-vw-label") >= 4.5
        assert _contrast(visit.page, ".rn-vector-widget input[type=number]") >= 4.5
        assert _contrast(visit.page, ".rn-vector-widget legend") >= 4.5
        assert _contrast(visit.page, ".rn-vw-bar.rn-vw-pos") >= 3
        assert _contrast(visit.page, ".rn-vw-bar.rn-vw-neg") >= 3
        line = visit.page.evaluate("getComputedStyle(document.querySelector('.rn-vw-line')).stroke")
        bar = visit.page.evaluate(
            "getComputedStyle(document.querySelector('.rn-vw-bar.rn-vw-pos')).backgroundColor"
        )
        assert line == bar, "the chart's line has the bars' colour"
        visit.check_clean()
        visit.screenshot(f"widget-{scheme}")
    finally:
        visit.close()


def test_fits_a_375px_screen(visit, weights):
    page = visit.page
    page.set_viewport_size({"width": 375, "height": 800})
    page.reload(wait_until="networkidle")
    widget = Widget(visit)
    widget.set_dimension(16, "type")  # the widest setting: 16 entries, the longest labels
    widget.choose("placement", WIDGET_PLACEMENTS, "sandwich")
    widget.choose("norm", NORMS, "rmsnorm")
    widget.type_into("depth-number", "64")
    widget.setting["depth"] = 64
    widget.type_into("x3-number", "-123456.789")  # a long number
    widget.setting["x"][3] = -123456.789
    check_shown(widget.read(), widget.setting, weights, [])
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 375
    right = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.rn-vector-widget *')]"
        ".map((e) => e.getBoundingClientRect().right))"
    )
    assert right <= 375
    visit.check_clean()
    visit.screenshot("widget-375px")


def test_mounts_after_instant_navigation(browser, server, weights):
    """Material swaps pages without a reload; the widget mounts on the new page all the same."""
    visit = Visit(browser, server + "/experiments/vector_through_block/")
    try:
        page = visit.page
        page.locator('.md-content a[href$="vector_widget/"]').first.click()
        page.wait_for_url("**" + URL)
        widget = Widget(visit)
        check_shown(widget.read(), widget.setting, weights, [])
        page.go_back()
        page.wait_for_url("**/vector_through_block/")
        page.go_forward()
        page.wait_for_url("**" + URL)
        page.wait_for_selector(".rn-vector-widget[data-mounted] .rn-vw-num")
        assert page.locator(".rn-vector-widget").count() == 1
        visit.check_clean()
    finally:
        visit.close()


def test_page_transfer_stays_within_budget(browser, server, built_site):
    """Everything Chromium loads for the page but the search index, gzip-compressed as a
    server would send it (as scripts/bench_site.py measures every page)."""
    loaded: set[str] = set()
    foreign: list[str] = []
    context = browser.new_context()  # a fresh cache: everything is fetched
    try:
        page = context.new_page()
        page.on("requestfinished", lambda r: loaded.add(urlsplit(r.url).path))
        page.on(
            "request", lambda r: urlsplit(r.url).hostname == "127.0.0.1" or foreign.append(r.url)
        )
        page.goto(server + URL, wait_until="networkidle")
        page.wait_for_selector(".rn-vector-widget[data-mounted] .rn-vw-num")
    finally:
        context.close()
    assert not foreign, foreign
    sizes = {}
    for path in loaded:
        if "search_index" in path or "/search/" in path:
            continue
        file = built_site / path.lstrip("/")
        if file.is_dir():
            file = file / "index.html"
        if file.is_file():
            sizes[path] = len(gzip.compress(file.read_bytes(), 6))
    assert "/" + JSON_PATH in sizes, "the weights come from the site itself"
    assert "/javascripts/vector-widget.js" in sizes
    total = sum(sizes.values())
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "widget-page-weight.json").write_text(
        json.dumps({"total_gzip": total, "files": dict(sorted(sizes.items()))}, indent=1)
    )
    assert sizes["/" + JSON_PATH] <= 80_000
    assert total <= PAGE_BUDGET, f"{total} bytes gzip: {sizes}"


# --- The words of another language ----------------------------------------------------------

ZH_SOURCE = ROOT / "docs/experiments/vector_widget.zh.md"
ZH_URL = "/zh/experiments/vector_widget/"
STRINGS_BLOCK = re.compile(
    r'<script type="application/json" class="rn-vw-strings">(.*?)</script>', re.DOTALL
)
# English words a Chinese text keeps: the names of the norms and of the placements
KEPT_NAMES = {"LayerNorm", "RMSNorm", "Pre", "Post", "Peri", "OLMo"}
WORD = re.compile(r"[A-Za-z]{3,}")  # shorter runs are symbols: x, d, s, N, LN, F


def chinese_strings() -> str:
    """The JSON the Chinese page puts in the widget's element."""
    blocks = STRINGS_BLOCK.findall(ZH_SOURCE.read_text(encoding="utf-8"))
    assert len(blocks) == 1, f"{ZH_SOURCE.name}: one block of widget strings"
    return blocks[0]


def words_of(root) -> list[str]:
    """The words a reader sees or hears in a mounted widget: its text outside formulas and
    numbers, and every aria-label."""
    return root.evaluate(
        """(root) => {
            const out = [];
            const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let n; (n = walk.nextNode()); ) {
                if (!n.parentElement.closest('code, script, .rn-vw-num')) out.push(n.textContent);
            }
            for (const e of root.querySelectorAll('[aria-label]')) {
                out.push(e.getAttribute('aria-label'));
            }
            return out;
        }"""
    )


def english_words(texts: list[str]) -> set[str]:
    return {w for t in texts for w in WORD.findall(t)} - KEPT_NAMES


def numbers_of(root) -> list[tuple[str, str, str]]:
    return root.evaluate(
        """(root) => [...root.querySelectorAll('[data-value]')].map(
            (e) => [e.dataset.key, e.dataset.value, e.textContent])"""
    )


def check_chinese(zh, en, page) -> None:
    """The Chinese widget `zh`, at its start, against the English one `en`."""
    assert len(english_words(words_of(en))) > 20, "the check can see English"
    assert not english_words(words_of(zh)), sorted(english_words(words_of(zh)))
    assert numbers_of(zh) == numbers_of(en), "the same numbers, shown the same way"
    assert [e.text_content() for e in zh.locator(".rn-vw-label").all()] == [
        e.text_content() for e in en.locator(".rn-vw-label").all()
    ], "the stage labels are formulas, the same in every language"
    box = zh.locator('[data-control="eps"]')  # a value it cannot use: said in Chinese
    box.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("0")
    said = zh.locator(".rn-vw-status").text_content()
    assert said and not english_words([said]) and "0.00001" in said, said
    page.keyboard.press("Tab")
    assert zh.locator(".rn-vw-status").text_content() == ""


def test_a_page_gives_the_widget_its_words(visit):
    """The Chinese strings, mounted in a second widget on the English page: every word
    comes from the page, none is left in English, and the numbers are the English ones."""
    page = visit.page
    Widget(visit)
    text = chinese_strings()
    defaults = page.evaluate("Object.keys(window.ResNormVectorWidget.STRINGS)")
    assert sorted(json.loads(text)) == sorted(defaults), "every string, and only those"
    page.evaluate(
        """(text) => {
            const root = document.createElement('div');
            root.className = 'rn-vector-widget';
            root.id = 'rn-vw-zh';
            const block = document.createElement('script');
            block.type = 'application/json';
            block.className = 'rn-vw-strings';
            block.textContent = text;
            root.append(block);
            document.querySelector('.rn-vector-widget').after(root);
            window.ResNormVectorWidget.mountAll();
        }""",
        text,
    )
    page.wait_for_selector('#rn-vw-zh[data-mounted="true"] .rn-vw-num')
    zh = page.locator("#rn-vw-zh")
    en = page.locator(".rn-vector-widget:not(#rn-vw-zh)")
    check_chinese(zh, en, page)
    assert numbers_of(zh) == numbers_of(en)  # the status message changed no number
    visit.check_clean()
    ARTIFACTS.mkdir(exist_ok=True)
    zh.screenshot(path=str(ARTIFACTS / "widget-zh-strings.png"))


def test_the_chinese_page_shows_the_widget_in_chinese(browser, server, built_site):
    if not (built_site / ZH_URL.lstrip("/") / "index.html").is_file():
        pytest.skip(f"the build has no Chinese edition yet (no {ZH_URL}index.html)")
    zh, en = Visit(browser, server + ZH_URL), Visit(browser, server + URL)
    try:
        for v in (zh, en):
            v.page.wait_for_selector('.rn-vector-widget[data-mounted="true"] .rn-vw-num')
        assert zh.page.evaluate("document.documentElement.lang").startswith("zh")
        check_chinese(
            zh.page.locator(".rn-vector-widget"), en.page.locator(".rn-vector-widget"), zh.page
        )
        zh.check_clean()
        en.check_clean()
        zh.screenshot("widget-zh")
    finally:
        zh.close()
        en.close()
