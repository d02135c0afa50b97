"""Names a package exports lazily: imported from their module on first use.

Packages whose names would pull in heavy modules (pydantic, httpx, the openai SDK) list
them in an ``_EXPORTS`` table (name: module) and take their module ``__getattr__`` from
:func:`lazy_exports`, so that importing the package, or one small module of it, costs
nothing until a name is really used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``exports`` is imported from
    its module on first use and kept in ``namespace`` (the package's globals), so it is
    looked up once; any other name is an AttributeError, as for a plain module."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
