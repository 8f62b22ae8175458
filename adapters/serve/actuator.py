"""The reconcile loop that makes the current plan happen.

Woken by every cache change and a plan publish (at least every ``resync``
seconds), it first recomputes, on every replica, which admitted gangs could
bind right now (:attr:`Actuator.blockers`, read by the extender's filter),
then, on the leader only: issues the plan's preemptions, finishes or rolls
back half-bound gangs, binds/ungates ready gangs (binder mode), writes
Kueue admissions (kueue mode) and reports pending gangs with an Event.
Every action re-derives what to do from the cache, so running it twice, or
after a restart, does nothing twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from adapters.serve.binder import Binder
from adapters.serve.config import ServeConfig
from adapters.serve.events import Recorder
from adapters.serve.informer import Cache
from adapters.serve.kueue_mode import KueueAdmitter
from adapters.serve.preempt import Preemptor
from adapters.serve.solveloop import PlanState, SolveLoop

log = logging.getLogger("placewise.serve.actuator")


class Actuator:
    def __init__(
        self,
        cfg: ServeConfig,
        cache: Cache,
        loop: SolveLoop,
        binder: Binder,
        preemptor: Preemptor,
        admitter: KueueAdmitter | None,
        events: Recorder,
        leading: Callable[[], bool],
    ) -> None:
        self.cfg, self.cache, self.loop = cfg, cache, loop
        self.binder, self.preemptor, self.admitter = binder, preemptor, admitter
        self.events, self.leading = events, leading
        self.blockers: dict[str, str | None] = {}
        """admitted gang key -> why it cannot bind now (None: it can)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="actuator", daemon=True)
        self.ticks = 0

    def start(self) -> Actuator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.cache.nudge()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def poke(self) -> None:
        """A new plan was published: act on it now."""
        self._wake.set()
        self.cache.nudge()

    def _run(self) -> None:
        gen = -1
        while not self._stop.is_set():
            if self._wake.is_set():
                gen = self.cache.generation
            else:
                gen = self.cache.wait(gen, timeout=self.cfg.resync)
            self._wake.clear()
            state = self.loop.state
            if state is None or self._stop.is_set():
                continue
            try:
                self.tick(state)
            except Exception:  # never let one bad action stop reconciling
                log.exception("actuator tick failed")
                self._stop.wait(0.2)

    def tick(self, state: PlanState) -> None:
        self.ticks += 1
        usage = self.binder.usage()
        self.blockers = {
            key: self.binder.blocker(state, key, usage)
            for key, gp in state.gangs.items()
            if gp.admitted
        }
        if not self.leading():
            return
        self.preemptor.act(state)
        for view in state.built.gangs.values():
            if view.state == "partial" and self.leading():
                self.binder.complete(view)
        if self.cfg.mode == "binder":
            for key, blocker in sorted(self.blockers.items()):
                if blocker is None and self.leading():
                    reason = self.binder.bind_gang(state, key)
                    if reason is not None:
                        log.info("gang %s not bound: %s", key, reason)
        if self.admitter is not None:
            self.admitter.act(state)
        self._report_pending(state)

    def _report_pending(self, state: PlanState) -> None:
        for key, gp in sorted(state.gangs.items()):
            if gp.admitted:
                continue
            view = state.built.gangs.get(key)
            pods = (
                view.gang.pods
                if view is not None
                else (
                    state.built.waiting[key].pods if key in state.built.waiting else []
                )
            )
            for pod in pods:
                self.events.event(
                    pod,
                    "FailedScheduling",
                    f"gang {key}: {gp.reason}",
                    action="Scheduling",
                    type_="Warning",
                )
