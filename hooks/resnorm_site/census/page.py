"""The census on a page: ``[[census:KEY]]`` replaced by the version, the families left
out, the counts, or the tables, worded in the page's language."""

from __future__ import annotations

import re

from resnorm_site.census.cells import GROUPS, group, summary
from resnorm_site.census.families import RULES
from resnorm_site.census.words import WORDS

MARKER = re.compile(r"\[\[census:([\w-]+)\]\]")
GITHUB = "https://github.com/huggingface/transformers/blob/v{version}/src/transformers/{file}"


class PageError(Exception):
    pass


def number(value) -> str:
    """ε as written in code: 1e-6, 1.5625e-7, 0.02."""
    if value is None:
        return "–"
    if value == 0:
        return "0"
    text = f"{value:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


def _join(words: dict, keys, table: str) -> str:
    return " / ".join(words[table].get(k, k) for k in keys)


def _form(words: dict, form: list) -> str:
    places = dict((part, p) for part, p in form if part != "parallel")
    parallel = any(part == "parallel" for part, _ in form)
    distinct = set(places.values())
    if len(distinct) == 1:
        text = words["place"][distinct.pop()]
    elif places:
        mixer = words["place"].get(places.get("mixer"), "–")
        mlp = words["place"].get(places.get("mlp"), "–")
        text = words["parts"].format(mixer=mixer, mlp=mlp)
    else:
        text = words["none"]
    return words["parallel"].format(place=text) if parallel else text


def _placement(words: dict, forms: list) -> str:
    if not forms:
        return words["none"]
    if len(forms) == 1:
        return _form(words, forms[0])
    return words["mixed"].format(forms=words["semi"].join(_form(words, f) for f in forms))


def _qk(words: dict, qk: dict) -> str:
    parts = []
    if qk["qk"]:
        parts.append(_join(words, qk["qk"], "qk"))
    for key in ("v", "o", "latent"):
        if qk[key]:
            parts.append(words[key].format(forms=_join(words, qk[key], "qk")))
    return words["semi"].join(parts) or words["none"]


def _eps(c: dict, words: dict) -> str:
    if c["eps"] is not None:
        text = number(c["eps"])
        others = [f"`{k}` {number(v)}" for k, v in sorted(c["eps_others"].items())]
        return words["sep"].join([text, *others])
    measured = words["sep"].join(number(v) for v in c["eps_measured"])
    return words["eps_measured"].format(values=measured) if measured else words["none"]


def _caps(words: dict, c: dict) -> str:
    parts = []
    for key in ("attn_cap", "final_cap"):
        value = c[key]
        if value is not None:
            shown = words["cap_yes"] if value == "yes" else number(value)
            parts.append(words[key].format(value=shown))
    return words["sep"].join(parts) or words["caps_none"]


def cells_of(row: dict, words: dict) -> list[str]:
    c = row.get("cells") or {}
    if not c:
        return [words["none"]] * 10
    topology = words["topology"][c["topology"]].format(n=c["streams"])
    gate = [words["gate"][g] for g in c["gate"]] + [words["sinks"][s] for s in c["sinks"]]
    values = [
        " + ".join(words["norm"][k] for k in c["norm"]),
        " / ".join(words["weight"][k] for k in c["weight"]),
        " / ".join(words["float32"][k] for k in c["float32"]) or words["none"],
        _eps(c, words),
        _placement(words, c["placement"]),
        _qk(words, c["qk"]),
        words["sep"].join(gate) or words["none"],
        _caps(words, c),
        topology,
        words["final_norm"][c["final_norm"]],
    ]
    if row.get("method") == "source":  # read, not run: in italics
        values = [v if v == words["none"] else f"*{v}*" for v in values]
    return values


def row_line(row: dict, words: dict, version: str) -> str:
    link = GITHUB.format(version=version, file=row["file"])
    name = f"[`{row['family']}`]({link})"
    if row.get("method") != "probed":
        why = words["why"].get(row.get("why", "probe"), words["why"]["probe"])
        how = words["read"] if row.get("method") == "source" else words["unread"]
        name = words["unprobed_row"].format(name=name, why=why, how=how)
    cells = [name, *cells_of(row, words)]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def tables(data: dict, lang: str) -> str:
    words = WORDS[lang]
    grouped: dict[str, list] = {g: [] for g in GROUPS}
    for row in data["rows"]:
        grouped[group(row)].append(row)
    blocks = []
    columns = words["header"].count("|") - 1
    for name in GROUPS:
        rows = grouped[name]
        if not rows:
            continue
        title = words["group"][name].format(n=len(rows))
        lines = [words["header"], "|" + "---|" * columns]
        lines += [row_line(r, words, data["transformers"]) for r in rows]
        body = "\n".join(f"    {line}" for line in lines)
        blocks.append(f'??? note "{title}"\n\n{body}')
    return "\n\n".join(blocks)


