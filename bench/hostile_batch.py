"""The batch and Ray part of ``python bench/hostile.py``: what a questions file, an output
folder with things planted in it, and a Ray worker can make sleuth do, and what it costs.

Each batch case is a ``sleuth batch`` CLI run in a process of its own against the offline
web: its exit code, wall time, peak RSS (the process's own VmHWM) and whether the outcome
is the one SECURITY.md states ("ok", or what went wrong). The Ray cases start a local
cluster the way sleuth does (:func:`sleuth.pipeline.batch.ray.start_local`), list the
sockets its process tree listens on, and hand the driver results from misbehaving
workers. Everything stays on loopback; Linux only for what reads ``/proc``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.footprint import run_measured
from sleuth.testing import OfflineWeb

__all__ = ["BatchRow", "batch_cases", "batch_table", "ray_cases"]

ROOT = Path(__file__).resolve().parents[1]
#: A case still running after this long is a hang (the outcome says so).
LIMIT_S = 180.0


@dataclass
class BatchRow:
    case: str
    exit_code: int
    seconds: float
    peak_mb: float | None
    outcome: str


def _run(args: list[str], feed: bytes | None = None, close_stdin: bool = True) -> tuple[Any, ...]:
    """``sleuth batch ARGS`` in a fresh process: exit code, wall s, peak RSS MB, stderr.
    With ``feed``, stdin is a pipe that gets ``feed`` and is closed only if asked."""
    got = run_measured(
        ["batch", *args], LIMIT_S, feed=feed, close_stdin=close_stdin, stdin=subprocess.DEVNULL
    )
    return got.code, got.seconds, got.peak_mb, got.stderr.encode()


def _lines(outdir: Path) -> dict[str, dict[str, Any]]:
    path = outdir / "results.jsonl"
    if not path.exists():
        return {}
    return {
        line["id"]: line
        for line in map(json.loads, path.read_text("utf-8").splitlines())
        if isinstance(line, dict)
    }


def _verdict(ok: bool, detail: str) -> str:
    return "ok" if ok else f"FAIL: {detail}"[:100]


# -- the cases: each returns (args, feed, close stdin, check(code, stderr, folder)) --------
Check = Callable[[int, str, Path], str]


def _cases(web: OfflineWeb, tmp: Path) -> dict[str, tuple[list[str], bytes | None, bool, Check]]:
    question = web.topics[0].question
    cases: dict[str, tuple[list[str], bytes | None, bool, Check]] = {}

    def jsonl(name: str, rows: list[dict[str, Any]]) -> Path:
        path = tmp / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
        return path

    internal = web.base_url + "/internal"
    routed = jsonl(
        "routed.jsonl",
        [
            {"id": "searxng", "question": question, "searxng_url": internal},
            {"id": "base-url", "question": question, "base_url": internal + "/v1"},
            {"id": "docs", "question": question, "docs": "/etc"},
        ],
    )

    def no_request(code: int, err: str, out: Path) -> str:
        lines = _lines(out)
        reached = [r for r in web.requests if r.path.startswith("/internal")]
        refused = all(line["status"] == "failed" for line in lines.values()) and len(lines) == 3
        return _verdict(code == 1 and refused and not reached, f"exit {code}, {len(reached)} req")

    cases["line sets where requests go"] = ([str(routed)], None, True, no_request)

    fifo = tmp / "rules.fifo"
    os.mkfifo(fifo)
    per_line = jsonl("fifo.jsonl", [{"id": "f", "question": question, "quality_rules": str(fifo)}])

    def line_failed(code: int, err: str, out: Path) -> str:
        line = _lines(out).get("f", {})
        return _verdict(code == 1 and line.get("status") == "failed", f"exit {code}")

    cases["line sets quality_rules to a FIFO"] = ([str(per_line)], None, True, line_failed)

    plain = tmp / "one.txt"
    plain.write_text(question + "\n", "utf-8")

    def refused(word: str) -> Check:
        def check(code: int, err: str, out: Path) -> str:
            lines = err.strip().splitlines()
            return _verdict(code == 2 and len(lines) == 1 and word in lines[0], err[-80:])

        return check

    for name, path in (("FIFO", str(fifo)), ("/dev/zero", "/dev/zero")):
        args = [str(plain), "--quality-rules", path]
        cases[f"--quality-rules {name}"] = (args, None, True, refused("not a regular file"))
    long_first = tmp / "long.txt"
    long_first.write_text("x" * (200 * 1024) + "?\n", "utf-8")
    cases["first line of 200 KiB"] = ([str(long_first)], None, True, refused("128 KiB"))
    cell = tmp / "cell.csv"
    cell.write_text('question\n"' + ("z" * 1000 + "\n") * 140 + '"\n', "utf-8")
    cases["CSV cell of 140 KiB"] = ([str(cell)], None, True, refused("128 KiB"))

    million = tmp / "million.txt"
    with million.open("w", encoding="utf-8") as handle:
        for n in range(1_000_000):
            handle.write(f"What happened in the year {n} in the town of Springfield?\n")

    def stopped(code: int, err: str, out: Path) -> str:
        return _verdict(code == 1 and "stopped reading" in err and not _lines(out), err[-80:])

    budget = ["--batch-max-time", "5"]
    cases["1,000,000 lines, --batch-max-time 5"] = ([str(million), *budget], None, True, stopped)
    feed = (question + "\n").encode()
    cases["stdin never closed, --batch-max-time 5"] = (["-", *budget], feed, False, stopped)
    return cases


def _planted(tmp: Path, name: str) -> tuple[Path, Path]:
    """An OUTDIR holding a link named ``name`` to something outside it."""
    out, outside = tmp / f"out-{name.strip('.')}", tmp / f"outside-{name.strip('.')}"
    out.mkdir()
    outside.mkdir()
    target = outside / "target"
    if name == "reports":
        target.mkdir()
    (out / name).symlink_to(target)
    return out, outside


def batch_cases(web: OfflineWeb) -> list[BatchRow]:
    """Every batch case (see the module doc), in a temporary folder of its own."""
    rows: list[BatchRow] = []
    common = [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "3",
        "--no-llm",
        "--no-store",
        "--quiet",
    ]
    with tempfile.TemporaryDirectory(prefix="sleuth-bench-batch-") as name:
        tmp = Path(name)
        for n, (case, (args, feed, close, check)) in enumerate(_cases(web, tmp).items()):
            out = tmp / f"out{n}"
            web.reset_log()
            code, wall, peak, err = _run([*args, "-o", str(out), *common], feed, close)
            text = err.decode("utf-8", "replace")
            outcome = check(code, text, out) if code >= 0 else f"FAIL: killed after {LIMIT_S:g}s"
            rows.append(BatchRow(case, code, wall, peak, outcome))
        plain = tmp / "one.txt"
        for planted in ("results.jsonl", ".lock", "reports"):
            out, outside = _planted(tmp, planted)
            code, wall, peak, err = _run([str(plain), "-o", str(out), *common])
            untouched = [p.name for p in outside.rglob("*")] in (["target"], [])
            ok = code == 2 and untouched and not (outside / "target").is_file()
            rows.append(BatchRow(f"OUTDIR/{planted} is a link", code, wall, peak, _verdict(ok, "")))
        rows.append(_collisions(web, tmp, common))
    return rows


def _collisions(web: OfflineWeb, tmp: Path, common: list[str]) -> BatchRow:
    from sleuth._names import fold_name

    ids = ["../collide", "collide-599561b7", "Acme", "acme", "caf\u00e9", "cafe\u0301"]
    qfile = tmp / "ids.jsonl"
    rows = [{"id": qid, "question": web.topics[0].question, "max_sources": 1} for qid in ids]
    qfile.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    out = tmp / "out-ids"
    code, wall, peak, _ = _run([str(qfile), "-o", str(out), *common])
    names = [line.get("report_file", "") for line in _lines(out).values()]
    unique = len({fold_name(n) for n in names}) == len(names) == len(ids)
    return BatchRow("ids one name on some file system", code, wall, peak, _verdict(unique, ""))


# -- Ray -------------------------------------------------------------------------------------
def ray_cases() -> list[BatchRow]:
    """A local Ray started as sleuth starts one: what listens, and what the driver makes of
    misbehaving workers. Empty where Ray is not installed or /proc cannot be read."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        from sleuth.pipeline.batch import ray as batch_ray
    except ImportError:
        return []
    import asyncio
    import ipaddress

    import ray

    from sleuth.pipeline.batch.input import BatchQuestion
    from sleuth.settings import load_settings
    from sleuth.testing.sockets import listening, process_tree

    misbehaving = ray.remote(_Misbehaving)

    rows: list[BatchRow] = []
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    try:
        batch_ray.start_local(num_cpus=2)
    except Exception as exc:  # a loaded machine: Ray's start times out
        why = " ".join(str(exc).split())[:60]
        return [BatchRow("local Ray", 0, time.perf_counter() - started, None, f"not run: {why}")]
    try:
        runners = {kind: batch_ray.RayRunner([misbehaving.remote(kind)]) for kind in KINDS}
        sockets = listening(process_tree(os.getpid()))
        wide = [a for _, a in sockets if not ipaddress.ip_address(a).is_loopback]
        ok = len(sockets) >= 4 and not wide
        rows.append(
            BatchRow(
                f"local Ray: {len(sockets)} sockets listening",
                0,
                time.perf_counter() - started,
                None,
                _verdict(ok, f"not loopback: {wide}"),
            )
        )
        settings = load_settings({"no_llm": True}, env={})
        for kind, runner in runners.items():
            question = BatchQuestion("mine", "What is WAL?", line=1)
            began = time.perf_counter()
            result = asyncio.run(runner.run(question, settings))
            good = result.id == "mine" and result.status == "failed" and result.report is None
            rows.append(
                BatchRow(
                    f"worker returns {kind}",
                    0,
                    time.perf_counter() - began,
                    None,
                    _verdict(good, f"{result.status} {result.id}"),
                )
            )
    finally:
        ray.shutdown()
    return rows


