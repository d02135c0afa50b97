"""Extraction in worker processes: every page bounded in time and memory.

Turning a page into text is CPU work on hostile input. So it runs in a small pool of
worker processes (pebble's :class:`~pebble.ProcessPool`), where each page gets

* a deadline (``ExtractLimits.seconds``): past it, the worker is killed and replaced;
* a memory limit (``ExtractLimits.memory_mb``, on top of what an idle worker holds):
  set as the worker's ``RLIMIT_DATA`` while it works on the page (Linux), so that an
  allocation past it raises :class:`MemoryError` inside the worker;

and either ends as :class:`TooComplex`, a page failure with a reason, not a crash.
Cancelling an extraction (a run that ends at ``--max-time``, or has read enough)
kills the worker doing it, so nothing runs on after the report.

The pool is process-wide and starts on first use, in a background thread, never on
the way to ``sleuth --help`` or to the first search. Its workers fork from a
forkserver that has sleuth's extraction modules loaded, so replacing one costs a fork
and a tiny warm-up. Where worker processes cannot be had (no working
multiprocessing), or with ``workers=0``, extraction runs in the single extraction
thread of this process instead, without the two bounds.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sleuth._threads import OneThread

__all__ = [
    "ExtractLimits",
    "TooComplex",
    "extract_limits",
    "run_bounded",
    "run_bounded_sync",
    "run_in_extraction_thread",
    "shutdown",
    "start_pool",
    "worker_pids",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Without worker processes, extraction runs here, in one thread for the whole process
# (trafilatura and lxml have crashed natively when called from several threads at once).
_extraction_executor = OneThread("sleuth-extract")


async def run_in_extraction_thread(func: Callable[..., T], *args: Any) -> T:
    """Run ``func(*args)`` in the single, process-wide extraction thread."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_extraction_executor(), func, *args)


#: What the forkserver imports once, so that every worker forked from it has it: this
#: module loads (and runs) all of extraction, and quiets the workers' standard error.
_PRELOAD = ["sleuth.extraction._forkserver"]


@dataclass(frozen=True)
class ExtractLimits:
    """What one page's extraction may cost, and how many worker processes share the work."""

    seconds: float = 10.0
    memory_mb: int = 300
    workers: int = 2


def extract_limits(settings: Any) -> ExtractLimits:
    """The limits a run's settings (``extract_timeout``, ``extract_memory_mb``,
    ``extract_workers``) give one page's extraction."""
    return ExtractLimits(
        seconds=settings.extract_timeout,
        memory_mb=settings.extract_memory_mb,
        workers=settings.extract_workers,
    )


class TooComplex(Exception):
    """A page whose extraction went past its deadline or its memory limit."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------- in the worker

#: An idle worker's data segment, in bytes (0 where it cannot be read).
_baseline = 0


def _data_bytes() -> int:
    """This process's data segment (VmData: heap and private mappings), as RLIMIT_DATA counts."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _init_worker() -> None:
    """Note the idle worker's size (warmed up first, where the forkserver has not done it)."""
    global _baseline
    from sleuth.extraction import _warm

    if not _warm.warm:
        _warm.warm_up()
    _baseline = _data_bytes()


def _set_data_limit(limit: int | None) -> bool:
    """Cap this process's data segment at ``limit`` bytes (None: lift the cap); done or not."""
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        soft = hard if limit is None else limit
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
    except (ImportError, OSError, ValueError):
        return False
    return True


