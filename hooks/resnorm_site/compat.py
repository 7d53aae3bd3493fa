"""Guards around other packages' private internals.

A few hooks reach into another package: a private attribute, an undocumented class,
markup a template happens to write (hooks/README.md lists each, and why). Such code
is right for the version it was written against and may be silently wrong for the
next. Each use goes through ``require``: when the installed version differs from the
one the code was written for, or the attribute is gone, the build fails with a
message naming the package, both versions and what to re-check.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

# The versions the workarounds were written and tested against (requirements.txt pins
# the same). Raise one only after re-checking what hooks/README.md lists for it.
WRITTEN_FOR = {
    "mkdocs": "1.6.1",
    "mkdocs-material": "9.8.1",
    "mkdocs-static-i18n": "1.3.1",
    "mkdocs-jupyter": "0.26.3",
    "plantuml-markdown": "3.11.5",
}


class UpstreamChanged(RuntimeError):
    """A package the hooks reach into is not the version they were written for."""


@cache
def installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def require(package: str, what: str) -> None:
    """Fail unless ``package`` is installed at the version ``what`` was written for."""
    wanted, found = WRITTEN_FOR[package], installed(package)
    if found != wanted:
        raise UpstreamChanged(
            f"{what} relies on internals of {package} {wanted}, but {package} "
            f"{found or 'is not installed'} is: re-check the workarounds for {package} that "
            f"hooks/README.md lists, then set WRITTEN_FOR[{package!r}] in "
            "hooks/resnorm_site/compat.py"
        )


def private(obj: object, name: str, package: str, what: str):
    """``getattr(obj, name)`` for an attribute that is private to ``package``."""
    require(package, what)
    try:
        return getattr(obj, name)
    except AttributeError:
        raise UpstreamChanged(
            f"{what}: {type(obj).__name__}.{name} is gone from {package} "
            f"{installed(package)} (written for {WRITTEN_FOR[package]}); see hooks/README.md"
        ) from None
