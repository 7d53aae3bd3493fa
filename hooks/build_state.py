"""Where the lifetimes of the build state begin and end (resnorm_site/state.py).

The other hooks read ``STATE``; only this one starts a process, a language's build
and so a site build, and ends them. Its ``on_pre_build`` comes before every other
hook's, and its ``on_post_build`` after every other plugin's, mkdocs-static-i18n's
nested Chinese build included (hooks/README.md has the event table).
"""

from __future__ import annotations

from mkdocs.plugins import event_priority

from resnorm_site.labels import language
from resnorm_site.state import STATE


def on_startup(command: str, dirty: bool) -> None:
    STATE.start_process(command, dirty)


@event_priority(100)
def on_pre_build(config) -> None:
    STATE.start_language(language(config.theme.get("language")))


@event_priority(-300)
def on_post_build(config) -> None:
    STATE.end_language()


def on_build_error(error) -> None:
    STATE.languages.clear()
