"""The settings table rendered for people: ``--help``'s compiled table and the docs.

:mod:`sleuth.settings` holds the table (one :class:`~sleuth.settings.Settings` field per
option, with its flag, environment variables, help group and the commands that take it).
This module turns it into

* ``sleuth/data/cli_options.json``, what the CLI builds its options from without importing
  pydantic (:func:`cli_options_table`, :func:`write_cli_options`);
* the Markdown tables of the docs' CLI reference (:func:`settings_markdown`).

After changing the table, ``python -m sleuth.cli.reference`` rewrites both the JSON file
and the docs page; tests fail while either is stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from sleuth.settings import DEEP_DEFAULTS, DURATION_FIELDS, Settings, field_meta, format_duration

__all__ = [
    "CLI_OPTIONS_FILE",
    "cli_options_table",
    "default_text",
    "settings_markdown",
    "write_cli_options",
]

#: The settings table compiled for the CLI, so that ``sleuth --help`` needs no pydantic.
CLI_OPTIONS_FILE = Path(__file__).resolve().parent / "data" / "cli_options.json"


def _shown(name: str, value: Any) -> str | None:
    """A value as the docs and --help show it (lists comma-joined, durations as ``1d``)."""
    if isinstance(value, list):
        value = ",".join(value)
    if name in DURATION_FIELDS and isinstance(value, int | float):
        return format_duration(value)
    return None if value in (None, "") else str(value)


def default_text(name: str) -> str | None:
    """A field's default as the docs and --help show it; None if unset."""
    return _shown(name, Settings.model_fields[name].get_default(call_default_factory=True))


def _metavar(name: str) -> str | None:
    """What ``--help`` shows as an option's value: its choices, or the kind of value."""
    choices = _choices(name)
    if choices:
        return "[" + "|".join(choices) + "]"
    annotation = Settings.model_fields[name].annotation
    if get_origin(annotation) is list:
        return "LIST"
    kinds = {arg for arg in (get_args(annotation) or (annotation,)) if arg is not type(None)}
    if bool in kinds:
        return None
    if name in DURATION_FIELDS:
        return "DURATION"
    if name.endswith("_url"):
        return "URL"
    if Path in kinds:
        return "FILE" if name in ("output", "quality_rules") else "DIR"
    if int in kinds or float in kinds:
        return "N"
    return "TEXT"


def _choices(name: str) -> list[str] | None:
    """The values a ``Literal`` field accepts (shown by ``--help``), else None."""
    annotation = Settings.model_fields[name].annotation
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    return None


def cli_options_table() -> list[dict[str, Any]]:
    """One row per setting: what the CLI needs to build its option (flag, env, help,
    default, deep mode's default, group, whether short help lists it, the commands that
    leave it out)."""
    rows = []
    for name, info in Settings.model_fields.items():
        meta = field_meta(name)
        is_flag = info.annotation is bool
        rows.append(
            {
                "name": name,
                "flag": meta["flag"],
                "short": meta["short"],
                "env": meta["env"],
                "help": info.description,
                "is_flag": is_flag,
                "default": None if is_flag else default_text(name),
                "deep_default": _shown(name, DEEP_DEFAULTS.get(name)),
                "metavar": _metavar(name),
                "choices": _choices(name),
                "group": meta["group"],
                "common": meta["common"],
                "skip": meta["skip"],
            }
        )
    return rows


def write_cli_options(path: Path = CLI_OPTIONS_FILE) -> None:
    """Rewrite ``sleuth/data/cli_options.json`` from the settings table."""
    path.write_text(
        json.dumps(cli_options_table(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )


def _cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def settings_markdown() -> str:
    """Every setting as Markdown: one table per ``--help`` group (option, environment,
    default, meaning)."""
    from sleuth._options import HELP_GROUPS

    parts = []
    for group in HELP_GROUPS:
        names = [name for name in Settings.model_fields if field_meta(name)["group"] == group]
        if not names:
            continue
        rows = [
            f"### {group}",
            "",
            "| option | environment | default | meaning |",
            "|---|---|---|---|",
        ]
        for name in names:
            meta = field_meta(name)
            default = default_text(name)
            shown = f"`{default}`" if default is not None else ""
            if name in DEEP_DEFAULTS:
                shown += f" (deep: `{_shown(name, DEEP_DEFAULTS[name])}`)"
            flags = ", ".join(f"`{f}`" for f in (meta["flag"], meta["short"]) if f)
            envs = ", ".join(f"`{e}`" for e in meta["env"])
            meaning = _cell(str(Settings.model_fields[name].description))
            rows.append(f"| {flags} | {envs} | {shown} | {meaning} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts)
