"""``sleuth --help``: the commands first, then the options most runs use, then examples.

Every option, in groups, is one step away (``sleuth --help-all``); each command's own
help lists its options (``sleuth COMMAND --help``).
"""

from __future__ import annotations

import re

import click

__all__ = ["COMMAND_ORDER", "EXAMPLES", "GROUP_OPTIONS", "format_group_help"]

#: The commands in the order a newcomer meets them; ``sleuth cache`` stands for ``cache clear``.
COMMAND_ORDER = (
    ("research", "QUESTION"),
    ("deep", "QUESTION"),
    ("agent", "GOAL"),
    ("batch", "FILE -o DIR"),
    ("eval", "FILE"),
    ("runs", ""),
    ("show", "ID"),
    ("resume", "ID"),
    ("cache", "clear"),
    ("library", "list"),
    ("mcp", ""),
    ("serve", ""),
)

EXAMPLES = (
    ('sleuth "How does OAuth 2.0 work?"', "a cited report on stdout"),
    ('sleuth --format html -o r.html "What is WAL mode?"', "one self-contained page"),
    ('sleuth deep "How do vector databases compare?"', "sub-questions, a long report"),
    ('sleuth --docs ~/papers "What do they say?"', "a folder of documents"),
    ("sleuth show last", "the last report again"),
)

#: The options ``sleuth --help`` lists (each command's help lists its own).
GROUP_OPTIONS = (
    "depth",
    "max_sources",
    "search",
    "model",
    "no_llm",
    "docs",
    "format",
    "output",
    "home",
    "max_time",
    "quiet",
    "verbose",
)


def format_group_help(
    group: click.Group, ctx: click.Context, formatter: click.HelpFormatter
) -> None:
    """The ``sleuth`` group's help into ``formatter``."""
    formatter.write_usage("sleuth", "[OPTIONS] QUESTION")
    formatter.write_usage("sleuth", "COMMAND [ARGS]...", prefix="       ")
    formatter.write_paragraph()
    with formatter.indentation():
        formatter.write_text(group.help or "")
    rows = []
    for name, args in COMMAND_ORDER:
        command = group.commands.get(name)
        if command is not None:
            rows.append((f"{name} {args}".strip(), command.get_short_help_str(limit=80)))
    with formatter.section("Commands"):
        formatter.write_dl(rows)
    research = group.commands["research"]
    research_ctx = click.Context(research, info_name="sleuth", parent=ctx)
    by_name = {param.name: param for param in research.params}
    common = []
    for name in GROUP_OPTIONS:
        record = by_name[name].get_help_record(research_ctx)
        if record is not None:  # the environment variables are in --help-all
            common.append((record[0], re.sub(r" \[env: [^]]*\]", "", record[1])))
    common.append(("--version", "Show the version and exit."))
    with formatter.section("Common options"):
        formatter.write_dl(common)
    width = max(len(example) for example, _ in EXAMPLES) + 2
    with formatter.section("Examples"):
        for example, what in EXAMPLES:
            formatter.write(f"{'':>{formatter.current_indent}}{example:<{width}}# {what}\n")
    formatter.write_paragraph()
    formatter.write_text(
        "Every option, in groups, with its environment variable: sleuth --help-all. "
        "A command's options: sleuth COMMAND --help."
    )
