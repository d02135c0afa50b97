"""The layout holds: imports run one way, top to bottom (ARCHITECTURE.md, "What may import what").

Every module's imports are read with ``ast``, function-level ones included, and the
names a package loads lazily from its ``_EXPORTS`` table (name: module). The layers are
checked on the imports that run (those under ``if TYPE_CHECKING:`` are left out); the
circles on every import, type-only ones too. Top to bottom (``LAYERS``, ``STAGE_ORDER``):
a module imports its own part and the parts below it; within a layer, only the pairs
named in ``SIDEWAYS``; nothing imports upward, nothing but the tests imports
``sleuth.testing``, and a few pairs are ruled out by name (``FORBIDDEN``).

ARCHITECTURE.md's "What may import what" is written from these tables
(``python tests/test_architecture.py`` rewrites it), and a test keeps the two in step.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "sleuth"
ARCHITECTURE = ROOT.parent / "ARCHITECTURE.md"

LAYERS: list[tuple[str, tuple[str, ...]]] = [  # lowest first
    ("core", ("core",)),
    ("extraction", ("extraction",)),
    ("services", ("search", "llm", "fetch", "store", "report")),
    ("stages", ("stages",)),
    ("drivers", ("pipeline", "agent")),
    ("edges", ("cli", "mcp_server", "mcp_stdio", "web", "__main__")),
]
#: Imports within one layer that are part of the design, and why.
SIDEWAYS = {
    ("search", "store"): "the local search provider searches the store's documents index",
    ("agent", "pipeline"): "agent mode's --report uses the pipeline's steps",
    ("cli", "mcp_server"): "the CLI starts the MCP server",
    ("cli", "web"): "the CLI starts the web page",
    ("mcp_server", "mcp_stdio"): "the MCP server runs over stdio through its guarded loop",
    ("__main__", "cli"): "`python -m sleuth` is the CLI",
}
#: judge (the relevance judgement) follows plan, whose part queries it judges pages
#: against too; every later stage may judge a text with it. explore (deep mode's
#: sub-questions, learnings, follow-ups) shows sources as the writer does; sections (deep
#: mode's sectioned writer) checks each section as it is written. names (the names a text
#: gives, deep mode's second hops) splits a page's text into passages as read does. asks
#: (what a question asks for) reads the names explore finds; subjects (whom a sentence
#: is about) reads a page's sentences and titles as judge does; answer_scores scores the
#: sentences answer chooses among; outline plans the
#: sections that sections writes.
STAGE_ORDER = [
    "plan",
    "judge",
    "rank",
    "select",
    "sentences",
    "read",
    "names",
    "evidence",
    "relevance",
    "write",
    "explore",
    "asks",
    "subjects",
    "answer_scores",
    "answer",
    "check",
    "outline",
    "sections",
    "numbering",
]
#: (importer prefix, imported prefix, why) that must never meet, whatever the layers allow.
FORBIDDEN = [
    ("sleuth.store", "sleuth.extraction", "the documents index is given its extractor"),
    ("sleuth.pipeline.recorder", "sleuth.stages", "the recorder records what it is given"),
    # A service reads a small config record of its own (FetchConfig, SearchConfig,
    # LLMConfig), built from the settings at the edge: never the settings table.
    *(
        (f"sleuth.{service}", "sleuth.settings", "a service reads its own config record")
        for service in ("search", "llm", "fetch", "store", "report")
    ),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return hidden


def _lazy_exports(node: ast.AST) -> list[str]:
    """The modules an ``_EXPORTS = {"name": "module", ...}`` table loads names from."""
    if not (
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets)
        and isinstance(node.value, ast.Dict)
    ):
        return []
    return [
        v.value
        for v in node.value.values
        if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith("sleuth")
    ]


def imports_of(
    name: str, path: Path, modules: Iterable[str], *, type_only: bool = False
) -> Iterator[str]:
    """The sleuth modules ``name`` imports, anywhere in it (its ``_EXPORTS`` table too);
    those under TYPE_CHECKING only when ``type_only``."""
    known = set(modules)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = set() if type_only else _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        yield from _lazy_exports(node)
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("sleuth"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if not base.startswith("sleuth"):
                continue
            for alias in node.names:  # "from sleuth.extraction import html" names a module
                sub = f"{base}.{alias.name}"
                yield sub if sub in known else base


def part_of(module: str) -> str:
    """The part of the layout a module belongs to: its folder, or "core"."""
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    top = parts[1]
    return (
        top if (ROOT / top).is_dir() or top in ("mcp_server", "mcp_stdio", "__main__") else "core"
    )


def layer_of(part: str) -> int:
    return next(i for i, (_, parts) in enumerate(LAYERS) if part in parts)


def problems(edges: Iterable[tuple[str, str]]) -> list[str]:
    """Every import among ``edges`` (importer, imported) that runs against the layout."""
    found = []
    for src, dst in edges:
        if src == dst or dst == "sleuth":
            continue
        src_part, dst_part = part_of(src), part_of(dst)
        if src_part == "facade":  # sleuth/__init__.py: lazy names only
            continue
        if dst_part == "testing" or src_part == "testing":
            if dst_part == "testing" and src_part != "testing":
                found.append(f"{src} imports {dst}: only the tests use sleuth.testing")
            continue
        why = _rule(src, dst, src_part, dst_part)
        if why:
            found.append(f"{src} imports {dst}: {why}")
    return found


def _rule(src: str, dst: str, src_part: str, dst_part: str) -> str | None:
    for low, high, why in FORBIDDEN:
        if src.startswith(low) and (dst == high or dst.startswith(high + ".")):
            return f"{low} must not import {high}: {why}"
    if src_part == dst_part:
        if src_part == "stages" and src != "sleuth.stages" and dst != "sleuth.stages":
            src_at, dst_at = (STAGE_ORDER.index(m.split(".")[2]) for m in (src, dst))
            if dst_at >= src_at:
                return "a stage imports only the stages before it"
        return None
    src_layer, dst_layer = layer_of(src_part), layer_of(dst_part)
    if dst_layer > src_layer:
        return f"{LAYERS[src_layer][0]} import nothing from {LAYERS[dst_layer][0]} (upward)"
    if dst_layer == src_layer and (src_part, dst_part) not in SIDEWAYS:
        return f"{src_part} and {dst_part} are beside each other: neither imports the other"
    return None


def import_graph(*, type_only: bool = False) -> dict[str, set[str]]:
    modules = all_modules()
    return {
        name: set(imports_of(name, path, modules, type_only=type_only))
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in graph:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    parts = {part_of(name) for name in all_modules()} - {"facade", "testing"}
    assert parts <= {part for _, group in LAYERS for part in group}


def test_imports_run_one_way() -> None:
    graph = import_graph()
    assert problems((src, dst) for src, dsts in graph.items() for dst in dsts) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    """Function-level imports count: the CLI's modules used to reach each other that way;
    and type-only ones: a module that names another's types depends on it."""
    assert cycles(import_graph(type_only=True)) == []


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("sleuth.stages.read", "sleuth.pipeline.context"),  # a stage reaching for a driver
        ("sleuth.stages.write", "sleuth.stages.check"),  # a stage calling a later one
        ("sleuth.store.docs", "sleuth.extraction.html"),  # the store extracting
        ("sleuth.store.docs", "sleuth.fetch.fetcher"),  # the store fetching
        ("sleuth.pipeline.recorder", "sleuth.stages.read"),  # the recorder computing passages
        ("sleuth.fetch.fetcher", "sleuth.search"),  # services side by side
        ("sleuth.settings", "sleuth.llm.config"),  # the core reaching up
        ("sleuth.pipeline.quick", "sleuth.agent.api"),  # research is below agent's reach
        ("sleuth.cli.runs", "sleuth.testing.web"),
        ("sleuth.fetch.fetcher", "sleuth.settings"),  # a service reading the settings table
        ("sleuth.search.base", "sleuth.settings"),
        ("sleuth.store.db", "sleuth.settings"),
    ],
)
def test_the_check_catches_a_wrong_import(src: str, dst: str) -> None:
    assert problems([(src, dst)]) != []


