"""The built site in a real headless Chromium (Debian's, driven by Playwright).

One walk loads every built page (the Chinese ones under /zh/ included) at 1280 px and on
a 375 px touch screen, each in light and in dark mode, and measures on each: no console
error and no request leaving localhost, math typeset, diagrams as inline SVG drawn wide
enough and with text a reader can read, a copy button on every code block, notebook plots
drawn and the executed notebook downloadable, the notebook at full width, nothing that
scrolls sideways on a phone, and every box that scrolls within the keyboard's reach.
Screenshots go to ``test-artifacts/``: every page's first screen, and a few pages whole.

axe-core's WCAG 2.1 A/AA rules run where their result can differ, by this rule:

* Desktop, light: every rule on every page, the Chinese ones included (their titles,
  headings, link texts and picture descriptions are their own). The passes below repeat
  parts of this one.
* Dark mode runs axe's colour rules only: the palette switch changes colours, and the
  document is otherwise the same. Every English page gets them at desktop width: each
  page's content brings its own kinds of element (code in several languages, notebook
  cells, tables, admonitions, the widget).
* On a phone, every rule (light) and the colour rules (dark) run on PHONE_SAMPLE. What a
  touch screen 375 px wide changes is what Material's templates and scripts show, hide and
  make focusable, the same on every page with the same parts; the sample holds every part,
  and every kind of page where a phone-only or dark-only problem was found (see there).
* Any other page, in any mode, gets the colour rules if it shows a colour combination
  (text colour on its background, with size, weight, opacity, underline, and a link's
  surrounding colour) that no page checked in that scheme has shown. A Chinese page has its
  English twin's templates, stylesheets, code blocks and diagrams, and a phone the same
  stylesheets, so they rarely show a new one; the walk lists every page's combinations in
  every mode (a cheap measurement), so that one shown only on a phone or only on a Chinese
  page is checked all the same.

The part of the phone's full pass that depends on each page's content, the boxes that
scroll at 375 px (Material takes the code blocks' tabindex away on touch screens, which
scroll-regions.js puts back), is measured on every page in every mode instead, as axe's
scrollable-region-focusable rule asks. Pages open as a reader's first visit: at 1280 px with
a light system setting, on the phone with a dark one (Material follows it); the other scheme
is Material's palette toggle on the same page, so no page loads twice.

axe's verdict on a page in a mode is kept in the cache under a hash of all it depends on
(the page, the site's stylesheets and scripts, axe, the browser, and how the walk brings the
page to axe: AxeVerdicts):
a run after an edit checks the pages that changed, and every page still loads and is
measured in every mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from tests.browser import Visit, is_foreign
from tests.conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.browser


def test_instant_navigation_typesets_math(browser, server):
    """Material swaps pages without a reload; math on the new page is still typeset."""
    visit = Visit(browser, server + "/")
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
# One browser; per width a few contexts (one renderer process each, one per core) that
# take the pages in turn, axe-core injected at each page's start, so that axe works on one
# page while another one loads.

AXE = ROOT / "node_modules/axe-core/axe.min.js"
RULES = {
    "wcag": {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}},
    "colour": {"runOnly": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]}},
}
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
WIDTHS = {
    "desktop": dict(viewport=DESKTOP, color_scheme="light"),
    # a phone: touch and no hover, which changes what Material makes focusable
    "phone": dict(viewport=PHONE, is_mobile=True, has_touch=True, color_scheme="dark"),
}
# The scheme a page opens in (the system setting), then the one the toggle switches to.
SCHEMES = {"desktop": ("light", "dark"), "phone": ("dark", "light")}
MATERIAL = {"light": "default", "dark": "slate"}  # Material's names for the two schemes
MODES = [f"{width}-{scheme}" for width in WIDTHS for scheme in ("light", "dark")]
# Diagram text on screen, in CSS px: the smallest size a reader gets, per width.
SMALLEST_DIAGRAM_TEXT = {"desktop": 11, "phone": 9}

# The pages axe checks in full on a phone, and with the colour rules in dark mode there:
# every kind of page and part, and every page kind where a phone-only or dark-only problem
# was found. The home page (content tabs, a diagram, code, tables); a chapter page with
# diagrams and content tabs; A small GPT (its diagram scrolled on a phone until its
# longest line was broken); a notebook (cells, a collapsed snippet cell, plots, math;
# Jupyter's code colours fell short of 4.5:1); the interactive widget (a layout
# of its own on narrow screens, colours of its own in dark mode, the page's buttons, whose
# indigo was 2.3:1 in dark mode); and a Chinese page: the twin of A small GPT, whose
# Chinese diagram needed line breaks of its own. All but the notebook and the widget hold
# Material's code blocks, which lost their tabindex on touch screens and whose syntax
# colours and links fell short in dark mode.
PHONE_SAMPLE = (
    "/",
    "/placement/post-ln/",
    "/models/gpt/",
    "/notebooks/layer_norm_activations/",
    "/experiments/vector_widget/",
    "/zh/models/gpt/",
)

# Pages also kept whole as pictures, light and dark, with what each must show.
WHOLE_PAGES = {
    "/": "home",
    "/foundations/layer-norm/": "layer-norm",
    "/notebooks/layer_norm_activations/": "notebook",
}
WHOLE_PAGES_DARK = {"/foundations/layer-norm/": "layer-norm-dark"}

# Each page is a first visit: nothing remembered from the page before (the palette chosen
# with the toggle, above all), so the system setting decides the scheme it opens in.
FIRST_VISIT = "try { localStorage.clear(); } catch (e) {}  // about:blank has no storage"

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
}"""

