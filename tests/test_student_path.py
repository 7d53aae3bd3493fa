"""The student's path: Home names it in at most eight steps, one idea per page, each
page opening with its question before any table or code, ending with questions to
check oneself (answers folded, code answers run by the tests) and naming the next step.
Foundations holds only what the placement pages need: no GPU or kernel page."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from scripts.heading_ids import heading_ids
from tests import codeblocks, terms
from tests.conftest import ROOT

DOCS = ROOT / "docs"
MAX_STEPS = 8
PATH_HEADING = re.compile(r"^## .*\{ *#the-students-path *\}[ \t]*$", re.M)
STEP = re.compile(r"^\d+\. \[[^\]]+\]\(([^)#?]+)\)", re.M)
CHECK = {"en": "## Check yourself { #check-yourself }", "zh": "## 自测 { #check-yourself }"}
ANSWER = {"en": '??? success "Answer"', "zh": '??? success "答案"'}
NEXT = {"en": "**Next:**", "zh": "**下一步：**"}
QUESTION = re.compile(r"^\*\*(\d+)\.\*\* \S", re.M)
H2 = re.compile(r"^## ", re.M)
FOOTNOTE_DEF = re.compile(r"^\[\^[^\]]+\]:")


def _lang(page: Path) -> str:
    return "zh" if page.name.endswith(".zh.md") else "en"


def path_steps(home: Path) -> list[Path]:
    """The pages Home's student's path names, in order."""
    text = home.read_text(encoding="utf-8")
    heading = PATH_HEADING.search(text)
    assert heading, f"{home.name} has no section {{ #the-students-path }}"
    end = H2.search(text, heading.end())
    section = text[heading.end() : end.start() if end else len(text)]
    return [(home.parent / target).resolve() for target in STEP.findall(section)]


HOME = DOCS / "index.md"
STEPS = path_steps(HOME)
CORE = [p for p in STEPS]
CORE_PAGES = CORE + [terms.twin(p) for p in CORE]


def _id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def test_home_gives_the_path_in_at_most_eight_steps_from_residuals_to_pre_ln():
    assert 2 <= len(STEPS) <= MAX_STEPS, STEPS
    assert STEPS[0] == DOCS / "foundations" / "residual-connections.md"
    assert STEPS[-1] == DOCS / "placement" / "pre-ln.md"
    assert all(p.is_file() for p in STEPS)
    assert len(set(STEPS)) == len(STEPS), "each step is a page of its own"


def test_the_chinese_home_gives_the_same_path():
    assert path_steps(DOCS / "index.zh.md") == [terms.twin(p).with_name(p.name) for p in STEPS]


def _nav_titles() -> list[str]:
    text = re.sub(r"!ENV \[[^\]]*\]", "true", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [next(iter(e)) for e in yaml.safe_load(text)["nav"] if isinstance(e, dict)]


def _nav_section(title: str) -> list[str]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)

    def pages(items) -> list[str]:
        out = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out += pages(value) if isinstance(value, list) else [value]
        return out

    for entry in config["nav"]:
        if isinstance(entry, dict) and title in entry:
            return pages(entry[title])
    raise AssertionError(f"no nav section {title!r}")


def test_foundations_hold_no_gpu_or_kernel_page():
    foundations = _nav_section("Foundations")
    assert foundations and all(p.startswith(("foundations/", "notebooks/")) for p in foundations)
    fast = _nav_section("Making it fast")
    assert "fast/rmsnorm-gpu.md" in fast and "experiments/norm_speed.py" in fast
    titles = _nav_titles()
    assert titles.index("Making it fast") > titles.index("Where the norm goes"), (
        "the GPU part comes after the placement pages"
    )


def _body(text: str) -> str:
    """The page without its footnote definitions (they render below everything)."""
    lines = text.rstrip("\n").splitlines()
    keep, inside = [], False
    for line in lines:
        if FOOTNOTE_DEF.match(line):
            inside = True
            continue
        if inside and (not line.strip() or line.startswith("    ")):
            continue
        inside = False
        keep.append(line)
    return "\n".join(keep).rstrip()


def check_section(text: str, lang: str) -> str:
    start = text.find(CHECK[lang])
    assert start >= 0, f"no {CHECK[lang]!r} section"
    end = H2.search(text, start + len(CHECK[lang]))
    return text[start : end.start() if end else len(text)]


def check_problems(text: str, lang: str) -> list[str]:
    """What a page's Check yourself section lacks, by the convention in its docstring."""
    if CHECK[lang] not in text:
        return [f"no {CHECK[lang]!r} section"]
    section = check_section(text, lang)
    problems = []
    numbers = [int(n) for n in QUESTION.findall(section)]
    if not 3 <= len(numbers) <= 5:
        problems.append(f"{len(numbers)} questions, expected 3 to 5")
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"questions numbered {numbers}")
    starts = [m.start() for m in QUESTION.finditer(section)] + [len(section)]
    for n, (a, b) in enumerate(itertools.pairwise(starts), start=1):
        part = section[a:b]
        if ANSWER[lang] not in part:
            problems.append(f"question {n} has no closed {ANSWER[lang]!r}")
            continue
        answer = part[part.index(ANSWER[lang]) + len(ANSWER[lang]) :]
        if not any(line.startswith("    ") and line.strip() for line in answer.splitlines()):
            problems.append(f"question {n}'s answer is empty")
    return problems


