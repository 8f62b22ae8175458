"""Every plan a solver returns to test code passes the independent validator.

The rule was kept by hand, test by test, and leaked: hundreds of plans per
run (bound checks, greedy floors, baselines, the sidecar's plans) never
reached the validator.  Here it is structural.  :func:`install` replaces the
public solver entry points (:data:`ENTRY_POINTS`) wherever they are bound —
the defining module, re-exporting packages and any module that imported
them before — so test modules and in-process callers (the CLI, the sidecar's
solve loop) get a wrapper that validates the returned plan against the
snapshot it was given.  Only the outermost call of a thread is checked, so
``solve`` dispatching to ``solve_cpsat`` counts one plan, not two.

A rejection raised in the test's own thread fails the test on the spot (and
lets hypothesis shrink it); one found in another thread (the sidecar solves
in worker threads) is kept and fails the test at teardown.  A test that
means to see a solver's invalid plan says so with
``@pytest.mark.invalid_plans_allowed(reason)``.  Plans built by hand never
pass through here.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate

MARKER = "invalid_plans_allowed"


class PlanRejected(AssertionError):
    """A solver returned a plan the validator rejects."""


def _plan(result: Any) -> Plan:
    assert isinstance(result, Plan), f"expected a Plan, got {type(result)}"
    return result


def _outcome_plan(result: Any) -> Plan:
    """Baselines return a BaselineOutcome: the plan plus partial gangs."""
    return _plan(result.plan)


ENTRY_POINTS: tuple[tuple[str, str, Callable[[Any], Plan]], ...] = (
    ("placewise.solver.solve", "solve", _plan),
    ("placewise.solver.greedy.solver", "solve_greedy", _plan),
    ("placewise.solver.cpsat.solve", "solve_cpsat", _plan),
    ("placewise.solver.baselines.kube_default", "run_kube_default", _outcome_plan),
    ("placewise.solver.baselines.binpack_gang", "run_binpack_gang", _outcome_plan),
    ("placewise.solver.greedy.multikueue", "solve_multikueue", _plan),
)
"""(module, function, result -> Plan): everything that hands a solver's plan
to its caller.  ``solve_kube_default``/``solve_binpack_gang``/``run_baseline``
go through the ``run_*`` functions; the optimizer's warm start
(``run_greedy``) is internal and judged through the optimizer's result."""


@dataclass
class Audit:
    validated: Counter[str] = field(default_factory=Counter)
    """Plans validated, by ``solver.name``."""
    published: int = 0
    """Sidecar plans checked again when published (see :meth:`check`)."""
    allowed: int = 0
    """Rejected plans in tests marked :data:`MARKER`."""
    seconds: float = 0.0
    """Time spent validating (the audit's cost to the suite)."""
    allow: bool = False
    """The running test is marked :data:`MARKER`."""
    errors: list[str] = field(default_factory=list)
    """Rejections seen outside the test's thread, for teardown to report."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    local: threading.local = field(default_factory=threading.local)

    def check(self, snapshot: Snapshot, plan: Plan, origin: str) -> None:
        """Validate one plan; count it; fail (or record) a rejection."""
        start = time.perf_counter()
        violations = validate(snapshot, plan)
        with self.lock:
            self.seconds += time.perf_counter() - start
            if origin == "published":
                self.published += 1
            else:
                self.validated[plan.solver.name] += 1
            if violations and self.allow:
                self.allowed += 1
                return
        if not violations:
            return
        message = (
            f"{origin}: the {plan.solver.name} plan ({plan.solver.status}) is "
            f"rejected by the validator:\n"
            + "\n".join(f"  {v}" for v in violations[:20])
        )
        if threading.current_thread() is threading.main_thread():
            raise PlanRejected(message)
        with self.lock:
            self.errors.append(message)

    def wrap(self, fn: Callable[..., Any], to_plan: Callable[[Any], Plan]) -> Any:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def audited(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(self.local, "depth", 0)
            self.local.depth = depth + 1
            try:
                result = fn(*args, **kwargs)
            finally:
                self.local.depth = depth
            if depth == 0:
                snapshot = signature.bind(*args, **kwargs).arguments["snapshot"]
                self.check(snapshot, to_plan(result), fn.__name__)
            return result

        audited.__audited__ = fn  # type: ignore[attr-defined]
        return audited

    def take_errors(self) -> list[str]:
        with self.lock:
            errors, self.errors = self.errors, []
        return errors


AUDIT = Audit()


def install() -> None:
    """Wrap every entry point in every module that holds it (idempotent)."""
    import importlib

    swaps: dict[int, Any] = {}
    for module_name, name, to_plan in ENTRY_POINTS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        if hasattr(original, "__audited__"):
            continue
        swaps[id(original)] = AUDIT.wrap(original, to_plan)
    if not swaps:
        return
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith(("placewise", "tests")) or module is None:
            continue
        namespace = vars(module)
        for attr, value in list(namespace.items()):
            wrapper = swaps.get(id(value))
            if wrapper is not None and wrapper.__audited__ is value:
                namespace[attr] = wrapper


def watch_published(loop: Any) -> None:
    """Validate every plan a sidecar's solve loop publishes against the
    snapshot it built from the cluster (the API server's objects as its
    informers see them), including plans no solver made ("nothing
    pending")."""
    publish = loop.publish

    def audited(state: Any) -> None:
        AUDIT.check(state.built.snapshot, state.plan, "published")
        publish(state)

    loop.publish = audited