# Every combination of colours that text on the page is drawn in, as axe's colour rules
# see it: the text's colour, the backgrounds behind it (down to an opaque one), opacity,
# size and weight (large text has a lower threshold), underline and shadow, and for text in
# a link the colour of the text around it. Pages with the same combinations get the same
# answer from the colour rules.
COLOURS = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  await frame();  // the palette and scroll-regions.js settle on the next frames
  await frame();
  const behind = new Map();
  const background = (el) => {
    if (!el) return "";
    if (!behind.has(el)) {
      const style = getComputedStyle(el);
      const own = style.backgroundColor;
      let value = own;
      if (own === "rgba(0, 0, 0, 0)") value = background(el.parentElement);
      else if (!own.startsWith("rgb(")) value = `${own} on ${background(el.parentElement)}`;
      if (style.backgroundImage !== "none") value = `image ${value}`;
      behind.set(el, value);
    }
    return behind.get(el);
  };
  const alpha = new Map();
  const opacity = (el) => {
    if (!el) return 1;
    if (!alpha.has(el)) {
      alpha.set(el, parseFloat(getComputedStyle(el).opacity) * opacity(el.parentElement));
    }
    return alpha.get(el);
  };
  const keys = new Set();
  const done = new Set();
  const text = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = text.nextNode(); node; node = text.nextNode()) {
    const el = node.parentElement;
    if (!el || done.has(el) || !node.data.trim()) continue;
    done.add(el);
    // axe leaves out text that is not drawn: hidden, or fully transparent
    const drawn = { visibilityProperty: true, opacityProperty: true };
    if (!el.checkVisibility({ ...drawn, checkVisibilityCSS: true, checkOpacity: true })) continue;
    const s = getComputedStyle(el);
    const link = el.closest("a");
    keys.add([
      s.color, background(el), opacity(el).toFixed(2), s.fontSize, s.fontWeight,
      s.textDecorationLine, s.textShadow, link ? getComputedStyle(link.parentElement).color : "",
    ].join(" | "));
  }
  return [...keys].sort();
}"""

MEASURE = """() => {
  const shown = (el) => el.getClientRects().length > 0;
  const diagrams = [...document.querySelectorAll("svg.uml")].map((svg) => {
    const m = svg.getScreenCTM();  // the SVG's units to CSS px, viewBox scaling included
    const scale = m ? Math.hypot(m.a, m.b) : 0;
    const sizes = [...svg.querySelectorAll("text")].map(
      (t) => parseFloat(getComputedStyle(t).fontSize) * scale);
    const box = svg.closest(".rn-diagram");
    return {
      name: (svg.querySelector(":scope > title")?.textContent || "?").slice(0, 40),
      shown: shown(svg),
      width: svg.getBoundingClientRect().width,
      smallest: Math.min(...sizes),
      scrolls: box ? box.scrollWidth > box.clientWidth + 1 : false,
      focusable: box ? box.tabIndex >= 0 : false,
      filter: getComputedStyle(svg).filter,
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
      math: wrapper.querySelectorAll(".katex").length,
      plots: [...wrapper.querySelectorAll("img")].map((img) => ({
        shown: shown(img),
        naturalWidth: img.naturalWidth,
      })),
    };
  }
  // A box that scrolls is reached with the keyboard: it takes the focus, or holds
  // something that does (axe's scrollable-region-focusable).
  const FOCUSABLE = 'a[href], button, input, select, textarea, summary, [tabindex]';
  const SCROLLING = new Set(["auto", "scroll"]);
  const unreachable = [...document.body.querySelectorAll("*")]
    .filter((el) => {
      if (el.tabIndex >= 0 || !shown(el)) return false;
      const style = getComputedStyle(el);
      const wide = el.scrollWidth > el.clientWidth + 1 && SCROLLING.has(style.overflowX);
      const tall = el.scrollHeight > el.clientHeight + 1 && SCROLLING.has(style.overflowY);
      if (!wide && !tall) return false;
      const inside = [...el.querySelectorAll(FOCUSABLE)].some((e) => e.tabIndex >= 0);
      return !inside && el.textContent.trim() !== "";
    })
    .map((el) => `${el.tagName.toLowerCase()}.${[...el.classList].join(".")}`);
  const code = [...document.querySelectorAll(".md-content pre > code")];
  const content = document.querySelector(".md-content");
  return {
    diagrams,
    notebook,
    unreachable,
    content: content !== null && shown(content),
    scheme: document.body.getAttribute("data-md-color-scheme"),
    hover: matchMedia("(hover: hover)").matches,
    sideways: document.documentElement.scrollWidth - window.innerWidth,
    math: document.querySelectorAll(".md-content .katex").length,
    rawTex: document.querySelectorAll(".arithmatex:not(:has(.katex)), .katex-error").length,
    umlImages: document.querySelectorAll("img[src$='.svg'][alt='uml diagram'], .uml img").length,
    codeBlocks: code.length,
    withoutCopy: code.filter((c) => !c.parentElement.querySelector(
      'button.md-code__button[data-md-type="copy"]')).length,
    downloads: [...document.querySelectorAll("a.rn-download")].map((a) => a.href),
  };
}"""

# The code cells of a notebook page (collapsed snippet and long cells opened) whose text is
# wider than the cell: the reader would have to scroll sideways. A snippet fold's code waits
# in a template until it opens (docs/javascripts/folds.js): the folds still waiting for it
# after a second are counted, as a fold that opened empty.
NOTEBOOK_CODE_THAT_SCROLLS = """async () => {
  document.querySelectorAll("details.rn-snippet-cell, details.rn-code-cell")
    .forEach((d) => (d.open = true));
  const waiting = () => document.querySelectorAll("details[open] > template.rn-later").length;
  for (let i = 0; waiting() && i < 100; i++) await new Promise((done) => setTimeout(done, 10));
  const cells = [...document.querySelectorAll(".jupyter-wrapper .jp-InputArea-editor pre")];
  return {
    waiting: waiting(),
    wide: cells
      .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
      .map((pre) => pre.textContent.split("\\n").reduce((a, b) => (a.length > b.length ? a : b))),
  };
}"""


def site_fingerprint(site: Path, browser_version: str) -> bytes:
    """Everything axe's verdict on a page depends on besides the page's own HTML: the
    site's stylesheets, scripts, fonts and data the page loads, axe, the browser, and how
    the walk brings a page to axe (viewport, scheme, first visit, the rules). A verdict
    kept under it and the page (``AxeVerdicts``) cannot stand for a page that would render
    differently."""
    walk = json.dumps([WIDTHS, SCHEMES, MATERIAL, RULES, FIRST_VISIT, SCHEME, START_AXE])
    h = hashlib.sha256()
    for part in (browser_version.encode(), AXE.read_bytes(), walk.encode()):
        h.update(part + b"\0")
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site).as_posix()
        skip = path.suffix in {".html", ".ipynb", ".xml", ".gz"} or "search_index" in rel
        if path.is_file() and not skip:  # the search index loads on use, not with the page
            h.update(rel.encode() + b"\0" + path.read_bytes())
    return h.digest()


class AxeVerdicts:
    """axe's result for a page in a mode with a set of rules, kept between test runs in
    the cache (resnorm_site.paths, ``axe/``) under a hash of everything it depends on: the
    page's HTML, ``site_fingerprint``, the mode and the rules. A warm run checks each page
    that changed; a verdict with violations is kept too, so it fails again."""

    def __init__(self, site: Path, fingerprint: bytes):
        from resnorm_site import paths

        self.site, self.fingerprint = site, fingerprint
        self.folder = paths.cache_root() / "axe"
        self.read: set[str] = set()

    def path(self, url: str, mode: str, rules: str) -> Path:
        page = self.site / url.strip("/") / "index.html"
        h = hashlib.sha256(self.fingerprint + page.read_bytes())
        h.update(f"\0{mode}\0{rules}".encode())
        return self.folder / f"{h.hexdigest()[:32]}.json"

    def get(self, url: str, mode: str, rules: str) -> dict | None:
        path = self.path(url, mode, rules)
        try:
            verdict = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        self.read.add(path.name)
        return dict(verdict, seconds=0.0, kept=True)

    def put(self, url: str, mode: str, rules: str, verdict: dict) -> None:
        path = self.path(url, mode, rules)
        self.folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(verdict), encoding="utf-8")
        self.read.add(path.name)

    def forget_unused(self) -> None:
        for path in self.folder.glob("*.json"):
            if path.name not in self.read:
                path.unlink(missing_ok=True)


def required_rules(width: str, scheme: str, url: str) -> str | None:
    """The axe rules the module docstring's rule always runs on a page in a mode."""
    if width == "desktop":
        if scheme == "light":
            return "wcag"
        return None if url.startswith("/zh/") else "colour"
    if url in PHONE_SAMPLE:
        return "wcag" if scheme == "light" else "colour"
    return None


class RuleBook:
    """Which axe rules run on a page in a mode: the required ones, else the colour rules
    where the page shows a colour combination that no page checked in that scheme showed."""

    def __init__(self):
        self.checked: dict[str, set[str]] = {"light": set(), "dark": set()}

    def choose(self, width: str, scheme: str, url: str, colours: list[str]) -> str | None:
        rules = required_rules(width, scheme, url)
        if rules is None and not self.checked[scheme].issuperset(colours):
            rules = "colour"
        if rules is not None:  # "wcag" has the colour rules too
            self.checked[scheme].update(colours)
        return rules


class PageReport:
    """What one page showed in one mode."""

    def __init__(self, url: str, mode: str):
        self.url = url
        self.mode = mode
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.colours: list[str] = []
        self.rules: str | None = None  # the axe rules run: "wcag", "colour" or none
        self.axe: dict = {}
        self.measured: dict = {}
        self.wide_code: list[str] = []
        self.empty_folds = 0  # snippet folds whose code did not appear when opened
        self.downloads: list[dict] = []


class _Slot:
    """One browser context at work on one page at a time, in one scheme, then the other."""

    def __init__(self, browser, width: str, rulebook: RuleBook, verdicts: AxeVerdicts):
        self.width, self.rulebook, self.verdicts = width, rulebook, verdicts
        # A context of its own: a renderer process of its own, so slots run in parallel.
        self.context = browser.new_context(**WIDTHS[width])
        self.context.add_init_script(FIRST_VISIT)
        self.context.add_init_script(path=str(AXE))
        self.page = self.context.new_page()
        self.page.on("request", self._request)
        self.page.on("console", lambda m: m.type == "error" and self.report.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.report.errors.append(str(e)))
        self.url = ""
        self.report = PageReport("", "")
        self.busy = False

    def _request(self, request) -> None:
        if is_foreign(request.url):
            self.report.foreign.append(request.url)

    def load(self, base: str, url: str) -> None:
        self.url, self.busy = url, True
        self._begin(SCHEMES[self.width][0])
        response = self.page.goto(base + url, wait_until="load")
        if response is None or not response.ok:
            self.report.errors.append(f"HTTP {response and response.status}")
        self._start_axe()

    def _begin(self, scheme: str) -> None:
        self.scheme = scheme
        self.report = PageReport(self.url, f"{self.width}-{scheme}")

    def _start_axe(self) -> None:
        """Lists the page's colours, and sets axe to work on the rules it needs here."""
        r = self.report
        r.colours = self.page.evaluate(COLOURS)
        r.rules = self.rulebook.choose(self.width, self.scheme, self.url, r.colours)
        if r.rules is not None:
            r.axe = self.verdicts.get(self.url, r.mode, r.rules) or {}
            if not r.axe:  # runs while the other slots work
                self.page.evaluate(START_AXE, RULES[r.rules])

    def step(self) -> PageReport:
        """Waits for axe, measures; then switches to the other scheme, or is done."""
        r = self.report
        if r.rules is not None and not r.axe:
            r.axe = self.page.evaluate("() => window.__rnAxe")
            self.verdicts.put(self.url, r.mode, r.rules, r.axe)
        r.measured = self.page.evaluate(MEASURE)
        if r.measured["scheme"] != MATERIAL[self.scheme]:
            r.errors.append(f"the page is in {r.measured['scheme']!r}, not {self.scheme} mode")
        first = self.scheme == SCHEMES[self.width][0]
        if self.width == "desktop":
            self._keep(r, first)
        if first:
            self._begin(SCHEMES[self.width][1])
            self.page.evaluate(SCHEME, MATERIAL[self.scheme])
            self._start_axe()
        else:
            self.busy = False
        return r

    def _keep(self, r: PageReport, light: bool) -> None:
        """At 1280 px: pictures, the notebook's download, its code's width."""
        if not light:
            if self.url in WHOLE_PAGES_DARK:
                shot = ARTIFACTS / f"{WHOLE_PAGES_DARK[self.url]}.png"
                self.page.screenshot(path=str(shot), full_page=True)
            return
        if self.url in WHOLE_PAGES:
            shot = ARTIFACTS / f"{WHOLE_PAGES[self.url]}.png"
            self.page.screenshot(path=str(shot), full_page=True)
        for href in r.measured["downloads"]:
            response = self.context.request.get(href)
            r.downloads.append(
                {"href": href, "ok": response.ok, "notebook": b'"cells"' in response.body()}
            )
        folds = self.page.evaluate(NOTEBOOK_CODE_THAT_SCROLLS)
        r.wide_code, r.empty_folds = folds["wide"], folds["waiting"]
        # Each page's first screen: a whole page as a picture costs a quarter of this
        # walk's time.
        name = self.url.strip("/").replace("/", "-") or "home"
        self.page.evaluate("() => window.scrollTo(0, 0)")
        self.page.screenshot(path=str(ARTIFACTS / f"all-{name}.jpg"), quality=80)


def _walk_width(browser, base, urls, width, workers, rulebook, verdicts) -> dict[str, list]:
    """Every page at one width, in both schemes: {mode: [PageReport, ...]}."""
    ARTIFACTS.mkdir(exist_ok=True)
    queue = list(urls)
    slots = [_Slot(browser, width, rulebook, verdicts) for _ in range(min(workers, len(urls)))]
    reports: dict[str, list[PageReport]] = {f"{width}-light": [], f"{width}-dark": []}
    try:
        for slot in slots:
            slot.load(base, queue.pop(0))
        # Round robin: wait for one slot's axe run, give that slot its next run, go on.
        while any(slot.busy for slot in slots):
            for slot in slots:
                if slot.busy:
                    report = slot.step()
                    reports[report.mode].append(report)
                    if not slot.busy and queue:
                        slot.load(base, queue.pop(0))
    finally:
        for slot in slots:
            slot.context.close()
    return reports


@pytest.fixture(scope="module")
def walk(browser, server, built_site) -> dict[str, list[PageReport]]:
    """Every page in every mode; writes test-artifacts/accessibility.json with the timings
    and the pages axe checked in each mode."""
    pages = _all_pages(built_site)
    assert len(pages) >= 20
    assert set(PHONE_SAMPLE) <= set(pages), set(PHONE_SAMPLE) - set(pages)
    workers = min(4, os.cpu_count() or 1)  # 3 on 2 cores: no faster (117 s against 122 s)
    rulebook = RuleBook()
    verdicts = AxeVerdicts(built_site, site_fingerprint(built_site, browser.version))
    started, result, timings = time.perf_counter(), {}, {}
    for width in WIDTHS:
        # the sample first on a phone: its colours are then checked before the other pages'
        urls = sorted(pages, key=lambda u: width == "phone" and u not in PHONE_SAMPLE)
        t = time.perf_counter()
        result.update(_walk_width(browser, server, urls, width, workers, rulebook, verdicts))
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
        "axe_kept_from_an_earlier_run": {
            mode: sum(bool(r.axe.get("kept")) for r in reports) for mode, reports in result.items()
        },
        "violations": {
            mode: sum(len(v["nodes"]) for r in reports for v in r.axe.get("violations", []))
            for mode, reports in result.items()
        },
        "axe_pages": {
            mode: {
                rules or "none": [r.url for r in reports if r.rules == rules]
                for rules in ("wcag", "colour", None)
            }
            for mode, reports in result.items()
        },
    }
    (ARTIFACTS / "accessibility.json").write_text(json.dumps(summary, indent=2) + "\n")
    verdicts.forget_unused()
    return result


