"""Fixed runs to compare two versions of sleuth: what a restructure must leave alone.

Runs a fixed set of researches on the offline web (``sleuth.testing``, the tests'
corpus) and over a folder of HotpotQA paragraphs (documents mode), with and without
the scripted model (``sleuth.testing.researcher``): quick and deep, by rank, a batch,
and CLI exit codes. It writes one JSON file with, per run: the exit code or status,
the queries, the sources, the citation check, the Gaps (failures), the deep tree and
sections. Loopback ports (random each run) are written as ``PORT``.

    python -m bench.fixed_runs before-1.json
    python -m bench.fixed_runs before-2.json
    python -m bench.fixed_runs after.json --compare before-1.json before-2.json

Pages arrive in whatever order the network gives them, and the default fetch order keeps
the first to arrive: run the baseline twice to see which runs differ between two runs of
the same code before reading a comparison. The runs by rank (``fetch_order="rank"``) and
over documents are meant to be the same every time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "data" / "corpus"
MODEL = "scripted-model"
_PORT = re.compile(r"(127\.\d+\.\d+\.\d+|localhost):\d+")
_SECONDS = re.compile(r"\d+(\.\d+)?\s?s\b")


#: The temporary home of the runs being captured (written as ``HOME``).
_HOME: list[str] = []


def _clean(text: str) -> str:
    for home in _HOME:
        text = text.replace(home, "HOME")
    return _PORT.sub(r"\1:PORT", text)


def summary(report: Any) -> dict[str, Any]:
    """What a comparison looks at in one report."""
    out: dict[str, Any] = {
        "queries": report.queries,
        "sources": [_clean(s.url) for s in report.sources],
        "planner": report.planner,
        "writer": report.writer,
        "stopped_by": report.stopped_by,
        # Sorted: the order failures happen in is the network's.
        "gaps": sorted(
            [_clean(f.url), _SECONDS.sub("Ns", _clean(f.reason)), f.stage] for f in report.failures
        ),
        "fetches": report.stats.fetches,
        "searches": report.stats.searches,
        "llm_calls": report.stats.llm_calls,
    }
    if report.citations is not None:
        out["citations"] = report.citations.model_dump(mode="json")
    if report.tree is not None:
        out["tree"] = [[n.id, n.question, n.status, n.sources] for n in report.tree]
    if report.sections is not None:
        out["sections"] = [[s.title, s.sources] for s in report.sections]
    return out


@contextlib.contextmanager
def _env(home: Path) -> Iterator[None]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # a port that refuses: no Ollama is found
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(("SLEUTH_", "OPENAI_", "OLLAMA_")) and name != "SLEUTH_BENCH_DATA":
            del os.environ[name]
    os.environ.update(
        SLEUTH_HOME=str(home),
        XDG_CACHE_HOME=str(home / "xdg"),
        OLLAMA_HOST=f"http://127.0.0.1:{sock.getsockname()[1]}",
        SLEUTH_TOP_WAIT="0",
    )
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sock.close()


def _web_options(web: Any, model: bool, **extra: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {
        "search": "searxng",
        "searxng_url": web.searxng_url,
        "allow_private_urls": True,
        "timeout": 5.0,
    }
    if model:
        opts.update(base_url=web.llm_url, model=MODEL)
    else:
        opts["no_llm"] = True
    return {**opts, **extra}


def _scripted(web: Any) -> None:
    from sleuth.testing.llm import ScriptedLLM
    from sleuth.testing.researcher import ScriptedResearcher

    web.llm = ScriptedLLM(models=[MODEL])
    ScriptedResearcher().install(web.llm)


def web_runs(web: Any, home: Path) -> dict[str, Any]:
    """Quick and deep on the offline web, with and without the model, by rank, a batch."""
    import sleuth

    out: dict[str, Any] = {}
    topics = web.topics

    def one(name: str, question: str, model: bool, **extra: Any) -> None:
        if model:
            _scripted(web)
        opts = _web_options(web, model, home=home / name, **extra)
        try:
            out[name] = summary(sleuth.research_sync(question, **opts))
        except Exception as exc:  # a crash is a result to compare too
            out[name] = {"error": f"{type(exc).__name__}: {_clean(str(exc))}"}

    for n in range(6):
        one(f"quick/no-model/{n}", topics[n].question, False)
    for n in range(4):
        one(f"quick/model/{n}", topics[n].question, True)
    for n in range(6):
        one(f"quick/by-rank/no-model/{n}", topics[n].question, False, fetch_order="rank")
    for n in range(2):
        one(f"quick/by-rank/model/{n}", topics[n].question, True, fetch_order="rank")
    one("quick/top-wait/no-model/0", topics[0].question, False, top_wait=3.0)
    deep = {"mode": "deep", "breadth": 2, "levels": 2, "max_sources": 6}
    for n in (2, 3):
        one(f"deep/no-model/{n}", topics[n].question, False, **deep)
        one(f"deep/model/{n}", topics[n].question, True, **deep)
    for n in (2, 3):
        one(f"deep/by-rank/no-model/{n}", topics[n].question, False, fetch_order="rank", **deep)
    one("deep/by-rank/model/2", topics[2].question, True, fetch_order="rank", **deep)
    out.update(batch_runs(web, home))
    out.update(cli_runs(web, home))
    return out


def batch_runs(web: Any, home: Path) -> dict[str, Any]:
    """A batch of four questions without a model, and two (one deep) with it."""
    import sleuth

    async def batch(name: str, items: list[Any], model: bool) -> dict[str, Any]:
        if model:
            _scripted(web)
        got = {}
        opts = _web_options(web, model, home=home / name)
        async for result in sleuth.research_many(items, jobs=2, **opts):
            got[result.id] = {
                "status": result.status,
                "error": result.error,
                **(summary(result.report) if result.report is not None else {}),
            }
        return {f"{name}/{key}": got[key] for key in sorted(got)}

    questions = [t.question for t in web.topics[:4]]
    out = asyncio.run(batch("batch/no-model", questions, False))
    items = [
        {"id": "quick", "question": web.topics[0].question},
        {"id": "deep", "question": web.topics[2].question, "mode": "deep", "breadth": 2},
    ]
    out.update(asyncio.run(batch("batch/model", items, True)))
    return out


def cli_runs(web: Any, home: Path) -> dict[str, Any]:
    """Exit codes (and the JSON report) of a few commands."""
    from sleuth.cli import run

    out: dict[str, Any] = {}
    base = [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "5",
        "--no-llm",
        "--quiet",
    ]
    cases = {
        "cli/quick": [*base, web.topics[1].question],
        "cli/deep": ["deep", *base, "--breadth", "2", "--levels", "1", web.topics[3].question],
        "cli/bad-depth": [*base, "--depth", "9", web.topics[1].question],
        "cli/bad-provider": ["--search", "nope", "--quiet", web.topics[1].question],
        "cli/empty-question": [*base, "   "],
    }
    for name, args in cases.items():
        target = home / (name.replace("/", "-") + ".json")
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            code = run([*args, "--home", str(home / name), "--format", "json", "-o", str(target)])
        entry: dict[str, Any] = {"exit": code}
        if target.is_file():
            report = json.loads(target.read_text(encoding="utf-8"))
            entry["sources"] = [_clean(s["url"]) for s in report["sources"]]
            entry["queries"] = report["queries"]
        out[name] = entry
    return out


def docs_runs(home: Path) -> dict[str, Any]:
    """Documents mode over HotpotQA paragraphs: tune questions 0-4, quick and deep."""
    import sleuth

    try:
        from bench.client import hotpot_questions
        from bench.determinism import write_folder
        from bench.world import data_dir
    except ImportError:
        return {}
    if not (data_dir() / "hotpotqa" / "hotpotqa_train.json").is_file():
        return {}
    folder = home / "hotpot-docs"
    write_folder(folder)
    out: dict[str, Any] = {}
    for n, q in enumerate(hotpot_questions(5)):
        opts = {"docs": folder, "search": ["local"], "home": home / "docs", "no_llm": True}
        out[f"docs/quick/{n}"] = summary(sleuth.research_sync(q["question"], **opts))
        if n < 2:
            deep = {"mode": "deep", "breadth": 2, "levels": 2, "max_sources": 6}
            out[f"docs/deep/{n}"] = summary(sleuth.research_sync(q["question"], **opts, **deep))
    return out


def capture() -> dict[str, Any]:
    from sleuth.testing import OfflineWeb

    with tempfile.TemporaryDirectory() as tmp, _env(Path(tmp)):
        home = Path(tmp)
        _HOME[:] = [str(home)]
        with OfflineWeb(CORPUS) as web:
            out = web_runs(web, home)
        out.update(docs_runs(home))
    return out


def compare(before: list[dict[str, Any]], after: dict[str, Any], say: Callable[[str], None]) -> int:
    """Say every run and field of ``after`` whose value none of the ``before`` captures
    had (they may differ among themselves: the network's order); the runs that differ."""
    differ = 0
    for name in sorted({n for b in before for n in b} | set(after)):
        olds = [b[name] for b in before if name in b]
        new = after.get(name)
        if new in olds:
            continue
        differ += 1
        if not olds or new is None:
            say(f"{name}: only in {'after' if not olds else 'before'}")
            continue
        for key in sorted({k for old in olds for k in old} | set(new)):
            seen = [old.get(key) for old in olds]
            if new.get(key) not in seen:
                say(f"{name}: {key}: {seen[0]!r} -> {new.get(key)!r}")
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fixed_runs", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--compare", type=Path, nargs="+", help="earlier outputs (of one version) to compare with"
    )
    args = parser.parse_args(argv)
    result = capture()
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(result)} runs written to {args.out}")
    if args.compare:
        before = [json.loads(path.read_text(encoding="utf-8")) for path in args.compare]
        differ = compare(before, result, print)
        print(f"{differ} of {len(result)} runs differ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
