"""The re-solve loop: debounced, never without a plan, never stuck on a solver.

A change in the cache starts a quiet-period timer (``debounce``), bounded by
``max_delay`` while changes keep coming, so a burst of pod creations is one
solve.  The configured solver runs in a worker thread; if it raises, reports
NO_SOLUTION or overruns its budget by a margin, the greedy solver answers
instead (counted in ``placewise_solver_fallbacks_total``).  An overrunning
optimizer thread cannot be killed, so until it ends further solves use greedy
rather than piling up threads.  Every plan is checked by the independent
validator before it is published; one it rejects is replaced by the greedy
plan (and, should that fail too, by a plan that changes nothing), so a solver
bug cannot make the loop overcommit or evict for nothing.  The last good plan
serves until the new one is published.

A solve is told about the previous published plan (:mod:`.stability`): when
nothing changed in the cluster since, what that plan kept running stays.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from placewise.adapters.serve.config import ServeConfig
from placewise.adapters.serve.engine.gangs import meta
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.placement import GangPlan, Projector, node_usage
from placewise.adapters.serve.engine.snapshot import Built, SnapshotBuilder, node_of
from placewise.adapters.serve.engine.stability import Baseline
from placewise.adapters.serve.kube.informer import Cache
from placewise.models.moves import MoveRules
from placewise.models.plan import Plan, PlanPending, SolverInfo
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.solve import SolveParams, solve

log = logging.getLogger("placewise.serve.solve")


@dataclass
class PlanState:
    """One published plan with everything the request handlers look up."""

    built: Built
    plan: Plan
    gangs: dict[str, GangPlan]
    members: dict[str, str] = field(default_factory=dict)
    """pod ``ns/name`` -> gang key, for every member of every known gang."""
    solved_at: float = 0.0
    fallback: str | None = None

    def gang_of(self, pod_key: str) -> GangPlan | None:
        key = self.members.get(pod_key)
        return self.gangs.get(key) if key else None


class SolveLoop:
    def __init__(
        self,
        cache: Cache,
        builder: SnapshotBuilder,
        cfg: ServeConfig,
        metrics: Metrics,
        required_kinds: list[str],
        on_plan: Callable[[PlanState], None] | None = None,
    ) -> None:
        self.cache, self.builder, self.cfg, self.metrics = cache, builder, cfg, metrics
        self.required = required_kinds
        self.on_plan = on_plan
        self.state: PlanState | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="solve-loop", daemon=True
        )
        self._orphan: threading.Thread | None = None
        self.solves = 0

    def start(self) -> SolveLoop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.cache.nudge()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    # -- the loop --------------------------------------------------------------

    def _run(self) -> None:
        solved = seen = -1
        while not self._stop.is_set():
            gen = seen = self.cache.wait(seen, timeout=1.0)
            if self._stop.is_set():
                return
            if gen == solved or not self.cache.synced(self.required):
                continue
            first = time.monotonic()
            while not self._stop.is_set():
                newer = self.cache.wait(gen, timeout=self.cfg.debounce)
                if newer == gen or time.monotonic() - first >= self.cfg.max_delay:
                    break
                gen = newer
            solved = self.cache.generation
            try:
                self.publish(self.solve_once())
            except Exception:  # a bad snapshot must not kill the loop
                log.exception("re-solve failed; the previous plan keeps serving")
                self._stop.wait(0.5)

    def solve_once(self) -> PlanState:
        started = time.monotonic()
        previous = self.state
        self.builder.sticky = (
            {k for k, g in previous.gangs.items() if g.admitted} if previous else set()
        )
        baseline = None
        if previous is not None and previous.built.facts is not None:
            baseline = Baseline.of(previous.built.facts, previous.plan)
        built = self.builder.build(started, baseline)
        plan, fallback = self._checked(*self._solve(built.snapshot), built.snapshot)
        usage = node_usage(built, lambda key: self._expected_node(key))
        gangs = Projector(built, plan, usage).project()
        members: dict[str, str] = {}
        for gang in [v.gang for v in built.gangs.values()] + list(
            built.waiting.values()
        ):
            for pod in gang.pods:
                members[f"{gang.namespace}/{meta(pod).get('name')}"] = gang.key
        self.solves += 1
        admitted = sum(1 for g in gangs.values() if g.admitted)
        self.metrics.gangs_admitted.set(
            admitted + sum(1 for a in plan.admissions if a.workload in built.kueue)
        )
        self.metrics.gangs_pending.set(len(plan.pending) + len(built.waiting))
        log.info(
            "plan %d (%s %s, %.3fs): %d admitted, %d preempted, %d pending; %s",
            self.solves,
            plan.solver.name,
            plan.solver.status,
            time.monotonic() - started,
            len(plan.admissions),
            len(plan.preemptions),
            len(plan.pending) + len(built.waiting),
            f"free ({built.change})"
            if built.change
            else f"nothing changed: {len(built.kept)} running kept",
        )
        return PlanState(built, plan, gangs, members, time.monotonic(), fallback)

    def _expected_node(self, pod_key: str) -> str | None:
        pod = self.cache.get("Pod", pod_key)
        return node_of(self.cache, pod) if pod is not None else None

    def publish(self, state: PlanState) -> None:
        self.state = state
        if self.on_plan is not None:
            self.on_plan(state)

    # -- solving with fallback ----------------------------------------------------

    def _checked(
        self, plan: Plan, fallback: str | None, snap: Snapshot
    ) -> tuple[Plan, str | None]:
        """The plan if the validator accepts it, else greedy's, else a no-op."""
        problems = validate(snap, plan)
        if not problems:
            return plan, fallback
        log.warning(
            "%s plan rejected by the validator (%d violation(s), first: %s)",
            plan.solver.name,
            len(problems),
            problems[0],
        )
        if plan.solver.name != "greedy":
            plan = self._greedy(snap, "invalid")
            problems = validate(snap, plan)
            if not problems:
                return plan, "invalid"
            log.error("greedy plan rejected too (first: %s)", problems[0])
        reason = f"no valid plan this round ({problems[0].rule}); retrying on change"
        pending = tuple(
            PlanPending(workload=w.key, reason=reason) for w in snap.pending
        )
        return Plan(
            solver=SolverInfo(name="none", status="NO_SOLUTION"), pending=pending
        ), "invalid"

    def _solve(self, snap: Snapshot) -> tuple[Plan, str | None]:
        if not snap.pending:
            return Plan(solver=SolverInfo(name="none", status="OPTIMAL")), None
        solver = self.cfg.solver
        if self._orphan is not None and self._orphan.is_alive():
            return self._greedy(snap, "optimizer-busy"), "optimizer-busy"
        if solver == "greedy":
            return self._timed(snap, "greedy"), None
        box: dict[str, object] = {}

        def work() -> None:
            try:
                box["plan"] = self._timed(snap, solver)
            except Exception as exc:  # reported below as a fallback
                box["error"] = exc

        worker = threading.Thread(target=work, name="optimizer", daemon=True)
        worker.start()
        worker.join(self.cfg.time_limit * 1.5 + self.cfg.solver_grace)
        if worker.is_alive():
            self._orphan = worker
            log.warning(
                "%s overran %.1fs; greedy plan used", solver, self.cfg.time_limit
            )
            return self._greedy(snap, "timeout"), "timeout"
        plan = box.get("plan")
        if isinstance(plan, Plan) and plan.solver.status == "FALLBACK":
            # The optimizer itself returned its warm start (the greedy plan).
            label = fallback_label(plan.solver.fallback)
            log.info(
                "%s returned the greedy plan (%s)",
                solver,
                plan.solver.fallback or label,
            )
            self.metrics.fallbacks.labels(label).inc()
            return plan, label
        if isinstance(plan, Plan) and plan.solver.status != "NO_SOLUTION":
            return plan, None
        reason = "error" if "error" in box else "no-solution"
        log.warning(
            "%s failed (%s); greedy plan used", solver, box.get("error", reason)
        )
        return self._greedy(snap, reason), reason

    def _greedy(self, snap: Snapshot, reason: str) -> Plan:
        self.metrics.fallbacks.labels(reason).inc()
        return self._timed(snap, "greedy")

    def _timed(self, snap: Snapshot, solver: str) -> Plan:
        policy = self.cfg.policy
        if self.cfg.mode != "kueue":  # only kueue mode carries moves out
            policy = replace(policy, moves=MoveRules())
        started = time.monotonic()
        result = "ok"
        try:
            return solve(snap, SolveParams.of(self.cfg, solver=solver, policy=policy))
        except Exception:
            result = "error"
            raise
        finally:
            self.metrics.solve_duration.labels(solver, result).observe(
                time.monotonic() - started
            )


def fallback_label(why: str | None) -> str:
    """The metric label for why the optimizer returned its warm start: a
    search that ended below the warm start after 0.4 s is not a time limit."""
    text = why or ""
    if "below the warm start" in text:
        return "below-warm-start"
    if "fair" in text:
        return "fair-sharing"
    if "time limit" in text:
        return "time-limit"
    if "outside the model" in text:
        return "outside-model"
    if "failed" in text:
        return "error"
    return "other"
