"""Where a run's figures come from, and the files that keep them.

Every run of ``python -m bench`` can write its figures (``--out DIR``; ``--final`` writes
to ``bench/figures/`` unless told otherwise) as two files of one name, dated:
``<split>-<date>.json`` (``final-<date>`` for ``--final``), the parts' data with the
run's provenance, and ``.md``, the same as a reader sees it. The provenance names the
split, seed, date, commit (and whether the tree had changes not committed), the command,
the world's hosts, the machine (CPUs, load average at the start and the end) and each
part's wall time; a run cut short by ``--limit`` says so at the top: its files check
the machinery and are not figures to quote.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["FIGURES", "commit", "markdown", "provenance", "write"]

REPO = Path(__file__).resolve().parents[1]
#: Where ``--final`` writes its files by default.
FIGURES = REPO / "bench" / "figures"


def commit(repo: Path = REPO) -> tuple[str, bool]:
    """The checkout's commit and whether its files differ from it (untracked ones that git
    does not ignore too); ``("", False)`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "", False
    return head, bool(changed)


def provenance(
    argv: Sequence[str], *, split: str, seed: int, final: bool, limit: int | None, hosts: str
) -> dict[str, Any]:
    """What a reader needs to know where the figures come from (see the module docstring)."""
    head, dirty = commit()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": head,
        "dirty": dirty,
        "command": shlex.join(["python", "-m", "bench", *argv]),
        "split": split,
        "final": final,
        "seed": seed,
        "limit": limit,
        "hosts": hosts,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_start": round(os.getloadavg()[0], 2),
    }


def markdown(record: dict[str, Any]) -> str:
    """The run as a reader sees it: its provenance, then every part's figures."""
    p = record["provenance"]
    what = "test split, `python -m bench --final`" if p["final"] else f"{p['split']} split"
    state = "uncommitted changes" if p["dirty"] else "clean"
    load_end = record.get("load_end", "–")
    lines = [
        f"# sleuth benchmark figures: {what}",
        "",
        "| | |",
        "|---|---|",
        f"| date (UTC) | {p['date']} |",
        f"| commit | {p['commit'] or 'unknown'} ({state}) |",
        f"| command | `{p['command']}` |",
        f"| split | {p['split']} (parts that measure the program say so: no split) |",
        f"| seed | {p['seed']} |",
        f"| world | pages on their {p['hosts']} hosts (bench/hosts.py) |",
        f"| machine | {p['cpus']} CPUs, load {p['load_start']} at the start, {load_end} at "
        f"the end; Python {p['python']} |",
        "",
    ]
    if p["limit"]:
        lines += [
            f"> **Cut short (`--limit {p['limit']}`)**: these files check the machinery; "
            "they are not figures to quote.",
            "",
        ]
    for name, part in record["parts"].items():
        lines.append(part["markdown"].rstrip())
        lines.append(f"\n({name}: {part['wall_s']:.0f} s{_failed(part)})\n")
    return "\n".join(lines).rstrip() + "\n"


def _failed(part: dict[str, Any]) -> str:
    return f"; FAILED: {part['error']}" if part.get("error") else ""


def write(folder: Path, record: dict[str, Any], stem: str | None = None) -> tuple[Path, Path]:
    """Write ``record`` as ``<stem>.json`` and ``<stem>.md`` in ``folder``; without a stem,
    ``final-<date>`` or ``<split>-<date>``, with the time added when that name is taken.
    Returns both paths (write again with the same stem to update them)."""
    folder.mkdir(parents=True, exist_ok=True)
    if stem is None:
        p = record["provenance"]
        kind = "final" if p["final"] else p["split"]
        stem = f"{kind}-{p['date'][:10]}"
        if (folder / f"{stem}.json").exists():
            stem += "-" + p["date"][11:19].replace(":", "")
    json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
    json_path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    md_path.write_text(markdown(record), encoding="utf-8")
    return json_path, md_path
