"""Where points run: this process, a local process pool, or a Ray cluster.

A point is a small dict in and a small dict out (:func:`run_point`), so
every executor is a loop that hands out dicts and reports each record as it
comes back; the caller caches it at once, which is what lets an interrupted
sweep resume.  Underneath, :meth:`map` runs any picklable module-level
function over any picklable items (``placewise bench`` hands it its jobs,
each of which the function runs in a fresh process of its own).  The
process pool needs nothing beyond the standard library; Ray is an optional
extra (``pip install 'placewise[ray]'``) imported only
when asked for, and a Ray that cannot be reached is an error before any
point starts.
"""

from __future__ import annotations

import multiprocessing
import socket
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, Protocol, TypeVar

from placewise.benchmarks.sweep.points import run_point

Record = dict[str, Any]
Done = Callable[[Record], None]
T = TypeVar("T")
R = TypeVar("R")
SWEEP_PRELOAD = ("placewise.benchmarks.sweep.points", "placewise.solver.solve")
INSTALL_HINT = "Ray is not installed: pip install 'placewise[ray]'"
CONNECT_TIMEOUT_S = 5.0


class ExecutorError(RuntimeError):
    """The executor cannot start (no Ray, an unreachable address): exit 2."""


class Executor(Protocol):
    name: str

    def start(self) -> None: ...

    def run(self, points: Sequence[Mapping[str, Any]], done: Done) -> None: ...

    def map(
        self,
        items: Sequence[T],
        fn: Callable[[T], R],
        done: Callable[[T, R], None],
        failed: Callable[[T, str], R],
    ) -> None:
        """``done(item, fn(item))`` for every item, in completion order;
        ``failed(item, why)`` stands in for a result that never came back."""
        ...

    def close(self) -> None: ...


def run_safely(data: Mapping[str, Any]) -> Record:
    """:func:`run_point`, an exception turned into a failed record (marked
    ``crashed``: not cached, so a rerun tries that point again)."""
    try:
        return run_point(data)
    except Exception as exc:
        return {
            "ok": False,
            "crashed": True,
            "error": f"{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc(limit=5),
            "point": dict(data),
            "metrics": {},
        }


def _crashed(point: Mapping[str, Any], why: str) -> Record:
    return {
        "ok": False,
        "crashed": True,
        "error": why,
        "point": dict(point),
        "metrics": {},
    }


def _run_points(ex: Executor, points: Sequence[Mapping[str, Any]], done: Done) -> None:
    ex.map(points, run_safely, lambda _p, rec: done(rec), _crashed)


class Inline:
    """Points one after another in this process (``--jobs 1``)."""

    name = "inline"

    def start(self) -> None:
        return None

    def run(self, points: Sequence[Mapping[str, Any]], done: Done) -> None:
        _run_points(self, points, done)

    def map(
        self,
        items: Sequence[T],
        fn: Callable[[T], R],
        done: Callable[[T, R], None],
        failed: Callable[[T, str], R],
    ) -> None:
        for item in items:
            done(item, fn(item))

    def close(self) -> None:
        return None


class LocalPool:
    """``jobs`` worker processes forked from a server that has imported the
    solvers already (a fresh worker then costs milliseconds, not seconds)."""

    name = "local"

    def __init__(self, jobs: int, preload: Sequence[str] = SWEEP_PRELOAD) -> None:
        self.jobs = max(1, jobs)
        self.preload = list(preload)

    def start(self) -> None:
        return None

    def run(self, points: Sequence[Mapping[str, Any]], done: Done) -> None:
        _run_points(self, points, done)

    def map(
        self,
        items: Sequence[T],
        fn: Callable[[T], R],
        done: Callable[[T, R], None],
        failed: Callable[[T, str], R],
    ) -> None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(self.preload)
        pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx)
        try:
            futures: dict[Future[R], T] = {pool.submit(fn, it): it for it in items}
            for fut in as_completed(futures):
                try:
                    res = fut.result()
                except Exception as exc:  # a dead worker: that item failed
                    res = failed(futures[fut], f"worker died: {exc!r}")
                done(futures[fut], res)
        except BaseException:
            # Ctrl-C: drop the queued items now (the cached ones are safe)
            # instead of waiting for every one of them to run.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def close(self) -> None:
        return None


class RayPool:
    """Points as Ray tasks: a local Ray of ``num_cpus`` (``--ray``) or the
    cluster at ``address`` (``--ray-address``; ``auto`` inside a RayJob)."""

    name = "ray"

    def __init__(self, address: str | None, num_cpus: int) -> None:
        self.address, self.num_cpus = address, max(1, num_cpus)
        self._ray: Any = None

    def start(self) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError(INSTALL_HINT) from None
        if self.address not in (None, "auto", "local"):
            _reachable(self.address)
        try:
            if self.address is None:
                ray.init(
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=self.address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"--ray-address {self.address}" if self.address else "--ray"
            raise ExecutorError(f"{where}: cannot start Ray: {exc}") from None
        self._ray = ray

    def run(self, points: Sequence[Mapping[str, Any]], done: Done) -> None:
        _run_points(self, [dict(p) for p in points], done)

    def map(
        self,
        items: Sequence[T],
        fn: Callable[[T], R],
        done: Callable[[T, R], None],
        failed: Callable[[T, str], R],
    ) -> None:
        ray = self._ray
        remote = ray.remote(num_cpus=1, max_retries=1)(fn)
        pending = {remote.remote(it): it for it in items}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                item = pending.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as exc:  # the task's worker died
                    res = failed(item, f"Ray task failed: {exc!r}")
                done(item, res)

    def close(self) -> None:
        if self._ray is not None:
            self._ray.shutdown()
            self._ray = None


def _reachable(address: str) -> None:
    """A TCP connect first: ``ray.init`` on a dead address retries for a
    minute before it fails; this says so in seconds."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(
            f"--ray-address {address}: expected HOST:PORT, ray://HOST:PORT or auto"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ExecutorError(
            f"--ray-address {address}: cannot reach {host}:{port}: {exc}"
        ) from None


def make_executor(
    ray: bool,
    address: str | None,
    jobs: int,
    preload: Sequence[str] = SWEEP_PRELOAD,
) -> Executor:
    if ray or address is not None:
        return RayPool(address, jobs)
    if jobs <= 1:
        return Inline()
    return LocalPool(jobs, preload)
