"""``sleuth show RUN_ID --tree``: a deep research's tree of questions on the terminal.

The same view as the HTML report's question tree (:mod:`sleuth.report.tree`): the
question, its sub-questions and their follow-ups, each with its status, the sources it
read and the section of the report it fed. A deep run that ended without a report shows
the branches its record holds; a quick research, or a run stored before sleuth kept its
tree, says so instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

    from sleuth.models import Report, TreeNode
    from sleuth.report.tree import Node
    from sleuth.store import RunInfo, Store

__all__ = ["show_tree", "stored_tree"]

_STYLES = {
    "done": "bold green",
    "failed": "bold red",
    "searching": "bold blue",
    "reading": "bold blue",
}


def stored_tree(store: Store, info: RunInfo) -> tuple[list[TreeNode] | None, Report | None]:
    """A stored run's tree and report: the report's own, or (a run that ended without
    one) the branches its record holds."""
    from sleuth.models import TreeNode
    from sleuth.report.html import report_from_data

    try:
        report = report_from_data(info.report) if isinstance(info.report, dict) else None
    except ValueError:
        report = None
    if report is not None and report.tree:
        return report.tree, report
    nodes = [
        TreeNode.model_validate(record.payload)
        for record in store.stages(info.id)
        if record.stage == "node" and isinstance(record.payload, dict)
    ]
    return nodes or None, report


def _label(node: Node) -> Text:
    from rich.text import Text

    from sleuth.report.tree import STATUS

    record = node.record
    label = Text.assemble(
        (f"{STATUS[record.status][0]:<12}", _STYLES.get(record.status, "dim")),
        (f"{record.id}  ", "dim"),
        record.question,
    )
    meta = []
    if record.sources:
        meta.append("sources " + ", ".join(f"[{n}]" for n in sorted(record.sources)))
    meta += [f"→ {title}" for title, _ in node.sections]
    if record.note and record.status != "done":
        meta.append(record.note)
    if meta:
        label.append("\n" + " " * 12 + " · ".join(meta), style="dim")
    return label


def show_tree(store: Store, info: RunInfo, console: Console) -> None:
    """Print the stored run's question tree on ``console`` (or say why it has none)."""
    from rich.tree import Tree

    from sleuth.report.tree import tree_summary, tree_view

    nodes, report = stored_tree(store, info)
    if not nodes:
        mode = (report.mode if report else None) or info.options.get("mode")
        why = (
            "it is a quick research: only a deep research (sleuth deep) has one"
            if mode != "deep"
            else "it holds no tree: it ended before its first sub-question, or sleuth did "
            "not yet record one when it ran"
        )
        console.print(f"run {info.id} has no question tree: {why}", highlight=False)
        return
    sections = (report.sections or []) if report is not None else []
    headings = {section.title: "" for section in sections}
    root = Tree(f"[bold]{_escape(info.question)}[/]")
    _grow(root, tree_view(nodes, sections, headings))
    console.print(f"[bold]run {info.id}[/]: {tree_summary(nodes)}", highlight=False)
    console.print(root)


def _grow(parent: Tree, nodes: list[Node]) -> None:
    for node in nodes:
        _grow(parent.add(_label(node)), node.children)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
