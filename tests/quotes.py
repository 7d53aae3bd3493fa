"""Quotations of the five Chinese articles the handbook grew from, checked word for word.

A Chinese page quotes an article as “...”[B] (or [B, D] when several say it word for word).
The articles are not ours to republish, so the repository keeps a fingerprint of each
instead of its text (``tests/fixtures/article_fingerprints.json``, made by
``python -m tests.quotes FILE...``): the hashes of every run of ``K`` characters of the
article, after whitespace is removed and punctuation width unified. A quotation is
verbatim when every run of ``K`` characters in it is one of the article's (a quotation of
two characters, a word, is looked up among the article's pairs); a "……" in a quotation
marks words left out, and each part is checked on its own.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import unicodedata
from pathlib import Path

K = 3
FINGERPRINTS = Path(__file__).parent / "fixtures" / "article_fingerprints.json"
QUOTE = re.compile(r"[“「]([^”」]+)[”」]\s*\[([A-E](?:\s*[,，、]\s*[A-E])*)\]")
OMISSION = re.compile(r"…+|\.{3,}")
# whitespace, quotation marks, and the articles' Markdown emphasis and headings
QUOTE_MARKS = re.compile(r"[\s“”‘’「」『』\"'《》〈〉*#`]")
DASHES = re.compile(r"[‐‑‒–—―−~～]")


def normalise(text: str) -> str:
    """Width unified (NFKC: ， → , and （ → (), whitespace, quotation marks and Markdown
    emphasis removed, every dash the same, Latin letters in lower case."""
    text = unicodedata.normalize("NFKC", text)
    return DASHES.sub("-", QUOTE_MARKS.sub("", text)).lower()


def grams(text: str, k: int = K) -> set[str]:
    digests = set()
    for i in range(len(text) - k + 1):
        digest = hashlib.blake2b(text[i : i + k].encode(), digest_size=4).digest()
        digests.add(base64.b64encode(digest).decode())
    return digests


def fingerprint(text: str) -> dict[str, list[str]]:
    """The article's runs of K characters, and of two for a quotation of two (a word)."""
    text = normalise(text)
    return {"grams": sorted(grams(text)), "pairs": sorted(grams(text, 2))}


def load() -> dict[str, dict[str, set[str]]]:
    data = json.loads(FINGERPRINTS.read_text(encoding="utf-8"))
    return {
        letter: {"grams": set(entry["grams"]), "pairs": set(entry["pairs"])}
        for letter, entry in data["articles"].items()
    }


def verbatim(quote: str, article: dict[str, set[str]]) -> bool:
    parts = [normalise(p) for p in OMISSION.split(quote)]
    parts = [p for p in parts if p]

    def found(part: str) -> bool:
        if len(part) >= K:
            return grams(part) <= article["grams"]
        return len(part) == 2 and grams(part, 2) <= article["pairs"]

    return bool(parts) and all(found(p) for p in parts)


def quotations(text: str) -> list[tuple[int, str, list[str]]]:
    """(offset, quotation, letters) of every marked quotation in ``text``."""
    return [(m.start(), m.group(1), re.findall(r"[A-E]", m.group(2))) for m in QUOTE.finditer(text)]


def main(argv: list[str]) -> None:
    """``python -m tests.quotes A=path B=path ...``: write the fingerprints of the articles."""
    articles = {}
    for arg in argv:
        letter, _, path = arg.partition("=")
        text = Path(path).read_text(encoding="utf-8")
        articles[letter] = {"chars": len(text), **fingerprint(text)}
    FINGERPRINTS.write_text(
        json.dumps({"k": K, "articles": articles}, ensure_ascii=False, indent=0) + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1:])


# --- English quoted in Chinese prose ----------------------------------------------------

# A quotation in any of the marks a Chinese page uses, and a run of English words in it.
QUOTED = re.compile(r"“([^”]*)”|「([^」]*)」|『([^』]*)』|‘([^’]*)’|\"([^\"\n]*)\"")
WORD = r"[A-Za-z][A-Za-z0-9'’.-]*"
ENGLISH_WORDS = 6  # a quoted run this long is a sentence (or a title), not a name


def english_quotations(prose: str, words: int = ENGLISH_WORDS) -> list[tuple[int, str]]:
    """(offset, run) of each run of ``words`` or more English words inside quotation marks
    in ``prose`` (a page as tests.terms.prose leaves it: code, math, comments and link
    targets blanked). A Chinese page says such a sentence in Chinese; a title is set in
    italics (``*Attention Is All You Need*``), not quoted; a line of code is code."""
    run = re.compile(rf"{WORD}(?:[\s,;:!?()/&]+{WORD}){{{words - 1},}}")
    found = []
    for quote in QUOTED.finditer(prose):
        body = next(g for g in quote.groups() if g is not None)
        start = quote.start() + 1
        for m in run.finditer(body):
            found.append((start + m.start(), " ".join(m.group(0).split())))
    return found