def _trim_heap() -> None:
    """Give freed heap back to the system (glibc keeps it): after a big page the worker's
    data segment would otherwise stay high, and the next page's allowance start higher."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim this way
        pass


def _call_limited(func: Callable[..., T], args: tuple[Any, ...], memory_mb: int) -> T:
    """In a worker: ``func(*args)`` with the data segment capped for the call.

    The cap is ``memory_mb`` over what the worker holds as the page starts (never less
    than over its idle size): a worker that kept some of an earlier page's memory must
    not start the next page already over its limit.
    """
    held = max(_baseline, _data_bytes()) if _baseline else 0
    capped = bool(held) and _set_data_limit(held + memory_mb * 1024 * 1024)
    try:
        try:
            return func(*args)
        finally:
            # Lifted before the error is translated: making the TooComplex (and pebble
            # pickling it back) needs memory the cap may still deny.
            if capped:
                _set_data_limit(None)
                _trim_heap()
    except MemoryError:
        raise TooComplex(f"too complex to extract: needed over {memory_mb} MB") from None
    except Exception as exc:
        # Under the cap, libxml2 reports a failed allocation as an lxml error (an XPath
        # "unknown error", a parser error), whose error log cannot even be pickled back.
        if capped and type(exc).__module__.startswith("lxml"):
            raise TooComplex(f"too complex to extract: needed over {memory_mb} MB") from None
        raise


# ---------------------------------------------------------------- the pool


class _Pool:
    """One process pool, started in a background thread; ``ready`` gives it (or why not)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        threading.Thread(target=self._start, name="sleuth-extract-start", daemon=True).start()

    def _start(self) -> None:
        try:
            from pebble import ProcessPool

            _at_exit()
            _keep_main_out()
            _quiet_resource_tracker()
            pool = ProcessPool(
                max_workers=self.workers, initializer=_init_worker, context=_context()
            )
            if not pool.active:  # starts the workers (forks them) here, off the caller's path
                raise RuntimeError("the extraction pool did not start")
        except Exception as exc:  # no processes on this platform: the caller falls back
            log.warning("extraction runs in this process, unbounded: %s", exc)
            self.ready.set_exception(exc)
        else:
            self.ready.set_result(pool)

    def slots(self) -> asyncio.Semaphore:
        """Pages handed to the pool at once from the running loop: one per worker.

        The rest wait here, not in the pool's pipe, so a run that ends takes back the
        pages no worker had started, and only a worker busy with a page is killed.
        """
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.workers)
        return slots


_pools: dict[int, _Pool] = {}
_pools_lock = threading.Lock()
_registered = False


def _at_exit() -> None:
    """Register :func:`shutdown` to run at exit, once, after pebble is imported: exit
    handlers run last-registered first, so it kills the workers before pebble's own
    handler would wait for them."""
    global _registered
    with _pools_lock:
        if not _registered:
            atexit.register(shutdown)
            _registered = True


#: The resource tracker's note, at its exit, on semaphores it unlinks for a dead process.
_TRACKER_NOTE = "ignore:resource_tracker:UserWarning"


def _quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker without its note on "leaked" semaphores.

    The pool's semaphores are named (a forkserver's workers open them by name), and the
    tracker unlinks them when this process ends without doing so itself: killed with
    SIGKILL, or ended by a signal. It then warns, on the user's terminal, of a leak it
    has just cleaned up. The tracker takes this process's ``-W`` options when it starts,
    so the note is switched off there; nothing is left behind either way.
    """
    import sys
    from multiprocessing import resource_tracker

    with _pools_lock:
        if _TRACKER_NOTE not in sys.warnoptions:
            sys.warnoptions.append(_TRACKER_NOTE)
    resource_tracker.ensure_running()


_WORKER_NAME = "pebble_pool_worker"  # pebble's name for its pool's processes
_main_kept_out = False


def _keep_main_out() -> None:
    """Start extraction workers without importing the program's ``__main__``.

    multiprocessing re-imports the main script in every process it starts this way (a
    forkserver or spawn), so a user's script that calls ``sleuth.research_sync`` at its
    top level, without ``if __name__ == "__main__":``, would run its research again in
    each worker. Workers run sleuth's own functions only: their preparation data (the
    one place that names the main module) leaves it out. Other processes are untouched.
    """
    global _main_kept_out
    from multiprocessing import spawn

    with _pools_lock:
        if _main_kept_out:
            return
        prepare = spawn.get_preparation_data

        def without_main(name: str) -> dict[str, Any]:
            data: dict[str, Any] = prepare(name)
            if name == _WORKER_NAME:
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        spawn.get_preparation_data = without_main
        _main_kept_out = True


def _context() -> Any:
    """A forkserver with sleuth's extraction modules loaded, where there is one; else spawn.

    Not fork: this process has threads (the event loop's, the store's), and a fork
    copies their locks in whatever state they are.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


