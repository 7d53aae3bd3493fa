"""``[[measured:NOTEBOOK:KEY]]``: a number a notebook published, quoted on a page."""

from __future__ import annotations

import re

from resnorm_site import phrases

MEASURED = re.compile(r"\[\[measured:([\w-]+):([\w-]+)\]\]")
MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]]")


class MissingNumber(LookupError):
    """A page quotes a number that no notebook of this build published."""


def quote_numbers(
    markdown: str,
    results: dict[str, dict],
    pending: set[str],
    waiting: str,
    where: str,
    lang: str,
) -> str:
    """Each quote replaced by its value, worded in ``lang`` (resnorm_site/phrases.py), as
    literal text. ``pending``: notebooks still executing (mkdocs serve), whose quotes read
    ``waiting`` meanwhile."""

    def quote(match: re.Match) -> str:
        notebook, key = match.groups()
        if notebook not in results and notebook in pending:
            return waiting
        if notebook not in results:
            raise MissingNumber(f"{where}: no executed notebook named {notebook!r}")
        if key not in results[notebook]:
            known = ", ".join(sorted(results[notebook])) or "none"
            raise MissingNumber(
                f"{where}: notebook {notebook!r} published no {key!r} (it has: {known})"
            )
        try:
            text = phrases.word(lang, results[notebook][key])
        except phrases.PhraseError as err:
            raise MissingNumber(f"{where}: {notebook}:{key}: {err}") from None
        # literal text: a value like "nn.*, ... F.*" must not become emphasis
        return MARKDOWN_SPECIAL.sub(r"\\\g<0>", text)

    return MEASURED.sub(quote, markdown)
