"""Time to the report's first words on the web page, against the model's first token.

``python -m bench.first_words [--split dev] [--seeds 8 9 10]`` runs ``sleuth serve``'s app
(in this process, on loopback) against the benchmark world, whose model streams like a
real one (first token after 0.5 s, then 100 tokens/s; :mod:`bench.latency`). For each
timing question of the split and each seed it starts a research through
``POST /api/runs`` and reads ``/api/runs/ID/events`` as the page does (Server-Sent
Events), noting when the first words of the report arrive (the first ``report_text``
event) and when the checked report does. The world logs when its model sent the report
call's first token. It prints, per run:

* ``gap``: first words on the page - the model's first token (the target: ≤ 0.2 s);
* ``plain``: what the page waited from the first token to any report words with
  streaming off (the same run with ``LLMClient`` asked for plain replies: the report's
  words then arrive with the checked report);
* the report call's prompt and completion tokens, streamed and plain (the same request:
  they must not differ).

Timings are wall clock on one machine (the world, the app and the client share its
clock); the gap is measured within one run, so a loaded machine moves it less than it
moves the run's wall time.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from bench.client import WorldProcess, world
from bench.latency import Latency
from bench.splits import chosen
from bench.topics import split_questions
from sleuth.llm import client as llm_client
from sleuth.settings import load_settings
from sleuth.web.app import create_app


@contextmanager
def served(options: dict[str, Any]) -> Iterator[str]:
    """``sleuth serve``'s app for ``options`` on 127.0.0.1 (random port), in a thread."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    app = create_app(load_settings(options, env={}))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)  # start-up poll
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def follow(base: str, question: str) -> dict[str, float | None]:
    """Start a research and read its events as the page does: when (``time.time()``) the
    first report words and the report arrived."""
    seen: dict[str, float | None] = {"first_words": None, "report": None}
    with httpx.Client(base_url=base, trust_env=False, timeout=120) as http:
        started = http.post("/api/runs", json={"question": question})
        started.raise_for_status()
        name = ""
        with http.stream("GET", started.json()["events"]) as events:
            for line in events.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    now = time.time()
                    data = json.loads(line[6:])
                    words = data.get("kind") == "report_text" and data["data"].get("delta")
                    if words and seen["first_words"] is None:
                        seen["first_words"] = now
                    if name == "report":
                        seen["report"] = now
                    if name == "end":
                        break
    return seen


@contextmanager
def plain_replies(on: bool) -> Iterator[None]:
    """Every model client asks for plain (unstreamed) replies while ``on``."""
    original = llm_client.LLMClient.__init__

    def plain(self: llm_client.LLMClient, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self._streams = False

    if on:
        llm_client.LLMClient.__init__ = plain  # type: ignore[method-assign]
    try:
        yield
    finally:
        llm_client.LLMClient.__init__ = original  # type: ignore[method-assign]


def one_run(w: WorldProcess, question: str, plain: bool) -> dict[str, Any]:
    w.log()  # empty it
    with plain_replies(plain), served(w.options(True)) as base:
        seen = follow(base, question)
    report = [e for e in w.log() if e.get("kind") == "llm" and e.get("stage") == "report"]
    if not report:
        return {"error": "no report call"}
    call = report[-1]
    # A plain reply logs no first token: it would have come the time to first token in.
    first_token = call.get("first_token") or call["start"] + Latency().ttft
    words = seen["first_words"] if not plain else seen["report"]
    return {
        "gap": None if words is None else words - first_token,
        "prompt": call["prompt_tokens"],
        "completion": call["completion_tokens"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_words", description=__doc__)
    parser.add_argument("--split", default="dev", choices=("tune", "dev"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[8, 9, 10])
    args = parser.parse_args(argv)
    chosen([args.split])
    questions = split_questions(args.split)
    rows = []
    for seed in args.seeds:
        with world(seed) as w:
            for label, question in questions:
                streamed = one_run(w, question, plain=False)
                plain = one_run(w, question, plain=True)
                rows.append((seed, label, streamed, plain))
                print(
                    f"seed {seed} {label:<14} gap {_s(streamed.get('gap'))}  "
                    f"plain {_s(plain.get('gap'))}  tokens streamed "
                    f"{streamed.get('prompt')}+{streamed.get('completion')} plain "
                    f"{plain.get('prompt')}+{plain.get('completion')}",
                    flush=True,
                )
    gaps = [r[2]["gap"] for r in rows if r[2].get("gap") is not None]
    plains = [r[3]["gap"] for r in rows if r[3].get("gap") is not None]
    if gaps:
        print(
            f"\nfirst words after the model's first token ({args.split}, seeds "
            f"{' '.join(map(str, args.seeds))}): streamed median {statistics.median(gaps):.3f} s, "
            f"max {max(gaps):.3f} s over {len(gaps)} runs; plain median "
            f"{statistics.median(plains):.3f} s"
        )
    same = all(
        (r[2].get("prompt"), r[2].get("completion")) == (r[3].get("prompt"), r[3].get("completion"))
        for r in rows
    )
    print(f"report-call tokens equal streamed vs plain on every run: {same}")
    return 0


def _s(value: float | None) -> str:
    return "   -   " if value is None else f"{value:6.3f}s"


if __name__ == "__main__":
    raise SystemExit(main())
