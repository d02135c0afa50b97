"""``sleuth batch --ray`` on a real local Ray cluster (two CPUs, started once for this
module and shut down at its end), against the offline web; and ``sleuth eval --ray``
on the shipped sample.

Skipped where Ray is not installed (``pip install -e '.[dev,ray]'``; .ci/run installs it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.cli import run
from sleuth.testing import OfflineWeb

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray with 2 CPUs; 127.0.0.1 as its address, so it never probes the network."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


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