@pytest.mark.parametrize("page", CORE_PAGES, ids=_id)
def test_a_core_page_ends_with_questions_and_folded_answers(page: Path):
    problems = check_problems(page.read_text(encoding="utf-8"), _lang(page))
    assert not problems, f"{_id(page)}: " + "; ".join(problems)


@pytest.mark.parametrize("page", CORE, ids=_id)
def test_both_languages_ask_the_same_questions(page: Path):
    en = QUESTION.findall(check_section(page.read_text(encoding="utf-8"), "en"))
    zh = QUESTION.findall(check_section(terms.twin(page).read_text(encoding="utf-8"), "zh"))
    assert en == zh


@pytest.mark.parametrize("page", CORE_PAGES, ids=_id)
def test_a_code_answer_is_run_by_the_tests(page: Path):
    """At least one answer is code the tests run, with the output it must print."""
    text = page.read_text(encoding="utf-8")
    lang = _lang(page)
    first = text.count("\n", 0, text.find(CHECK[lang])) + 1
    last = first + check_section(text, lang).count("\n")
    blocks = [b for b in codeblocks.parse(page) if first <= b.lineno <= last]
    runnable = [b for b in blocks if b.runnable and b.lang in codeblocks.PYTHON]
    assert runnable, "no code answer"
    assert all(b.skip is None for b in runnable), "a code answer is skipped"
    assert any(b.expected_output is not None for b in runnable), (
        "no answer shows the output the tests compare"
    )


def test_a_missing_or_open_answer_is_found():
    good = "## Check yourself { #check-yourself }\n\n" + "".join(
        f'**{n}.** Why?\n\n??? success "Answer"\n    Because.\n\n' for n in (1, 2, 3)
    )
    assert check_problems(good, "en") == []
    open_answer = good.replace(
        '**3.** Why?\n\n??? success "Answer"', '**3.** Why?\n\n???+ success "Answer"'
    )
    assert check_problems(open_answer, "en") == [
        "question 3 has no closed '??? success \"Answer\"'"
    ]
    empty = good.replace(
        '??? success "Answer"\n    Because.\n\n**3.**', '??? success "Answer"\n\n**3.**'
    )
    assert check_problems(empty, "en") == ["question 2's answer is empty"]
    two = good.split("**3.**")[0]
    assert check_problems(two, "en") == ["2 questions, expected 3 to 5"]
    assert check_problems("# T\n", "en") == ["no '## Check yourself { #check-yourself }' section"]