def _report(walk, mode: str, url: str) -> PageReport:
    return next(r for r in walk[mode] if r.url == url)


def test_every_page_renders_clean(walk):
    """Every built page, in every mode: no console error, no request to another host, all
    math typeset, diagrams as inline SVG at least 100 px wide, a copy button on every code
    block, notebook plots drawn and the executed notebook downloadable; at 1280 px every
    snippet fold shows its code when opened, and no notebook code scrolls sideways."""
    problems, code_blocks = [], 0
    for mode, reports in walk.items():
        for r in reports:
            m = r.measured
            if r.errors or r.foreign:
                problems.append(f"{mode} {r.url}: errors {r.errors}, foreign {r.foreign}")
            if not m["content"]:
                problems.append(f"{mode} {r.url}: the content is not shown")
            if m["rawTex"]:
                problems.append(f"{mode} {r.url}: {m['rawTex']} formula(s) not typeset")
            if m["umlImages"]:
                problems.append(f"{mode} {r.url}: a diagram is an image, not inline SVG")
            for d in m["diagrams"]:
                if d["shown"] and not d["width"] > 100:
                    problems.append(f"{mode} {r.url} {d['name']!r}: {d['width']:.0f} px wide")
            code_blocks += m["codeBlocks"]
            if m["withoutCopy"]:
                problems.append(f"{mode} {r.url}: {m['withoutCopy']} code block(s) not copyable")
            for plot in (m["notebook"] or {}).get("plots", []):
                if not plot["naturalWidth"] > 100:
                    problems.append(f"{mode} {r.url}: a plot is {plot['naturalWidth']} px wide")
            if m["notebook"] and len(m["downloads"]) != 1:
                problems.append(f"{mode} {r.url}: {len(m['downloads'])} download links")
            for d in r.downloads:
                if not (d["ok"] and d["notebook"]):
                    problems.append(f"{r.url}: {d['href']} is not the executed notebook")
            if r.empty_folds:
                problems.append(f"{r.url}: {r.empty_folds} fold(s) opened without their code")
            if r.wide_code:
                problems.append(
                    f"{r.url}: notebook code scrolls sideways at 1280 px: {r.wide_code}"
                )
    assert code_blocks > 0, "the walk saw code blocks"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("url", list(WHOLE_PAGES), ids=list(WHOLE_PAGES.values()))
