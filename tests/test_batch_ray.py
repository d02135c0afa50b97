"""``sleuth batch --ray`` on a real local Ray cluster (two CPUs, started once for this
module and shut down at its end), against the offline web; and ``sleuth eval --ray``
on the shipped sample.

Skipped where Ray is not installed (``pip install -e '.[dev,ray]'``; .ci/run installs it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.cli import run
from sleuth.models import Report, Stats
from sleuth.pipeline.batch.input import BatchQuestion
from sleuth.pipeline.batch.one import BatchResult
from sleuth.settings import load_settings
from sleuth.testing import OfflineWeb
from sleuth.testing.sockets import listening, process_tree

# What keeps a local Ray on loopback, set before anything imports Ray (as the batch does).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")
batch_ray = pytest.importorskip("sleuth.pipeline.batch.ray")

#: Every test here runs on a local Ray cluster (started once for the module).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray with 2 CPUs started as sleuth starts one: 127.0.0.1 as its address (it
    never probes the network), every server on loopback."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    batch_ray.start_local(num_cpus=2)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_local_ray_listens_on_loopback_only(cluster: None) -> None:
    @ray.remote
    class Probe:
        def pid(self) -> int:
            return os.getpid()

    worker = Probe.remote()  # type: ignore[attr-defined]
    assert ray.get(worker.pid.remote()) > 0  # a worker process runs, its server too
    sockets = listening(process_tree(os.getpid()))
    assert len(sockets) >= 4, sockets  # the GCS, the raylet, the driver, the worker at least
    assert all(ipaddress.ip_address(address).is_loopback for _, address in sockets), sockets
    ray.kill(worker)


@ray.remote
class _Misbehaving:
    """A worker returning what the driver must not take as a question's result."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def run(self, question: BatchQuestion, settings: Any) -> Any:
        report = Report(
            topic=question.question,
            depth=1,
            queries=[question.question],
            sources=[],
            failures=[],
            confidence="LOW",
            confidence_reason="no sources",
            markdown="# Research\n\nNothing.\n",
            stats=Stats(),
        )
        if self.kind == "other-id":
            return BatchResult("someone-else", question.question, "done", report=report)
        if self.kind == "huge":
            big = report.model_copy(update={"markdown": "y" * (batch_ray.MAX_RESULT_BYTES + 1)})
            return BatchResult(question.id, question.question, "done", report=big)
        if self.kind == "not-a-result":
            return {"id": question.id, "status": "done"}
        if self.kind == "raises":
            raise KeyError("a worker's own bug")
        return BatchResult(question.id, question.question, "done", report=report)


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("other-id", "the result of another question"),
        ("huge", "a report of "),
        ("not-a-result", "something other than a result (dict)"),
        ("raises", "the Ray worker running it failed: KeyError"),
        ("fine", None),
    ],
)
def test_the_driver_records_a_bad_worker_result_as_that_questions_failure(
    cluster: None, kind: str, reason: str | None
) -> None:
    question = BatchQuestion("mine", "What is WAL?", line=3)
    runner = batch_ray.RayRunner([_Misbehaving.remote(kind)])  # type: ignore[attr-defined]
    result = asyncio.run(runner.run(question, load_settings({"no_llm": True}, env={})))
    assert isinstance(result, BatchResult)
    assert (result.id, result.question, result.line) == ("mine", "What is WAL?", 3)
    if reason is None:
        assert result.status == "done" and result.report is not None
        return
    assert result.status == "failed" and result.report is None
    assert result.error is not None and reason in result.error, result.error


def _sources(outdir: Path, pages: set[str]) -> dict[str, list[str]]:
    """Each question's sources among the corpus's pages (the hostile ones fail or not by
    how busy the machine is: a slow page's deadline, an extraction's)."""
    text = (outdir / "results.jsonl").read_text("utf-8")
    assert text.endswith("\n")
    lines: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == len({line["id"] for line in lines}), "a question twice"
    return {
        line["id"]: sorted(s["url"] for s in line["report"]["sources"] if s["url"] in pages)
        for line in lines
        if line["status"] == "done"
    }


def test_a_batch_on_two_ray_workers_finds_the_same_sources_as_in_process(
    cluster: None, web: OfflineWeb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = [topic.question for topic in web.topics[:4]]
    qfile = tmp_path / "q.txt"
    qfile.write_text("\n".join(asked) + "\n", "utf-8")
    common = [
        "--search",
        "searxng",
        "--searxng-url",
        web.searxng_url,
        "--allow-private-urls",
        "--timeout",
        "5",
        "--no-llm",
        "--jobs",
        "2",
        # Every candidate read (none left out because enough others came first):
        # which pages a question reads depends on its search results, not on timing.
        "--max-sources",
        "20",
    ]
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert run(["batch", str(qfile), "-o", str(local), *common]) == 0
    capsys.readouterr()
    web.reset_log()
    # The workers keep stores of their own (another home): nothing comes from the cache
    # the in-process batch filled.
    code = run(
        [
            "batch",
            str(qfile),
            "-o",
            str(remote),
            *common,
            "--ray",
            "--ray-workers",
            "2",
            "--home",
            str(tmp_path / "ray-home"),
        ]
    )
    assert code == 0
    err = capsys.readouterr().err
    assert "Ray: 2 workers" in err and "batch: 4 done, 0 failed" in err
    pages = set(web.page_urls)
    got = _sources(remote, pages)
    assert len(got) == len(asked) and all(got.values())
    assert got == _sources(local, pages)
    # The pages were fetched by the workers (the driver only schedules and writes).
    fetched = {f"http://{r.host}{r.path}" for r in web.requests}
    assert {url for urls in got.values() for url in urls} <= fetched
    # The driver wrote every report; a rerun on the same folder has nothing left to do.
    assert sorted(p.name for p in (remote / "reports").iterdir()) == sorted(
        f"{qid}.md" for qid in got
    )
    assert (
        run(["batch", str(qfile), "-o", str(remote), *common, "--ray", "--ray-workers", "2"]) == 0
    )
    assert "0 done, 0 failed, 4 skipped (4 done before)" in capsys.readouterr().err


#: The first four of the hand count in tests/test_eval.py.
EVAL_HAND_COUNT = {
    "5a77ec115542992a6e59dff7": "correct",
    "5a7decc75542995f4f40230f": "correct",
    "5a8718c25542991e771816c7": "incorrect",
    "5a809f815542996402f6a5b7": "incorrect",
}


def test_sleuth_eval_on_ray_workers_grades_the_sample_as_in_process(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "4", "-o", str(out), "--no-llm"]
    assert run([*args, "--ray", "--jobs", "2", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text("utf-8").splitlines()]
    assert {x["id"]: x["eval"]["grade"] for x in lines} == EVAL_HAND_COUNT
    assert summary["graded"] == 4