KINDS = ("other-id", "huge", "not-a-result", "raises")


class _Misbehaving:
    """A Ray worker (made an actor in :func:`ray_cases`) whose result the driver must not
    take: another question's, a report over the cap, not a result, or an exception."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def run(self, question: Any, settings: Any) -> Any:
        from sleuth.models import Report, Stats
        from sleuth.pipeline.batch.one import BatchResult
        from sleuth.pipeline.batch.ray import MAX_RESULT_BYTES

        report = Report(
            topic=question.question,
            depth=1,
            queries=[],
            sources=[],
            failures=[],
            confidence="LOW",
            confidence_reason="-",
            markdown="x" * (MAX_RESULT_BYTES + 1 if self.kind == "huge" else 10),
            stats=Stats(),
        )
        if self.kind == "raises":
            raise KeyError("a worker's own bug")
        if self.kind == "not-a-result":
            return {"id": question.id, "status": "done"}
        qid = "someone-else" if self.kind == "other-id" else question.id
        return BatchResult(qid, question.question, "done", report=report)


def batch_table(rows: list[BatchRow]) -> str:
    head = ("case", "exit", "time s", "peak RSS MB", "outcome")
    cells = [
        (
            r.case,
            str(r.exit_code),
            f"{r.seconds:.1f}",
            "-" if r.peak_mb is None else f"{r.peak_mb:.0f}",
            r.outcome,
        )
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in (1, 2, 3) else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        )

    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, cells)])