def test_the_check_sees_function_level_imports_and_not_type_checking_ones(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from sleuth.pipeline import context\n"
        "def f():\n    from sleuth.pipeline.steps import write_stage\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    found = set(imports_of("sleuth.stages.probe", path, all_modules()))
    assert found == {"sleuth.pipeline.steps"}


def test_the_cycle_check_sees_type_only_imports_and_lazy_export_tables(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from sleuth.pipeline import context\n"
        '_EXPORTS = {"Fetcher": "sleuth.fetch.fetcher", "x": "os"}\n'
    )
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    modules = all_modules()
    assert set(imports_of("sleuth.stages.probe", path, modules, type_only=True)) == {
        "sleuth.pipeline.context",
        "sleuth.fetch.fetcher",
    }
    # Two modules naming each other's types are a circle.
    graph = {"sleuth.a": {"sleuth.b"}, "sleuth.b": {"sleuth.a"}}
    assert cycles(graph) == [["sleuth.a", "sleuth.b"]]


def test_the_exception_tree_imports_nothing() -> None:
    """errors.py loads for free (``--help``, any ``except`` clause): no import at all,
    the standard library's included, but ``from __future__``."""
    tree = ast.parse((ROOT / "errors.py").read_text(encoding="utf-8"))
    imports = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    assert imports == []


# -- ARCHITECTURE.md's "What may import what", written from the tables above ----------------

BEGIN = "<!-- written by `python tests/test_architecture.py` from its tables: edit those -->"
END = "<!-- end of the written part -->"


def core_modules() -> list[str]:
    """The modules at the top of ``sleuth/`` (the core), as ARCHITECTURE.md names them."""
    return sorted(
        name.split(".")[1]
        for name in all_modules()
        if part_of(name) == "core" and name.count(".") == 1
    )


def layering() -> str:
    """The layers, top to bottom, the pairs allowed sideways, and the pairs ruled out."""
    rows = []
    for layer, parts in reversed(LAYERS):
        if layer == "stages":
            names = " < ".join(STAGE_ORDER)
        elif layer == "core":
            names = ", ".join(core_modules())
        else:
            names = ", ".join(parts)
        rows += textwrap.wrap(names, 88, initial_indent=f"{layer:<11}", subsequent_indent=" " * 11)
    sideways = [f"- {a} → {b}: {why}" for (a, b), why in SIDEWAYS.items()]
    forbidden = [f"- {low} → {high}: never ({why})" for low, high, why in FORBIDDEN]
    return "\n".join(
        [
            BEGIN,
            "",
            "```",
            *rows,
            "```",
            "",
            "A stage imports only the stages before it (`<`). Within a layer, only these",
            "import each other (the first from the second):",
            "",
            *sideways,
            "",
            "Whatever the layers allow, these never meet:",
            "",
            *forbidden,
            "",
            END,
        ]
    )


def written(text: str) -> str:
    """``text`` (ARCHITECTURE.md) with its written part as the tables say."""
    before, _, rest = text.partition(BEGIN)
    _, _, after = rest.partition(END)
    return before + layering() + after


def test_architecture_md_says_what_the_tables_say() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert text == written(text), "run `python tests/test_architecture.py` to rewrite it"


if __name__ == "__main__":
    ARCHITECTURE.write_text(written(ARCHITECTURE.read_text(encoding="utf-8")), encoding="utf-8")
    sys.exit(0)
