"""Running a checked sweep: cached points skipped, the rest handed out.

Each point's record is written to ``DIR/points/<key>.json`` the moment it
comes back, so a sweep stopped half way (Ctrl-C, a preempted RayJob) loses
only the points in flight: the rerun finds the others and computes just
the missing ones.  A point whose worker crashed is reported but not cached,
so the rerun tries it again; a replay that ran and failed (an invalid plan)
is a result like any other and is cached.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placewise.benchmarks.sweep.check import Checked
from placewise.benchmarks.sweep.executors import Executor, Record

POINTS_DIR = "points"


@dataclass(slots=True)
class Outcome:
    records: dict[str, Record] = field(default_factory=dict)
    cached: list[str] = field(default_factory=list)
    computed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """Keys of the points that failed, cached or computed now."""


def cache_path(directory: Path, key: str) -> Path:
    return directory / POINTS_DIR / f"{key}.json"


def read_cached(directory: Path, checked: Checked) -> dict[str, Record]:
    """Records of this sweep's points already in ``directory`` (a file for
    another config, or unreadable, is ignored and recomputed)."""
    out: dict[str, Record] = {}
    for p in checked.points:
        path = cache_path(directory, p.key)
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and rec.get("key") == p.key:
            out[p.key] = rec
    return out


def run_sweep(
    checked: Checked,
    directory: Path,
    executor: Executor,
    progress: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Every point's record, computing only those not cached in ``directory``.

    ``executor`` is started only when something is left to compute (so a
    finished sweep reruns without Ray), and closed afterwards."""
    outcome = Outcome()
    outcome.records = read_cached(directory, checked)
    outcome.cached = list(outcome.records)
    # A cached failure is still a failure: the rerun reports it and exits 1.
    outcome.failed = [k for k, r in outcome.records.items() if not r.get("ok")]
    todo: list[dict[str, Any]] = []
    queued: set[str] = set()
    for p in checked.points:
        if p.key not in outcome.records and p.key not in queued:
            queued.add(p.key)
            todo.append(p.to_dict())
    total = len(todo)
    if progress is not None:
        progress(0, total)
    if not todo:
        return outcome

    def done(rec: Record) -> None:
        key = str(rec.get("key") or _key_of(rec))
        rec["key"] = key
        outcome.records[key] = rec
        outcome.computed.append(key)
        if not rec.get("ok"):
            outcome.failed.append(key)
        if not rec.get("crashed"):
            path = cache_path(directory, key)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(rec, default=str) + "\n", encoding="utf-8")
            tmp.replace(path)  # whole files only: an interrupt leaves none half written
        if progress is not None:
            progress(len(outcome.computed), total)

    executor.start()  # before anything is written: a failed start leaves no trace
    (directory / POINTS_DIR).mkdir(parents=True, exist_ok=True)
    try:
        executor.run(todo, done)
    finally:
        executor.close()
    return outcome


def _key_of(rec: Record) -> str:
    from placewise.benchmarks.sweep.points import Point

    return Point.from_dict(rec["point"]).key
