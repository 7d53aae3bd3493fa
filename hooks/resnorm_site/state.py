"""What the hooks remember, in one object, grouped by how long it lives.

MkDocs calls the hooks' events in one process: one ``mkdocs build``, or one
``mkdocs serve`` with all its rebuilds. mkdocs-static-i18n runs the Chinese build
inside the English one's ``on_post_build``. So there are four lifetimes:

- ``process``: from ``on_startup`` to the end of the command; memos keyed on file
  contents or stamps, so a stale entry cannot be read.
- ``site``: one build of the whole site, every language; reset when the English
  (outermost) build starts.
- ``language``: one language's build; the stack says which builds are under way.
- ``background``: notebook runs that ``mkdocs serve`` does not wait for; changed by
  their thread, so read and written under ``lock``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from resnorm_site.paths import DEFAULT_LANGUAGE
from resnorm_site.templates import CompiledTemplates


@dataclass
class Process:
    serving: bool = False  # mkdocs serve: do not wait for notebook runs
    dirty: bool = False  # mkdocs serve --dirty: a rebuild renders only what changed
    reads: dict = field(default_factory=dict)  # (kind, path) -> (stamp, notebook)
    pruned: dict = field(default_factory=dict)  # (sheet, classes) -> pruned CSS
    search_used: set[str] = field(default_factory=set)  # search cache entries read or written
    shared_work: list[threading.Thread] = field(default_factory=list)  # e.g. PlantUML's batch
    widget: dict[str, str] = field(default_factory=dict)  # hash -> the widget's JSON
    templates: CompiledTemplates = field(default_factory=CompiledTemplates)
    signatures: dict[str, dict[str, str]] = field(default_factory=dict)  # language -> page -> hash
    search_pages: dict[str, list[dict]] = field(default_factory=dict)  # URL -> latest entries
    restore: dict = field(
        default_factory=dict
    )  # (id, attribute) -> (object, value) put back at the end


class UsedByAnyLanguage(set):
    """mkdocs-jupyter's rendered pages that some language of this site build used; to its
    own end-of-build eviction, which runs once per language, every entry counts as used."""

    def __contains__(self, item) -> bool:
        return True

    def paths(self) -> set:
        return set(set.__iter__(self))


@dataclass
class Site:
    runs: dict[str, Path] = field(default_factory=dict)  # page's .ipynb name -> its run's folder
    results: dict[str, dict] = field(default_factory=dict)  # notebook stem -> published numbers
    stylesheets: dict[str, str] = field(default_factory=dict)  # digest -> Jupyter CSS
    classes: set[str] = field(default_factory=set)  # class names used on notebook pages
    rendered: UsedByAnyLanguage = field(default_factory=UsedByAnyLanguage)  # mkdocs-jupyter's


@dataclass
class Background:
    in_flight: set[Path] = field(default_factory=set)  # runs being produced
    failed: dict[Path, str] = field(default_factory=dict)  # run -> why it failed
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class BuildState:
    process: Process = field(default_factory=Process)
    site: Site = field(default_factory=Site)
    background: Background = field(default_factory=Background)
    languages: list[str] = field(default_factory=list)  # builds under way, innermost last

    def start_process(self, command: str, dirty: bool) -> None:
        self.process = Process(serving=command == "serve", dirty=dirty)
        self.site, self.background, self.languages = Site(), Background(), []

    def start_language(self, language: str) -> bool:
        """A language's build starts; True when it is the outermost, a new site build.
        A dirty rebuild keeps the notebook classes: it renders some pages only."""
        self.languages.append(language)
        outermost = self.languages == [language] and language == DEFAULT_LANGUAGE
        if outermost:
            classes = self.site.classes if self.process.dirty else set()
            self.site = Site(classes=classes)
        return outermost

    def end_language(self) -> bool:
        """A language's build ends; True when it was the outermost one."""
        language = self.languages.pop() if self.languages else DEFAULT_LANGUAGE
        return not self.languages and language == DEFAULT_LANGUAGE


STATE = BuildState()
