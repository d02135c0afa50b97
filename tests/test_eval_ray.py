"""``sleuth eval --ray``: the shipped sample graded the same on a local Ray cluster (two
CPUs, started for this module) as in process.

Skipped where Ray is not installed (``pip install -e '.[dev,ray]'``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.cli import run

ray = pytest.importorskip("ray")

#: The first four of the hand count in tests/test_eval.py.
HAND_COUNT = {
    "5a77ec115542992a6e59dff7": "correct",
    "5a7decc75542995f4f40230f": "correct",
    "5a8718c25542991e771816c7": "incorrect",
    "5a809f815542996402f6a5b7": "incorrect",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray with 2 CPUs; 127.0.0.1 as its address, so it never probes the network."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_the_sample_on_ray_workers_is_graded_as_in_process(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "4", "-o", str(out), "--no-llm"]
    assert run([*args, "--ray", "--jobs", "2", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text("utf-8").splitlines()]
    assert {x["id"]: x["eval"]["grade"] for x in lines} == HAND_COUNT
    assert summary["graded"] == 4
