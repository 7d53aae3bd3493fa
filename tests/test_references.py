"""Every paper a page cites by arXiv id is on the references page."""

from __future__ import annotations

import re

from tests.conftest import ROOT

ARXIV_ID = re.compile(r"(?:arXiv:?\s*\[?|arxiv\.org/abs/)(\d{4}\.\d{4,5})", re.IGNORECASE)
REFERENCES = ROOT / "docs/reference/references.md"


def cited_ids() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for page in sorted((ROOT / "docs").rglob("*")):
        if page.suffix in {".md", ".py"} and page != REFERENCES:
            for arxiv_id in ARXIV_ID.findall(page.read_text(encoding="utf-8")):
                cited.setdefault(arxiv_id, set()).add(page.relative_to(ROOT).as_posix())
    return cited


def test_pages_cite_papers():
    assert len(cited_ids()) >= 20


def test_every_cited_paper_is_listed():
    listed = set(ARXIV_ID.findall(REFERENCES.read_text(encoding="utf-8")))
    missing = {i: sorted(pages) for i, pages in cited_ids().items() if i not in listed}
    assert not missing, f"cited but not on the references page: {missing}"


def test_every_entry_has_an_id_of_its_own():
    """Two entries with one anchor make invalid HTML, and a link to it finds the first only."""
    for page in (REFERENCES, REFERENCES.with_name("references.zh.md")):
        ids = re.findall(r'<a id="([^"]+)"', page.read_text(encoding="utf-8"))
        twice = sorted({i for i in ids if ids.count(i) > 1})
        assert ids and not twice, f"{page.name}: ids used twice: {twice}"
