"""The Chinese edition in a real headless Chromium.

Every page, Chinese ones included, is loaded by ``test_browser.py``'s
``test_every_page_renders_clean`` (no console error, no foreign request, math
typeset, diagrams inline). Here: the language switch lands on the twin page,
Chinese search finds the Chinese pages and each language searches its own pages only,
the interface and the project's own
labels are Chinese on ``/zh/``, and Chinese text is drawn with a font that has
Chinese glyphs.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.browser import Visit

pytestmark = pytest.mark.browser


def switch_to(visit: Visit, lang: str) -> str:
    """Open the header's language menu and pick ``lang``; the address it lands on."""
    page = visit.page
    page.locator(".md-header__option .md-select").hover()
    with page.expect_navigation(wait_until="networkidle"):
        page.locator(f"a.md-select__link[hreflang={lang}]").click()
    return page.url


@pytest.mark.parametrize(
    "path", ["/placement/post-ln/", "/experiments/warmup/", "/reference/glossary/", "/"]
)
def test_language_switch_lands_on_the_twin_page(browser, server, path):
    visit = Visit(browser, server + path)
    try:
        assert switch_to(visit, "zh") == server + "/zh" + path
        assert visit.page.evaluate("document.documentElement.lang") == "zh"
        assert switch_to(visit, "en") == server + path
        assert visit.page.evaluate("document.documentElement.lang") == "en"
        visit.check_clean()
    finally:
        visit.close()


def test_language_switch_follows_instant_navigation(browser, server):
    """Material swaps pages without re-rendering the header: the switch still leads to
    the twin of the page now shown, not of the first one."""
    visit = Visit(browser, server + "/zh/placement/post-ln/")
    try:
        page = visit.page
        with page.expect_response(lambda r: r.url.endswith("/zh/placement/pre-ln/")):
            page.locator("a.md-nav__link[href$='pre-ln/']").first.click()
        page.wait_for_url("**/zh/placement/pre-ln/")
        assert switch_to(visit, "en") == server + "/placement/pre-ln/"
        visit.check_clean()
    finally:
        visit.close()


@pytest.mark.parametrize(
    "query, page",
    [
        ("残差", "/zh/foundations/residual-connections/"),
        ("归一化", "/zh/"),
        ("梯度", "/zh/experiments/gradients_at_init/"),
    ],
)
def test_chinese_search_finds_chinese_pages(browser, server, query, page):
    """The build splits Chinese into words (jieba), so a word finds the pages using it."""
    visit = Visit(browser, f"{server}/zh/?q={query}")
    try:
        links = visit.page.locator(".md-search-result__link")
        links.first.wait_for(timeout=15000)
        hrefs = [h.split("?")[0] for h in links.evaluate_all("a => a.map(x => x.href)")]
        assert hrefs and all(h.startswith(server + "/zh/") for h in hrefs[:5]), hrefs[:5]
        assert any(h.startswith(server + page) for h in hrefs), (page, hrefs[:10])
    finally:
        visit.close()


def search_results(visit: Visit, query: str) -> list[str]:
    """Type ``query`` into the header's search box; the addresses of the results."""
    box = visit.page.locator("input.md-search__input")
    box.click()
    box.press_sequentially(query)
    box.press("End")  # Material reads the box on keyup, and Chinese goes in with no key
    links = visit.page.locator(".md-search-result__link")
    links.first.wait_for(timeout=15000)
    return [h.split("?")[0] for h in links.evaluate_all("a => a.map(x => x.href)")]


@pytest.mark.parametrize("query", ["LayerNorm", "残差"])
@pytest.mark.parametrize("home", ["/", "/zh/"])
def test_each_language_searches_only_its_own_pages(browser, server, home, query):
    """Each language has a search index of its own (hooks/i18n.py): a word both editions
    use finds only English pages from an English page, only Chinese ones from a Chinese one."""
    visit = Visit(browser, server + home + "foundations/layer-norm/")
    try:
        # the theme requests the index once the page has settled: wait for the request
        visit.page.wait_for_function(
            "performance.getEntriesByType('resource').some(e => e.name.includes('search_index'))",
            timeout=30_000,
        )
        fetched = visit.page.evaluate(
            "performance.getEntriesByType('resource').map(e => e.name)"
            ".filter(name => name.includes('search_index'))"
        )
        assert fetched == [server + home + "search/search_index.json"], fetched
        hrefs = search_results(visit, query)
        chinese = [h for h in hrefs if h.startswith(server + "/zh/")]
        assert hrefs and chinese == (hrefs if home == "/zh/" else []), hrefs
        visit.check_clean()
    finally:
        visit.close()


def test_interface_and_labels_are_chinese(browser, server):
    visit = Visit(browser, server + "/zh/foundations/layer-norm/")
    try:
        page = visit.page
        assert page.locator("input.md-search__input").get_attribute("placeholder") == "搜索"
        toc = page.locator(".md-nav--secondary .md-nav__title").first.inner_text()
        assert toc.strip() == "目录"
        assert page.locator("p.rn-output").first.inner_text() == "输出"
        copy = page.locator('button.md-code__button[data-md-type="copy"]').first
        assert copy.get_attribute("title") == "复制", copy.get_attribute("title")
        visit.check_clean()
    finally:
        visit.close()
    visit = Visit(browser, server + "/zh/experiments/warmup/")
    try:
        summary = visit.page.locator("details.rn-snippet-cell summary").first.inner_text()
        assert summary.startswith("本 notebook 导入的代码")
        assert "下载" in visit.page.locator("a.rn-download").get_attribute("title")
    finally:
        visit.close()


def test_chinese_text_is_drawn_with_a_chinese_font(browser, server):
    """Ask Chromium which installed font drew the first paragraph: one that covers Chinese
    (fontconfig's list for :lang=zh), not a fallback that shows empty boxes."""
    chinese_families = subprocess.run(
        ["fc-list", ":lang=zh", "family"], capture_output=True, text=True, check=True
    ).stdout
    assert chinese_families.strip(), "no font with Chinese glyphs is installed (make test adds one)"
    families = {f.strip() for line in chinese_families.splitlines() for f in line.split(",")}
    visit = Visit(browser, server + "/zh/foundations/residual-connections/")
    try:
        cdp = visit.context.new_cdp_session(visit.page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": ".md-content p"})
        used = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node["nodeId"]})["fonts"]
        drawn = {f["familyName"]: f["glyphCount"] for f in used}
        assert any(name in families and count > 0 for name, count in drawn.items()), drawn
        visit.screenshot("zh-font")
    finally:
        visit.close()
