"""Packages whose names load on first use, so importing one of their modules stays cheap.

A package `__init__` that re-exports its modules' names makes every `import pkg.module` pay for
all of them: Python runs the package's `__init__` first. The agent core, the tools and the LLM
client are large, and a function that never runs them (the chat function on AWS, which hands
turns to a queue) should not load them. Such a package lists what it exports, module by module,
and hands `__getattr__` (PEP 562) to `lazy_exports`; type checkers read the same names from an
`if TYPE_CHECKING:` import block.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], list[str]]:
    """`__getattr__` and `__all__` for `package`, exporting `exports` (module → names), each
    name imported from its module on first access."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        importlib.import_module(package).__dict__[name] = value  # next time: a plain lookup
        return value

    return __getattr__, sorted(where)
