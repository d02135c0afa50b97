"""Start-up of ``python -m bench --only startup``: process start to the run's first request.

A user waits from pressing Enter to the first thing sleuth asks of the world. Each
repeat starts the ``sleuth`` CLI in a fresh process against the benchmark world and
reads, from the world's request log, when its first search or model call arrived
(server side, ``time.time()`` on the same machine); the time before ``Popen`` is the
process start. The process is stopped once that request is logged: the rest of the run
is the timing part's business. Without a model the first request is the first search;
with one it is the search for the question as asked, sent while the OpenAI SDK loads
and before the planning call (issue 26; before that it was the planning call). The
target counts whichever request comes first, of either kind, as the user waits for it.

Two store set-ups: the default store (a fresh ``SLEUTH_HOME``, opened once before the
repeats so its migrations are not counted) and ``--no-store``. The median of the repeats
is printed with the range, and the bad-input row times an empty question to its refusal.
Bytecode is cached, as for an installed package (see :func:`measure`).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.client import WorldProcess
from bench.hosts import HOST_MODES
from bench.parts import Context, Figures
from bench.world import REPO

__all__ = ["Startup", "measure", "part", "table"]

QUESTION = "How does the Eiffel Tower's height change with temperature?"
FIRST_KINDS = ("search", "llm")


@dataclass
class Startup:
    """Seconds from process start to the first request, one set-up, several repeats."""

    label: str
    times: list[float]
    target: float
    #: CPU seconds the process had used when the request went out (Linux; else empty):
    #: what the start costs on a machine with a free core, whatever the load.
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def sleuth_command() -> list[str]:
    script = Path(sys.executable).with_name("sleuth")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sleuth"]


def _args(w: WorldProcess, llm: bool, store: bool) -> list[str]:
    args = w.cli_args(llm)
    return args if not store else [a for a in args if a != "--no-store"]


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid`` from /proc (clock ticks; None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_request(
    w: WorldProcess, args: list[str], env: dict[str, str], n: int, limit: float = 30.0
) -> tuple[float, float | None]:
    """Seconds from starting ``sleuth QUESTION args`` to the world's first request from it,
    and the CPU seconds the process had used by then (sampled every few milliseconds).

    ``n`` makes the question new to the store, whose caches would otherwise answer the
    searches and the planning call of a repeat without asking the world.
    """
    w.log()  # empty it
    start = time.time()
    proc = subprocess.Popen(
        [*sleuth_command(), f"{QUESTION} (take {n})", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    samples: list[tuple[float, float | None]] = []
    try:
        while time.time() - start < limit:
            samples.append((time.time(), _cpu_seconds(proc.pid)))
            # The world logs a request when it ends (after its latency): wait for it. A
            # stopped repeat's requests may end after the log was emptied: not ours.
            entries = [
                e
                for e in w.log(clear=False)
                if e.get("kind") in FIRST_KINDS and float(e["start"]) >= start
            ]
            if entries:
                first = min(float(e["start"]) for e in entries)
                # The last sample taken before the request arrived.
                cpu = [c for t, c in samples if t <= first and c is not None]
                return first - start, (cpu[-1] if cpu else None)
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(
                    f"sleuth exited ({proc.returncode}) before any request: {err.strip()[-300:]}"
                )
            time.sleep(0.005)
        raise RuntimeError(f"no request from sleuth in {limit:.0f} s")
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate()


def refusal_time(env: dict[str, str]) -> tuple[float, float]:
    """Seconds for ``sleuth ""`` to be refused (exit 2) in a fresh process, and its CPU
    seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [*sleuth_command(), ""],
        cwd=REPO,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 2:
        raise RuntimeError(f"an empty question exited {proc.returncode}, not 2")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(w: WorldProcess, repeat: int = 7, against: Path | None = None) -> list[Startup]:
    """Every set-up's start-up times (after one unmeasured warm-up run of each).

    ``against``: another checkout of sleuth (an older commit), put first on
    ``PYTHONPATH`` for its runs, which alternate with this tree's, run by run, so both
    meet the same load; its rows are labelled "(against)".
    """
    with tempfile.TemporaryDirectory(prefix="sleuth-bench-home-") as home:
        # As installed: bytecode cached (pip compiles it; a checkout writes __pycache__),
        # here into a folder of its own, so PYTHONDONTWRITEBYTECODE in a CI or sandbox
        # environment does not make every start compile sleuth's modules again.
        base: dict[str, Any] = {**os.environ, "PYTHONPYCACHEPREFIX": str(Path(home) / "pyc")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        # Each tree its own store: an older sleuth refuses a newer one's database.
        trees = {"": {**base, "SLEUTH_HOME": str(Path(home) / "this")}}
        if against is not None:
            trees[" (against)"] = {
                **base,
                "SLEUTH_HOME": str(Path(home) / "against"),
                "PYTHONPATH": str(against),
            }
        rows = []
        take = iter(range(10**6))
        for llm in (False, True):
            for store in (True, False):
                args = _args(w, llm, store)
                runs: dict[str, list[tuple[float, float | None]]] = {t: [] for t in trees}
                for env in trees.values():
                    first_request(w, args, env, next(take))  # warm-up (the migrations)
                for _ in range(repeat):
                    for tree, env in trees.items():
                        runs[tree].append(first_request(w, args, env, next(take)))
                for tree, got in runs.items():
                    label = (
                        f"{'LLM' if llm else 'no-LLM'}, "
                        f"{'store' if store else '--no-store'}: first "
                        f"{'request' if llm else 'search'}{tree}"
                    )
                    rows.append(
                        Startup(
                            label,
                            [t for t, _ in got],
                            0.5 if llm else 0.3,
                            [c for _, c in got if c is not None],
                        )
                    )
        refusals: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
        for env in trees.values():
            refusal_time(env)
        for _ in range(repeat):
            for tree, env in trees.items():
                refusals[tree].append(refusal_time(env))
        for tree, got2 in refusals.items():
            rows.append(
                Startup(
                    f"empty question refused (exit 2){tree}",
                    [t for t, _ in got2],
                    0.3,
                    [c for _, c in got2],
                )
            )
    w.log()
    return rows


def table(rows: list[Startup]) -> str:
    lines = [
        "| process start to | median s | range s | CPU s (median) | target |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        cpu = f"{statistics.median(r.cpu):.2f}" if r.cpu else "–"
        lines.append(
            f"| {r.label} | {r.median:.3f} | {min(r.times):.3f}–{max(r.times):.3f} "
            f"| {cpu} | ≤ {r.target:g} s |"
        )
    return "\n".join(lines)


def part(ctx: Context) -> Figures:
    """The start-up part (no split: the program's start, with its own questions)."""
    assert ctx.world is not None
    repeat = ctx.limit or ctx.args.startup_repeat
    print("start-up to the first request...", file=sys.stderr)
    rows = measure(ctx.world, repeat)
    head = (
        f"## Start-up (no split: the program; fresh process to the world's first request, "
        f"median of {repeat}; seed {ctx.seed})"
    )
    return Figures(
        f"{head}\n\n{table(rows)}\n",
        [{"label": r.label, "times": r.times, "cpu": r.cpu} for r in rows],
        {"repeat": repeat},
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.startup [--against OLD_CHECKOUT]``: the start-up table alone."""
    import argparse

    from bench.client import world

    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="another checkout of sleuth, measured alternately (before/after)",
    )
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--hosts", choices=HOST_MODES, default="site", help="bench.world --hosts")
    args = parser.parse_args(argv)
    with world(args.seed, args=["--hosts", args.hosts]) as w:
        print(table(measure(w, args.repeat, args.against)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
