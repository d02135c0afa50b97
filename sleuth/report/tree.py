"""A deep research's tree of questions, drawn: the question, its sub-questions and their
follow-ups, each with its status, the sources it read and the section of the report it
fed.

:func:`tree_view` nests a report's :class:`~sleuth.models.TreeNode` records and finds the
section each one fed: the heading titled with its question (a report written without a
model gives each sub-question a section and each follow-up a subsection), else the
sections written from its sources (a model's outline groups sources its own way).
:func:`render_tree` draws it as a ``<details>`` section of the HTML report; the web page
draws a live run's tree with the same class names (one stylesheet for both), and
``sleuth show ID --tree`` draws the same view in the terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from sleuth.models import Report, Section, TreeNode
from sleuth.report.waterfall import minify

__all__ = ["STATUS", "TREE_CSS", "Node", "render_tree", "tree_summary", "tree_view"]

#: How each status reads, and what it means (a tooltip). The live statuses come first.
STATUS = {
    "waiting": ("waiting", "not started yet"),
    "searching": ("searching", "searching and ranking results"),
    "reading": ("reading", "reading its pages"),
    "done": ("done", "it read pages"),
    "empty": ("nothing new", "its searches found nothing new to read"),
    "failed": ("failed", "it could not be researched"),
    "skipped": ("skipped", "a budget was spent before its turn"),
}

# One look for the report and the web page: a tree of lines like a file explorer's, a
# coloured status pill on each question, its sources as citation links.
TREE_CSS = minify("""
details.qtree{margin:1.6rem 0;border:1px solid var(--line);border-radius:6px}
.qtree>summary{cursor:pointer;padding:.5rem .8rem;font-weight:600}
.qtree small{font-weight:400;color:var(--muted)}
.qtree>div,.qtree>ul{padding:0 .8rem .6rem}
.qtree .root{margin:.2rem 0;font-weight:600}
.qtree ul{list-style:none;margin:0;padding-left:1.1rem}
.qtree ul ul{border-left:1px solid var(--line);margin-left:.35rem;padding-left:.9rem}
.qtree li{margin:.3rem 0;line-height:1.4}
.qtree li>div{display:flex;flex-wrap:wrap;gap:.1rem .45rem;align-items:baseline}
.qtree .n{color:var(--muted);font:12px ui-monospace,monospace}
.qtree .st{font-size:.72rem;font-weight:700;padding:0 .45rem;border-radius:999px;color:#fff;
background:#6b7680;white-space:nowrap}
.qtree .st.done{background:#1f7a3d}.qtree .st.failed{background:#b3261e}
.qtree .st.searching,.qtree .st.reading{background:#2563a8}
.qtree .st.empty,.qtree .st.skipped,.qtree .st.waiting{background:none;color:var(--muted);
box-shadow:inset 0 0 0 1px var(--line)}
.qtree .q{flex:1 1 16rem}
.qtree .m{color:var(--muted);font-size:.85rem}
.qtree .m a{text-decoration:none;font-weight:600}
""")


@dataclass
class Node:
    """One question of the tree as drawn: its record, the sections it fed (title, the
    heading's id or "") and its follow-ups."""

    record: TreeNode
    sections: list[tuple[str, str]] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)


def tree_view(
    records: Sequence[TreeNode],
    sections: Sequence[Section] = (),
    headings: Mapping[str, str] | None = None,
) -> list[Node]:
    """The tree of ``records``, nested (the sub-questions, each with its follow-ups), each
    node with the report's ``sections`` it fed; ``headings`` maps a heading's text to its
    id (a section without one is named, not linked)."""
    headings = headings or {}
    nodes = {record.id: Node(record) for record in records}
    roots: list[Node] = []
    for node in nodes.values():
        parent = nodes.get(node.record.parent or "")
        (parent.children if parent is not None else roots).append(node)
        node.sections = _fed(node.record, sections, headings)
    return roots


def _fed(
    record: TreeNode, sections: Sequence[Section], headings: Mapping[str, str]
) -> list[tuple[str, str]]:
    if not record.sources:
        return []
    # A report without a model titles each question's section with the question itself.
    own = next((t for t in headings if _key(t) == _key(record.question)), None)
    if own is not None:
        return [(own, headings[own])]
    mine = set(record.sources)
    return [
        (section.title, headings.get(section.title, ""))
        for section in sections
        if mine & set(section.sources)
    ]


def _key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip("?").strip()


def tree_summary(nodes: list[TreeNode]) -> str:
    """``7 questions: 5 done, 1 nothing new, 1 skipped``."""
    counts = Counter(node.status for node in nodes)
    parts = [f"{n} {STATUS[status][0]}" for status, n in counts.items()]
    total = len(nodes)
    return f"{total} question{'s' if total != 1 else ''}: " + ", ".join(parts)


def _sources(ids: list[int], known: set[int]) -> str:
    links = [f'<a href="#source-{n}">{n}</a>' if n in known else str(n) for n in ids]
    return f"[{', '.join(links)}]"


def _item(node: Node, known: set[int]) -> str:
    record = node.record
    label, meaning = STATUS[record.status]
    parts = [
        f'<span class="st {record.status}" title="{escape(meaning)}">{label}</span>',
        f'<span class="n">{escape(record.id)}</span>',
        f'<span class="q">{escape(record.question)}</span>',
    ]
    meta = []
    if record.sources:
        meta.append("sources " + _sources(sorted(record.sources), known))
    for title, anchor in node.sections:
        shown = escape(title)
        meta.append(f'→ <a href="#{escape(anchor)}">{shown}</a>' if anchor else f"→ {shown}")
    if record.note and record.status != "done":
        meta.append(escape(record.note))
    if meta:
        parts.append(f'<span class="m">{" · ".join(meta)}</span>')
    children = "".join(_item(child, known) for child in node.children)
    below = f"<ul>{children}</ul>" if children else ""
    return (
        f'<li data-node="{escape(record.id)}" data-status="{record.status}">'
        f"<div>{''.join(parts)}</div>{below}</li>"
    )


def render_tree(report: Report, headings: Mapping[str, str] | None = None) -> str:
    """The report's question tree as a ``<details>`` section ("" when it has none)."""
    if not report.tree:
        return ""
    known = {source.id for source in report.sources}
    view = tree_view(report.tree, report.sections or (), headings)
    items = "".join(_item(node, known) for node in view)
    return (
        '<details class="qtree"><summary>Question tree '
        f"<small>{escape(tree_summary(report.tree))}</small></summary>\n"
        f'<div><p class="root">{escape(report.topic)}</p><ul>{items}</ul></div></details>\n'
    )
