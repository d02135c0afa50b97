"""What a service's small config record is built from: the settings, or any mapping.

Each service (fetch, search, the model's client) reads only the few settings it needs,
into a frozen record of its own (``FetchConfig``, ``SearchConfig``, ``LLMConfig``), made
at the edge from the one settings table; no service imports the table itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["picked"]


def picked(source: object, names: Iterable[str]) -> dict[str, Any]:
    """The values of ``names`` in ``source``: a mapping, or an object that has them as
    attributes (the settings table, another config record). A name it lacks is an error
    (KeyError or AttributeError): a config is never built from half the settings."""
    if isinstance(source, Mapping):
        return {name: source[name] for name in names}
    return {name: getattr(source, name) for name in names}
