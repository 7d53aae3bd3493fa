"""The built site in a real headless Chromium (Debian's, driven by Playwright).

Each page must load with no console error and no request leaving localhost,
with its math typeset, its diagrams as inline SVG, its copy buttons, and (for
the notebook) a visible plot. Every page, at 1280 px and on a 375 px touch
screen, in light and dark mode, has no WCAG 2.1 A/AA violation that axe-core
finds, diagram text a reader can read, and nothing that scrolls sideways out of
the keyboard's reach. Screenshots go to ``test-artifacts/``: every page's first screen,
and a few pages whole.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.browser import Visit, is_foreign
from tests.conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser


PAGES = {
    "home": "/",
    "layer-norm": "/foundations/layer-norm/",
    "notebook": "/notebooks/layer_norm_activations/",
}


@pytest.mark.parametrize("name", list(PAGES))
def test_page_loads_clean(browser, server, name):
    visit = Visit(browser, server + PAGES[name])
    try:
        visit.check_clean()
        page = visit.page
        assert page.locator(".md-content").is_visible()
        if name in {"home", "layer-norm"}:
            assert page.locator(".katex").count() > 0, "math is typeset"
            assert page.locator(".katex-error").count() == 0
            assert page.locator(".arithmatex:not(:has(.katex))").count() == 0, "no raw TeX left"
            svg = page.locator("svg.uml").first
            assert svg.is_visible(), "diagram is an inline SVG"
            assert svg.bounding_box()["width"] > 100
            copy = page.locator('button.md-code__button[data-md-type="copy"]')
            assert copy.count() >= 1, "code blocks have a copy button"
        if name == "notebook":
            plot = page.locator(".jupyter-wrapper img").first
            plot.scroll_into_view_if_needed()
            assert plot.is_visible()
            assert page.evaluate("(img) => img.naturalWidth", plot.element_handle()) > 100
            assert page.locator(".jupyter-wrapper .katex").count() > 0, "notebook math is typeset"
            link = page.locator("a.rn-download")
            assert link.count() == 1
            href = page.evaluate("(a) => a.href", link.element_handle())  # resolved URL
            response = visit.context.request.get(href)
            assert response.ok and b'"cells"' in response.body(), "the executed .ipynb downloads"
        visit.screenshot(name)
    finally:
        visit.close()


def test_dark_mode_keeps_diagrams_readable(browser, server):
    visit = Visit(browser, server + PAGES["layer-norm"], color_scheme="dark")
    try:
        visit.check_clean()
        scheme = visit.page.evaluate("document.body.getAttribute('data-md-color-scheme')")
        assert scheme == "slate"
        svg_filter = visit.page.evaluate(
            "getComputedStyle(document.querySelector('svg.uml')).filter"
        )
        assert "invert" in svg_filter, "diagrams are inverted on the dark background"
        visit.screenshot("layer-norm-dark")
    finally:
        visit.close()


def test_instant_navigation_typesets_math(browser, server):
    """Material swaps pages without a reload; math on the new page is still typeset."""
    visit = Visit(browser, server + PAGES["home"])
    try:
        visit.page.locator('.md-content a[href$="foundations/layer-norm/"]').first.click()
        visit.page.wait_for_url("**/foundations/layer-norm/")
        visit.page.wait_for_selector(".katex")
        assert visit.page.locator(".arithmatex:not(:has(.katex))").count() == 0
        visit.check_clean()
    finally:
        visit.close()


def _all_pages(site: Path) -> list[str]:
    return sorted(
        "/" + p.parent.relative_to(site).as_posix() + "/" if p.parent != site else "/"
        for p in site.rglob("index.html")
        if "assets" not in p.parts and "search" not in p.parts
    )


# --- Every page, in four modes ---------------------------------------------------------
#
# One walk loads every built page (Chinese ones under /zh/ included) at two widths and
# records what the tests below check: axe-core's WCAG 2.1 A/AA rules in light and dark
# mode, console errors and requests to other hosts, typeset math, diagram text sizes,
# sideways scrolling, the notebook's width. One browser; per width a few contexts (one
# renderer process each, one per core) that take the pages in turn, axe-core injected at
# each page's start, so that axe works on one page while another one loads. Dark mode is
# the reader's switch on the same page (Material's palette toggle): the page does not load
# twice, and axe runs the rules that a colour scheme can change, the document being
# otherwise the same.

AXE = ROOT / "node_modules/axe-core/axe.min.js"
WCAG_21_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
COLOUR_RULES = {"runOnly": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]}}
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
WIDTHS = {
    "desktop": dict(viewport=DESKTOP),
    # a phone: touch and no hover, which changes what Material makes focusable
    "phone": dict(viewport=PHONE, is_mobile=True, has_touch=True),
}
MODES = [f"{width}-{scheme}" for width in WIDTHS for scheme in ("light", "dark")]
# Diagram text on screen, in CSS px: the smallest size a reader gets, per width.
SMALLEST_DIAGRAM_TEXT = {"desktop": 11, "phone": 9}

START_AXE = """(options) => {
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  window.__rnAxe = (async () => {
    await frame();  // scroll-regions.js marks what scrolls on the next frame
    await frame();
    const start = performance.now();
    const result = await axe.run(document, { ...options, resultTypes: ["violations"] });
    return {
      seconds: (performance.now() - start) / 1000,
      violations: result.violations.map((v) => ({
        rule: v.id,
        nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary}`),
      })),
    };
  })();
}"""

# Material's palette toggle: the reader's switch between light (default) and dark (slate).
SCHEME = """(scheme) => {
  document.querySelector(`input.md-option[data-md-color-scheme="${scheme}"]`).click();
  return document.body.getAttribute("data-md-color-scheme");
}"""

MEASURE = """() => {
  const diagrams = [...document.querySelectorAll("svg.uml")].map((svg) => {
    const m = svg.getScreenCTM();  // the SVG's units to CSS px, viewBox scaling included
    const scale = m ? Math.hypot(m.a, m.b) : 0;
    const sizes = [...svg.querySelectorAll("text")].map(
      (t) => parseFloat(getComputedStyle(t).fontSize) * scale);
    const box = svg.closest(".rn-diagram");
    return {
      name: (svg.querySelector(":scope > title")?.textContent || "?").slice(0, 40),
      smallest: Math.min(...sizes),
      scrolls: box ? box.scrollWidth > box.clientWidth + 1 : false,
      focusable: box ? box.tabIndex >= 0 : false,
    };
  });
  const wrapper = document.querySelector(".jupyter-wrapper");
  let notebook = null;
  if (wrapper) {
    const inner = document.querySelector(".md-content__inner");
    const style = getComputedStyle(inner);
    notebook = {
      width: wrapper.getBoundingClientRect().width,
      column: inner.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
      breakAll: [...wrapper.querySelectorAll(".jp-OutputArea-output pre")].filter(
        (pre) => getComputedStyle(pre).wordBreak === "break-all").length,
      deadSheets: [...document.styleSheets]
        .filter((s) => s.href && s.href.includes("/assets/jupyter/") && !s.cssRules.length)
        .map((s) => s.href),
    };
  }
  return {
    diagrams,
    notebook,
    hover: matchMedia("(hover: hover)").matches,
    sideways: document.documentElement.scrollWidth - window.innerWidth,
    rawTex: document.querySelectorAll(".arithmatex:not(:has(.katex)), .katex-error").length,
    umlImages: document.querySelectorAll("img[src$='.svg'][alt='uml diagram'], .uml img").length,
  };
}"""


class PageReport:
    """What one page showed in one mode."""

    def __init__(self, url: str):
        self.url = url
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.axe: dict = {}
        self.measured: dict = {}
        self.wide_code: list[str] = []


class _Slot:
    """One browser context at work on one page at a time: light, then dark."""

    def __init__(self, browser, width: str):
        # A context of its own: a renderer process of its own, so slots run in parallel.
        self.context = browser.new_context(color_scheme="light", **WIDTHS[width])
        self.context.add_init_script(path=str(AXE))
        self.page = self.context.new_page()
        self.page.on("request", self._request)
        self.page.on("console", lambda m: m.type == "error" and self.report.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.report.errors.append(str(e)))
        self.report = self.night = PageReport("")
        self.stage = "idle"

    def _request(self, request) -> None:
        if is_foreign(request.url):
            self.report.foreign.append(request.url)

    def load(self, base: str, url: str) -> None:
        self.report, self.night = PageReport(url), PageReport(url)
        response = self.page.goto(base + url, wait_until="load")
        if response is None or not response.ok:
            self.report.errors.append(f"HTTP {response and response.status}")
        self.page.evaluate(START_AXE, WCAG_21_AA)  # runs while the other slots work
        self.stage = "light"

    def to_dark(self) -> None:
        self.report.axe = self.page.evaluate("() => window.__rnAxe")
        self.report.measured = self.page.evaluate(MEASURE)
        if self.page.evaluate(SCHEME, "slate") != "slate":
            self.night.errors.append("the palette toggle did not switch to dark mode")
        self.page.evaluate(START_AXE, COLOUR_RULES)
        self.stage = "dark"

    def done_with_page(self, screenshots: bool) -> None:
        self.night.axe = self.page.evaluate("() => window.__rnAxe")
        self.night.measured = self.page.evaluate(MEASURE)
        self.page.evaluate(SCHEME, "default")  # the toggle is remembered: the next page is light
        if screenshots:
            self.report.wide_code = self.page.evaluate(NOTEBOOK_CODE_THAT_SCROLLS)
            name = self.report.url.strip("/").replace("/", "-") or "home"
            # Each page's first screen: a whole page as a picture (test_page_loads_clean
            # takes three) costs a quarter of this walk's time.
            self.page.evaluate("() => window.scrollTo(0, 0)")
            shot = ARTIFACTS / f"all-{name}.jpg"
            self.page.screenshot(path=str(shot), quality=80)
        self.stage = "idle"


def _walk_width(browser, base: str, urls: list[str], width: str, workers: int) -> dict:
    """Every page at one width, light then dark: {mode: [PageReport, ...]}."""
    ARTIFACTS.mkdir(exist_ok=True)
    queue = list(urls)
    slots = [_Slot(browser, width) for _ in range(min(workers, len(urls)))]
    reports: dict[str, list[PageReport]] = {f"{width}-light": [], f"{width}-dark": []}
    try:
        for slot in slots:
            slot.load(base, queue.pop(0))
        # Round robin: wait for one slot's axe run, give that slot its next run, go on.
        while any(slot.stage != "idle" for slot in slots):
            for slot in slots:
                if slot.stage == "light":
                    slot.to_dark()
                elif slot.stage == "dark":
                    slot.done_with_page(screenshots=width == "desktop")
                    reports[f"{width}-light"].append(slot.report)
                    reports[f"{width}-dark"].append(slot.night)
                    if queue:
                        slot.load(base, queue.pop(0))
    finally:
        for slot in slots:
            slot.context.close()
    return reports


@pytest.fixture(scope="module")
def walk(browser, server, built_site) -> dict[str, list[PageReport]]:
    """Every page in every mode; writes test-artifacts/accessibility.json with the timings."""
    pages = _all_pages(built_site)
    assert len(pages) >= 20
    workers = min(4, os.cpu_count() or 1)
    started, result, timings = time.perf_counter(), {}, {}
    for width in WIDTHS:
        t = time.perf_counter()
        result.update(_walk_width(browser, server, pages, width, workers))
        timings[width] = round(time.perf_counter() - t, 1)
    ARTIFACTS.mkdir(exist_ok=True)
    summary = {
        "pages": len(pages),
        "workers": workers,
        "wall_s": round(time.perf_counter() - started, 1),
        "wall_s_per_width": timings,
        "axe_s_per_mode": {
            mode: round(sum(r.axe.get("seconds", 0) for r in reports), 1)
            for mode, reports in result.items()
        },
        "violations": {
            mode: sum(len(v["nodes"]) for r in reports for v in r.axe.get("violations", []))
            for mode, reports in result.items()
        },
    }
    (ARTIFACTS / "accessibility.json").write_text(json.dumps(summary, indent=2) + "\n")
    return result


# The code cells of a notebook page (collapsed snippet cells opened) whose text is
# wider than the cell: the reader would have to scroll sideways.
NOTEBOOK_CODE_THAT_SCROLLS = """() => {
  document.querySelectorAll("details.rn-snippet-cell").forEach((d) => (d.open = true));
  const cells = [...document.querySelectorAll(".jupyter-wrapper .jp-InputArea-editor pre")];
  return cells
    .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
    .map((pre) => pre.textContent.split("\\n").reduce((a, b) => (a.length > b.length ? a : b)));
}"""


def test_every_page_renders_clean(walk):
    """Every built page, in every mode: no console error, no request to another host, all
    math typeset, diagrams as inline SVG; at 1280 px no notebook code scrolls sideways."""
    problems = []
    for mode, reports in walk.items():
        for r in reports:
            if r.errors or r.foreign:
                problems.append(f"{mode} {r.url}: errors {r.errors}, foreign {r.foreign}")
            if r.measured.get("rawTex"):
                problems.append(f"{mode} {r.url}: {r.measured['rawTex']} formula(s) not typeset")
            if r.measured.get("umlImages"):
                problems.append(f"{mode} {r.url}: a diagram is an image, not inline SVG")
            if r.wide_code:
                problems.append(
                    f"{r.url}: notebook code scrolls sideways at 1280 px: {r.wide_code}"
                )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode", MODES)
def test_no_axe_violation(walk, mode):
    """axe-core finds no WCAG 2.1 A or AA violation on any page, in each of the four modes."""
    reports = walk[mode]
    assert all("violations" in r.axe for r in reports), "axe ran on every page"
    found = [
        f"{r.url} [{v['rule']}] {node}"
        for r in reports
        for v in r.axe["violations"]
        for node in v["nodes"]
    ]
    assert not found, f"{len(found)} violation(s) in {mode}:\n" + "\n".join(found[:60])


def test_phone_mode_is_a_touch_screen(walk):
    """The phone modes really emulate a device without hover (Material treats those apart)."""
    for mode, reports in walk.items():
        expected = not mode.startswith("phone")
        assert {r.measured["hover"] for r in reports} == {expected}, mode


def test_diagram_text_is_legible(walk):
    """Diagram text is at least 9 px on a 375 px phone and 11 px at 1280 px; a diagram wider
    than the column scrolls in a box that the keyboard can reach, rather than shrinking."""
    problems, seen = [], 0
    for mode, reports in walk.items():
        floor = SMALLEST_DIAGRAM_TEXT[mode.split("-")[0]]
        for r in reports:
            for d in r.measured["diagrams"]:
                seen += 1
                if not d["smallest"] >= floor:
                    problems.append(f"{mode} {r.url} {d['name']!r}: {d['smallest']:.1f} px")
                if d["scrolls"] and not d["focusable"]:
                    problems.append(f"{mode} {r.url} {d['name']!r}: scrolls, not focusable")
    assert seen >= 4 * 12, "every mode saw the diagrams"
    assert not problems, "\n".join(problems)


def test_no_page_scrolls_sideways_on_a_phone(walk):
    wide = [
        f"{mode} {r.url}: {r.measured['sideways']} px"
        for mode in ("phone-light", "phone-dark")
        for r in walk[mode]
        if r.measured["sideways"] > 0
    ]
    assert not wide, "\n".join(wide)


def test_notebook_pages_use_the_full_width(walk):
    """A notebook takes the whole content column (not the part beside the page's buttons),
    its output text never breaks inside a word, and every stylesheet it links has rules."""
    problems, notebooks = [], 0
    for mode, reports in walk.items():
        for r in reports:
            nb = r.measured["notebook"]
            if nb is None:
                continue
            notebooks += 1
            if nb["width"] < nb["column"] - 1:
                problems.append(f"{mode} {r.url}: {nb['width']:.0f} of {nb['column']:.0f} px")
            if nb["breakAll"]:
                problems.append(f"{mode} {r.url}: {nb['breakAll']} output(s) break mid-word")
            if nb["deadSheets"]:
                problems.append(f"{mode} {r.url}: stylesheets without rules {nb['deadSheets']}")
    assert notebooks >= 4 * 7
    assert not problems, "\n".join(problems)
