"""The web page's history: the runs the store holds, and any stored run's report."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sleuth.errors import ConfigError, SleuthError
from sleuth.report.html import render_fragment, report_from_data
from sleuth.settings import Settings
from sleuth.web.respond import error as _error
from sleuth.web.respond import for_page

__all__ = ["history", "history_run"]


def _history_list(settings: Settings) -> dict[str, Any]:
    if settings.no_store:
        return {"enabled": False, "runs": [], "note": "the run store is off (--no-store)"}
    from sleuth.store import DB_NAME, Store, default_home

    home = settings.home or default_home()
    if not (home / DB_NAME).exists():
        return {"enabled": True, "runs": [], "note": "no run stored yet"}
    with Store(home) as store:
        runs = store.list_runs(20)
    return {"enabled": True, "runs": [run._asdict() for run in runs]}


def _history_report(settings: Settings, run_id: str) -> dict[str, Any]:
    from sleuth.store import Store, default_home

    with Store(settings.home or default_home()) as store:
        info = store.get_run(run_id)
    if not isinstance(info.report, dict):
        return {"error": f"run {info.id} has no report (status: {info.status})"}
    return {
        "html": for_page(render_fragment(report_from_data(info.report))),
        "question": info.question,
    }


async def history(request: Request) -> Response:
    """``GET /api/history``: the last runs the store holds (or why there are none)."""
    settings: Settings = request.app.state.web.settings
    try:
        return JSONResponse(await asyncio.to_thread(_history_list, settings))
    except (SleuthError, OSError, ImportError) as exc:  # history is optional: say why, go on
        return JSONResponse(
            {"enabled": False, "runs": [], "note": f"the run store could not be read: {exc}"}
        )


async def history_run(request: Request) -> Response:
    """``GET /api/history/{run_id}``: a stored run's report as the page shows it."""
    settings: Settings = request.app.state.web.settings
    if settings.no_store:
        return _error("the run store is off", 404)
    try:
        result = await asyncio.to_thread(_history_report, settings, request.path_params["run_id"])
    except ConfigError as exc:
        return _error(str(exc), 404)
    except (SleuthError, OSError, ValueError) as exc:
        return _error(f"the stored report could not be read: {exc}", 500)
    return JSONResponse(result, status_code=404 if "error" in result else 200)