def next_link(text: str, lang: str) -> str | None:
    """The page its last paragraph names as the next step, or None."""
    last = _body(text).split("\n\n")[-1].strip()
    if not last.startswith(NEXT[lang]):
        return None
    link = re.search(r"\]\(([^)#?]+)", last)
    return link.group(1) if link else None


@pytest.mark.parametrize("page", CORE_PAGES, ids=_id)
def test_each_step_ends_by_naming_the_next(page: Path):
    lang = _lang(page)
    target = next_link(page.read_text(encoding="utf-8"), lang)
    assert target, f"{_id(page)}'s last paragraph does not start with {NEXT[lang]!r} and a link"
    english = page.with_name(page.name.replace(".zh.", "."))
    index = STEPS.index(english)
    resolved = (page.parent / target).resolve()
    if index + 1 < len(STEPS):
        assert resolved == STEPS[index + 1], f"{_id(page)} names {target}, not the next step"
    else:
        assert resolved.is_file() and resolved not in STEPS, "the last step names where to go on"


def test_a_next_line_is_read_from_the_last_paragraph_only():
    page = "Text.\n\n**Next:** [B](b.md): more.\n\n[^1]: A note.\n    Its second line.\n"
    assert next_link(page, "en") == "b.md"
    assert next_link("**Next:** [B](b.md)\n\nMore text.\n", "en") is None


@pytest.mark.parametrize("page", CORE_PAGES, ids=_id)
def test_a_core_page_opens_with_prose_not_a_table_or_code(page: Path):
    """Its question and intuition come first: nothing but prose (and math or an
    admonition of prose) stands between the title and the first section."""
    text = page.read_text(encoding="utf-8")
    first = H2.search(text)
    opening = text[: first.start() if first else len(text)]
    body = opening.split("\n", 1)[1] if "\n" in opening else ""
    assert body.strip(), "the page opens straight into its first section"
    for line in body.splitlines():
        assert not line.lstrip().startswith("|"), f"a table before the first section: {line!r}"
        fence = re.match(r"\s*(?:```|~~~)\s*(\w*)", line)
        if fence and fence.group(1) != "plantuml":  # a diagram may show the structure
            raise AssertionError(f"code before the first section: {line!r}")


def test_pre_ln_derives_the_identity_path_before_its_synthesis_table():
    """The table of answers to 'why Pre-LN trains more stably' comes after the
    derivation it rests on (issue 32), in both languages."""
    for page in (DOCS / "placement" / "pre-ln.md", DOCS / "placement" / "pre-ln.zh.md"):
        text = page.read_text(encoding="utf-8")
        anchors = [a for _, a, _ in heading_ids(text)]
        assert anchors.index("a-clean-identity-path") < anchors.index(
            "why-pre-ln-trains-more-stably"
        ), page.name


@pytest.mark.parametrize("home", [HOME, DOCS / "index.zh.md"], ids=_id)
def test_the_map_on_home_names_every_page_of_the_nav(home: Path):
    """Home's map of the handbook and the nav list the same pages (the map once left out
    a page the nav had)."""
    text = home.read_text(encoding="utf-8")
    start = text.index("{ #map-of-the-handbook }") if "{ #map" in text else text.index("## Map")
    end = H2.search(text, start + 1)
    section = text[start : end.start() if end else len(text)]
    linked = {(home.parent / t).resolve() for t in re.findall(r"\]\(([^)#?]+)", section)}
    titles = [t for t in _nav_titles() if t != "Home"]
    assert len(titles) >= 7
    nav = {(DOCS / p).resolve() for title in titles for p in _nav_section(title)}
    english = {p.with_name(p.name.replace(".zh.", ".")) for p in linked}
    assert sorted(map(_id, nav - english)) == [], "pages of the nav missing from the map"
