"""Theme templates compiled once per process.

Every build (each rebuild of ``mkdocs serve``, and each language's) gets a new Jinja
environment, which would parse and compile the theme's templates again. This cache
keeps the compiled code in memory; Jinja checks each entry against its template's
source, so an edited override is compiled anew.
"""

from __future__ import annotations

import jinja2


class CompiledTemplates(jinja2.BytecodeCache):
    def __init__(self) -> None:
        self.store: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.store[bucket.key] = bucket.bytecode_to_string()