def left_out(data: dict, lang: str) -> str:
    words = WORDS[lang]
    rules = [
        words["rules"][rule].format(n=len(data["left_out"][rule]))
        for rule in RULES
        if data["left_out"].get(rule)
    ]
    return words["left_out"].format(
        folders=data["folders"],
        version=data["transformers"],
        rows=len(data["rows"]),
        rules=words["and"].join(rules) if lang == "zh" else "; ".join(rules),
    )


def counts(data: dict, lang: str) -> str:
    words = WORDS[lang]
    numbers = summary(data["rows"])
    numbers["unread"] = numbers["not_probed"] - numbers["source"]
    return "\n".join(
        f"- {template.format(**numbers)}." if lang == "en" else f"- {template.format(**numbers)}。"
        for _, template in words["summary"]
    )


# Counts of current practice for other pages: [[census:count-CATEGORY]] is how many rows
# fall in CATEGORY, [[census:list-CATEGORY]] which ones, each linked to its code. The
# placements are the census page's groups, with its "around or after" group split in two;
# the rest are counted over the rows with cells, as the census page's summary is.
def _places(c: dict) -> set:
    return {p for form in c["placement"] for part, p in form if part != "parallel"}


def _grouped(name: str, places: set | None = None):
    def test(row: dict) -> bool:
        if group(row) != name:
            return False
        return places is None or _places(row["cells"]) == places

    return test


def _cells(test):
    return lambda row: bool(row.get("cells")) and test(row["cells"])


def _topology(*kinds: str):
    return _cells(lambda c: c["topology"] in kinds)


CATEGORIES = {
    "placement-pre": _grouped("pre"),
    "placement-around": _grouped("around", {"around"}),
    "placement-output": _grouped("around", {"output"}),
    "placement-parallel": _grouped("parallel"),
    "placement-post": _grouped("post"),
    "placement-mixed": _grouped("mixed"),
    "placement-other": _grouped("other"),
    "placement-unprobed": _grouped("unprobed"),
    "norm-rmsnorm": _cells(lambda c: any(k.startswith("rmsnorm") for k in c["norm"])),
    "norm-layernorm": _cells(lambda c: any(k.startswith("layernorm") for k in c["norm"])),
    "qk-norm": _cells(lambda c: bool(c["qk"]["qk"])),
    "gate": _cells(lambda c: bool(c["gate"])),
    "sinks": _cells(lambda c: bool(c["sinks"])),
    "sinks-learned": _cells(lambda c: "learned" in c["sinks"]),
    "sinks-computed": _cells(lambda c: "computed" in c["sinks"]),
    "attn-cap": _cells(lambda c: c["attn_cap"] is not None),
    "final-cap": _cells(lambda c: c["final_cap"] is not None),
    "topology-one": _topology("one"),
    "topology-streams": _topology("streams", "streams_mixed"),
    "topology-streams-mixed": _topology("streams_mixed"),
    "topology-streams-unmixed": _topology("streams"),
    "topology-depth": _topology("depth"),
    "topology-gated": _topology("gated"),
    "topology-scaled": _topology("scaled"),
    "final-norm": _cells(lambda c: c["final_norm"] in ("yes", "after_collapse")),
}
TOTALS = {
    "count-rows": lambda data: len(data["rows"]),
    "count-probed": lambda data: sum(1 for r in data["rows"] if r.get("method") == "probed"),
}
LIST_SEP = {"en": ", ", "zh": "、"}


def known_keys() -> str:
    return (
        "version, left-out, summary, tables, count-rows, count-probed, and count-CATEGORY or "
        f"list-CATEGORY with CATEGORY one of {', '.join(CATEGORIES)}"
    )


def members(data: dict, category: str) -> list[dict]:
    """The rows in one category, in the census's order (by family name)."""
    if category not in CATEGORIES:
        raise PageError(f"no census category {category!r}; known: {', '.join(CATEGORIES)}")
    return [r for r in data["rows"] if CATEGORIES[category](r)]


def family_list(data: dict, category: str, lang: str) -> str:
    link = GITHUB.format(version=data["transformers"], file="{file}")
    names = [f"[`{r['family']}`]({link.format(file=r['file'])})" for r in members(data, category)]
    return LIST_SEP[lang].join(names) or WORDS[lang]["none"]


def fill(markdown: str, lang: str, data: dict) -> str:
    if lang not in WORDS:
        raise PageError(f"no census words for language {lang!r}")

    def replace(match: re.Match) -> str:
        key = match.group(1)
        if key == "version":
            return data["transformers"]
        if key == "left-out":
            return left_out(data, lang)
        if key == "summary":
            return counts(data, lang)
        if key == "tables":
            return tables(data, lang)
        if key in TOTALS:
            return str(TOTALS[key](data))
        kind, _, category = key.partition("-")
        if kind in ("count", "list") and category in CATEGORIES:
            if kind == "count":
                return str(len(members(data, category)))
            return family_list(data, category, lang)
        raise PageError(f"unknown census placeholder [[census:{key}]]; known: {known_keys()}")

    return MARKER.sub(replace, markdown)
