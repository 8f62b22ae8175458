"""The reconcile loop that makes the current plan happen.

Woken by every cache change and a plan publish (at least every ``resync``
seconds), it first recomputes, on every replica, which admitted gangs could
bind right now (:attr:`Actuator.blockers`, read by the extender's filter),
then, on the leader only: issues the plan's preemptions, finishes or rolls
back half-bound gangs, binds/ungates ready gangs (binder mode), writes the
Kueue admissions that fit the cluster as it is now (kueue mode) and reports
pending gangs with an Event.
Every action re-derives what to do from the cache, so running it twice, or
after a restart, does nothing twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from placewise.adapters.serve.config import ServeConfig
from placewise.adapters.serve.engine.preempt import Evictor
from placewise.adapters.serve.engine.solveloop import PlanState, SolveLoop
from placewise.adapters.serve.kube.events import Recorder
from placewise.adapters.serve.kube.informer import Cache
from placewise.adapters.serve.modes.binder import Binder
from placewise.adapters.serve.modes.kueue_mode import KueueAdmitter
from placewise.models.snapshot import Snapshot

log = logging.getLogger("placewise.serve.actuator")
MIN_INTERVAL = 0.2
STALE_REPLAN = 1.0


class Actuator:
    def __init__(
        self,
        cfg: ServeConfig,
        cache: Cache,
        loop: SolveLoop,
        binder: Binder,
        preemptor: Evictor,
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
        self._gangs = ThreadPoolExecutor(4, thread_name_prefix="gang")
        self._replanned_at = 0.0

    def start(self) -> Actuator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.cache.nudge()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        self._gangs.shutdown(wait=True, cancel_futures=True)

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
                # Coalesce bursts (every bind is a change): at most ~5 ticks/s.
                self._stop.wait(MIN_INTERVAL)
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
        if self.ticks % 100 == 0:
            self.binder.prune(set(state.gangs) | set(state.built.gangs))
        usage = self.binder.usage()
        self.blockers = {
            key: self.binder.blocker(state, key, usage)
            for key, gp in state.gangs.items()
            if gp.admitted
        }
        self._replan_if_stale(state)
        if not self.leading():
            return
        self.preemptor.act(state)
        for view in state.built.gangs.values():
            if view.state == "partial" and self.leading():
                self.binder.complete(view)
        if self.cfg.mode == "binder":
            ready = [k for k, why in sorted(self.blockers.items()) if why is None]
            for key, reason in zip(
                ready,
                self._gangs.map(lambda k: self.binder.bind_gang(state, k), ready),
                strict=True,
            ):
                if reason is not None:
                    log.info("gang %s not bound: %s", key, reason)
        if self.admitter is not None:
            self.admitter.act(state, self._current)
        self._report_pending(state)

    def _current(self) -> Snapshot:
        """The cluster as the cache has it now: the admission gate's view."""
        return self.loop.builder.build(time.monotonic()).snapshot

    def _replan_if_stale(self, state: PlanState) -> None:
        """A gang blocked by something other than its victims means the plan
        no longer matches the cluster (a gang bound under the previous plan
        while this one was computed, a pod someone else placed): re-solve, at
        most every ``STALE_REPLAN`` seconds."""
        stale = [
            key
            for key, why in self.blockers.items()
            if why is not None and not why.startswith("waiting for")
        ]
        now = time.monotonic()
        if (
            stale
            and now - self._replanned_at > STALE_REPLAN
            and state.solved_at < now - STALE_REPLAN
        ):
            self._replanned_at = now
            log.info(
                "plan is stale for %d gang(s) (%s: %s); re-solving",
                len(stale),
                stale[0],
                self.blockers[stale[0]],
            )
            self.cache.touch()

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