def test_page_loads_clean(walk, url):
    """The pages kept whole as pictures show what they hold: the home page and LayerNorm
    typeset math, a diagram and copyable code; the notebook its math, a plot, and the
    executed notebook to download."""
    for mode in MODES:
        r = _report(walk, mode, url)
        m = r.measured
        assert not r.errors and not r.foreign, (mode, r.errors, r.foreign)
        if url == "/notebooks/layer_norm_activations/":
            assert m["notebook"]["math"] > 0, "notebook math is typeset"
            assert any(p["shown"] and p["naturalWidth"] > 100 for p in m["notebook"]["plots"])
            assert len(m["downloads"]) == 1
        else:
            assert m["math"] > 0 and m["rawTex"] == 0, "math is typeset"
            assert any(d["shown"] and d["width"] > 100 for d in m["diagrams"])
            assert m["codeBlocks"] > 0 and m["withoutCopy"] == 0, "code has a copy button"
    light = _report(walk, "desktop-light", url)
    if url == "/notebooks/layer_norm_activations/":
        assert [d["ok"] and d["notebook"] for d in light.downloads] == [True]
    assert (ARTIFACTS / f"{WHOLE_PAGES[url]}.png").is_file()


def test_dark_mode_keeps_diagrams_readable(walk):
    """In dark mode (by the system setting on the phone, the toggle at 1280 px) every
    diagram is inverted to stay readable on the dark background; in light mode none is."""
    problems, dark_diagrams = [], 0
    for mode, reports in walk.items():
        dark = mode.endswith("-dark")
        for r in reports:
            for d in r.measured["diagrams"]:
                dark_diagrams += dark
                if ("invert" in d["filter"]) != dark:
                    problems.append(f"{mode} {r.url} {d['name']!r}: filter {d['filter']}")
    assert dark_diagrams >= 2 * 12, "both dark modes saw the diagrams"
    assert not problems, "\n".join(problems)
    for url, name in WHOLE_PAGES_DARK.items():
        assert _report(walk, "desktop-dark", url).measured["scheme"] == "slate"
        assert (ARTIFACTS / f"{name}.png").is_file()


