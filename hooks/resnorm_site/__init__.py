"""The site's build logic, as plain Python: nothing here imports MkDocs.

The hook files that ``mkdocs.yml`` names (``hooks/*.py``) are adapters of a few
dozen lines that call into this package; ``hooks/README.md`` maps the events to
it. Tests import these modules under the same names the build loads them by
(``pyproject.toml`` puts ``hooks/`` on the path, as MkDocs does for a hook).
"""
