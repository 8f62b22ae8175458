"""What one replay is: a plain, serializable description of its inputs.

A replay is an experiment other tools repeat (a later ``placewise sweep``
runs many of them in worker processes), so its whole input is one frozen
dataclass of plain values: it pickles, it round-trips through JSON, and the
same config gives the same result with the greedy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SOLVER_NAMES: dict[str, str] = {
    "greedy": "greedy",
    "kueue": "greedy",
    "cpsat": "cpsat",
    "auto": "auto",
    "kube-default": "kube-default",
    "binpack-gang": "binpack-gang",
}
"""Replay solver names -> ``placewise.solver.solve`` names (``kueue`` is the
bench's name for the Kueue-faithful greedy)."""
DURATIONS = ("generated", "openb")
"""Run times of generated arrivals: lognormal, or drawn from the openb trace."""
TICK_S = 30.0
"""Solves happen on this grid: events inside one tick share a solve."""
DRAIN_S = 24 * 3600.0
"""After the last arrival the replay runs at most this long (a trace's
multi-day jobs would otherwise stretch it without telling anything new)."""


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    """The inputs of one replay through one solver.

    The cluster is ``instances`` (files, loaded as ``placewise solve`` does)
    or the generated ``family`` at ``seed``; the jobs are ``job_trace`` or,
    without one, the family's pending workloads arriving at their creation
    times (``arrivals`` overrides how many).
    """

    instances: tuple[str, ...] = ()
    family: str | None = None
    job_trace: str | None = None
    trace_format: str = "helios"
    arrivals: int | None = None
    load: float | None = None
    """Target offered load: arrival times are rescaled to reach it."""
    hours: float | None = None
    """Keep the jobs that arrive in the first ``hours`` of the trace/stream."""
    seed: int = 1
    solver: str = "greedy"
    time_limit: float = 10.0
    workers: int = 0
    """CP-SAT search workers; 0 = every core."""
    durations: str = "generated"
    deterministic_time: float | None = None
    """CP-SAT's deterministic work budget per solve (``time_limit`` stays
    the wall cap): with one worker a replay then gives the same figures on
    a loaded machine as on an idle one, so two solvers or two commits can
    be compared without the machine's load deciding."""
    tick_s: float = TICK_S
    tick_phase_s: float = 0.0
    """Solves after the first (at 0) fall on ``tick_phase_s + k x tick_s``:
    the same cadence, the grid shifted against the arrivals
    (:mod:`placewise.benchmarks.replay_noise` measures what that changes)."""
    drain_s: float = DRAIN_S
    admission_fair_sharing: bool = False
    """Turn Kueue's admission fair sharing on for every ClusterQueue
    (``replay.afs.REPLAY_AFS``); an instance's own AFS Configuration is
    honoured without it."""
    policy: str | None = None
    """``--policy FILE``: the solver's objective settings, as ``placewise
    solve`` reads them (None = the defaults).  A path, not a ``Policy``, so
    the config stays plain data and the JSON records which objective ran."""

    def check(self) -> None:
        """ValueError naming the bad setting (the CLI turns it into exit 2)."""
        if self.solver not in SOLVER_NAMES:
            raise ValueError(
                f"unknown solver {self.solver!r}; known: {', '.join(SOLVER_NAMES)}"
            )
        if bool(self.instances) == bool(self.family):
            raise ValueError("give INSTANCE files or --family, not both or neither")
        if self.instances and not self.job_trace:
            raise ValueError("INSTANCE files replay a --job-trace; give one")
        if self.job_trace and self.arrivals is not None:
            raise ValueError("--arrivals counts generated arrivals; not with a trace")
        if self.load is not None and not self.load > 0:
            raise ValueError(f"--load must be > 0, got {self.load:g}")
        if self.hours is not None and not self.hours > 0:
            raise ValueError(f"--hours must be > 0, got {self.hours:g}")
        if self.arrivals is not None and self.arrivals < 1:
            raise ValueError(f"--arrivals must be >= 1, got {self.arrivals}")
        if self.durations not in DURATIONS:
            raise ValueError(
                f"unknown durations {self.durations!r}; known: {', '.join(DURATIONS)}"
            )
        if not self.tick_s > 0 or not self.drain_s > 0:
            raise ValueError("tick and drain must be > 0 seconds")
        if not 0 <= self.tick_phase_s < self.tick_s:
            raise ValueError("the tick's phase must be in [0, tick) seconds")
        if self.deterministic_time is not None and not self.deterministic_time > 0:
            raise ValueError("--deterministic-time must be > 0")
        if self.time_limit <= 0 or self.workers < 0:
            raise ValueError("--time-limit must be > 0 and --workers >= 0")

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["instances"] = list(self.instances)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown replay settings: {', '.join(unknown)}")
        values = dict(data)
        values["instances"] = tuple(values.get("instances", ()))
        return cls(**values)