@pytest.mark.parametrize("mode", MODES)
def test_no_axe_violation(walk, mode):
    """axe-core finds no WCAG 2.1 A or AA violation in each of the four modes, on every page
    the module docstring's rule names, and every colour combination a page shows was
    checked on some page in that scheme."""
    width, scheme = mode.split("-")
    reports = walk[mode]
    missing = [
        r.url
        for r in reports
        if required_rules(width, scheme, r.url) not in (None, r.rules)
        or (r.rules is not None and "violations" not in r.axe)
    ]
    assert not missing, f"axe did not run as the rule says on {missing}"
    checked = set().union(
        *(r.colours for m in MODES if m.endswith(scheme) for r in walk[m] if r.rules)
    )
    unchecked = {r.url: set(r.colours) - checked for r in reports if set(r.colours) - checked}
    assert not unchecked, f"colours no page was checked with: {unchecked}"
    found = [
        f"{r.url} [{v['rule']}] {node}"
        for r in reports
        if r.rules is not None
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


def test_every_box_that_scrolls_is_reached_with_the_keyboard(walk):
    """Every page in every mode: a box whose content scrolls (code, a table, a wide formula,
    a diagram) takes the focus or holds something that does, so the keyboard can scroll it."""
    problems = [
        f"{mode} {r.url}: {r.measured['unreachable']}"
        for mode, reports in walk.items()
        for r in reports
        if r.measured["unreachable"]
    ]
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
