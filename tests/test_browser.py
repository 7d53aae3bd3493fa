"""The built site in a real headless Chromium (Debian's, driven by Playwright).

Each page must load with no console error and no request leaving localhost,
with its math typeset, its diagrams as inline SVG, its copy buttons, and (for
the notebook) a visible plot. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="module")
def server(built_site: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "Debian's chromium is needed for the browser tests: apt-get install chromium "
            "(the README's test command installs it)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


class Visit:
    """One page load, with every console error and every request recorded."""

    def __init__(self, browser, url: str, color_scheme: str = "light"):
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.context = browser.new_context(
            color_scheme=color_scheme, viewport={"width": 1280, "height": 900}
        )
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.route("**/*", self._route)
        response = self.page.goto(url, wait_until="networkidle")
        assert response is not None and response.ok, f"{url}: {response and response.status}"

    def _route(self, route):
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in {"data", "blob"} or parts.hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.foreign.append(url)
            route.abort()

    def check_clean(self):
        assert not self.errors, f"console errors: {self.errors}"
        assert not self.foreign, f"requests to other hosts: {self.foreign}"

    def screenshot(self, name: str):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self):
        self.context.close()


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


# The code cells of a notebook page (collapsed snippet cells opened) whose text is
# wider than the cell: the reader would have to scroll sideways.
NOTEBOOK_CODE_THAT_SCROLLS = """() => {
  document.querySelectorAll("details.rn-snippet-cell").forEach((d) => (d.open = true));
  const cells = [...document.querySelectorAll(".jupyter-wrapper .jp-InputArea-editor pre")];
  return cells
    .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
    .map((pre) => pre.textContent.split("\\n").reduce((a, b) => (a.length > b.length ? a : b)));
}"""


def test_every_page_renders_clean(browser, server, built_site):
    """Every built page: no console error, no foreign request, all math typeset, diagrams as SVG."""
    problems = []
    pages = _all_pages(built_site)
    assert len(pages) >= 20
    for url in pages:
        visit = Visit(browser, server + url)
        try:
            page = visit.page
            if visit.errors or visit.foreign:
                problems.append(f"{url}: errors {visit.errors}, foreign requests {visit.foreign}")
            raw_tex = page.locator(".arithmatex:not(:has(.katex))").count()
            if raw_tex or page.locator(".katex-error").count():
                problems.append(f"{url}: {raw_tex} formula(s) not typeset")
            if page.locator("img[src$='.svg'][alt='uml diagram'], .uml img").count():
                problems.append(f"{url}: a diagram is an image, not inline SVG")
            wide = page.evaluate(NOTEBOOK_CODE_THAT_SCROLLS)
            if wide:
                problems.append(f"{url}: notebook code scrolls sideways at 1280 px: {wide}")
            name = url.strip("/").replace("/", "-") or "home"
            visit.screenshot(f"all-{name}")
        finally:
            visit.close()
    assert not problems, "\n".join(problems)