def start_pool(workers: int) -> _Pool | None:
    """The pool of ``workers`` processes, starting it in the background if need be."""
    if workers <= 0 or multiprocessing.current_process().daemon:
        return None  # a daemon process may not have children
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None:
            pool = _pools[workers] = _Pool(workers)
        return pool


def _failure(exc: BaseException, limits: ExtractLimits) -> TooComplex | None:
    """The page failure a worker's end means, or None when ``exc`` is not one."""
    from pebble import ProcessExpired

    if isinstance(exc, TimeoutError):  # pebble's deadline: the worker was killed
        return TooComplex(f"too complex to extract: took over {limits.seconds:g}s")
    if isinstance(exc, ProcessExpired):
        code = exc.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return TooComplex(f"extraction crashed ({how})")
    return None


def _schedule(
    entry: _Pool, pool: Any, func: Callable[..., Any], args: tuple[Any, ...], limits: ExtractLimits
) -> concurrent.futures.Future[Any] | None:
    """Hand the call to ``pool``; None when the pool has broken (a new one starts next time)."""
    try:
        future: concurrent.futures.Future[Any] = pool.schedule(
            _call_limited, args=(func, args, limits.memory_mb), timeout=limits.seconds
        )
    except RuntimeError:  # pebble's pool is not running any more (all its workers died)
        log.warning("the extraction pool broke; starting a new one")
        with _pools_lock:
            if _pools.get(entry.workers) is entry:
                del _pools[entry.workers]
        return None
    return future


def _translated(exc: Exception, limits: ExtractLimits) -> Exception:
    failure = _failure(exc, limits)
    return exc if failure is None else failure


async def run_bounded(func: Callable[..., T], *args: Any, limits: ExtractLimits) -> T:
    """``func(*args)`` in an extraction worker, within ``limits``; raises :class:`TooComplex`.

    ``func`` and its arguments go to another process: a module-level function and
    picklable values. Cancelling the call kills the worker running it.
    """
    entry = start_pool(limits.workers)
    if entry is not None:
        try:
            # Shielded: a run cancelled while the pool starts must not cancel ``ready``,
            # which every later run (and shutdown) reads.
            pool = await asyncio.shield(asyncio.wrap_future(entry.ready))
        except Exception:  # could not start (logged): this process's thread instead
            entry = None
    if entry is None:
        return await run_in_extraction_thread(func, *args)
    async with entry.slots():
        future = _schedule(entry, pool, func, args, limits)
        if future is None:
            return await run_in_extraction_thread(func, *args)
        try:
            # Cancelling the wrapper cancels pebble's future, which kills its worker.
            result: T = await asyncio.wrap_future(future)
        except Exception as exc:
            raise _translated(exc, limits) from None
        return result


def run_bounded_sync(func: Callable[..., T], *args: Any, limits: ExtractLimits) -> T:
    """:func:`run_bounded` for synchronous callers (documents indexing)."""
    entry = start_pool(limits.workers)
    future = None
    if entry is not None:
        try:
            future = _schedule(entry, entry.ready.result(), func, args, limits)
        except Exception:  # could not start (logged): run it here
            future = None
    if future is None:
        return func(*args)  # extract() holds the process-wide extraction lock itself
    try:
        result: T = future.result()
    except Exception as exc:
        raise _translated(exc, limits) from None
    return result


def worker_pids() -> list[int]:
    """Process ids of the extraction workers now alive (for tests and benchmarks)."""
    return sorted(
        child.pid
        for child in multiprocessing.active_children()
        if child.name == _WORKER_NAME and child.pid is not None
    )


def shutdown() -> None:
    """Kill every extraction worker now and stop the pools (also run at exit).

    Workers hold nothing that needs a clean end, and one may be deep in a page that
    would take seconds more: SIGKILL, not pebble's polite SIGTERM and three-second wait.
    """
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pid in worker_pids():
        with contextlib.suppress(OSError):  # it ended by itself meanwhile
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    for entry in pools:
        ready = entry.ready
        if ready.done() and not ready.cancelled() and ready.exception() is None:
            pool = ready.result()
            pool.stop()
            pool.join()
