"""The greedy's shortcuts at scale change nothing: answers remembered by
state version (preemption searches, TAS placements) and walks refused by
``TasState.could_fit`` give the same run as asking afresh every time."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.solver.greedy.preemption import Preemptor
from placewise.solver.greedy.solver import run_greedy
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.tas.state import TasState


def _decisions(snap: Any) -> tuple[object, ...]:
    o = run_greedy(snap)
    return o.cycles, o.admitted, o.preempted, o.reasons


def test_versions_come_back_only_after_exact_what_ifs() -> None:
    state = ClusterState(generate_snapshot(Instance("preemption-heavy", 1)))
    infos = [i for per in state.running.values() for i in per.values()][:3]
    v0 = state.version
    undo = state.simulate_removal(infos)
    v1 = state.version
    assert v1 != v0
    undo()
    assert state.version == v0
    state.remove(infos[0])
    v2 = state.version
    assert v2 not in (v0, v1)  # a real change never reuses a number
    undo = state.simulate_removal(infos[1:2])
    state.add(infos[0])  # not part of the what-if: the undo cannot hide it
    undo()
    assert state.version not in (v0, v1, v2)


@pytest.mark.parametrize(("family", "seed"), [("scale-1000", 1), ("fair-share", 1)])
def test_shortcuts_give_the_same_run(
    family: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = generate_snapshot(Instance(family, seed))
    fired: collections.Counter[str] = collections.Counter()
    could_fit = TasState.could_fit
    get_targets = Preemptor.get_targets

    def counted(self: TasState, *args: Any) -> bool | None:
        verdict = could_fit(self, *args)
        fired[f"could_fit {verdict}"] += 1
        return verdict

    def searches(self: Preemptor, *args: Any) -> Any:
        hit = bool(self._memo) and self._memo_version == self.state.version
        fired["memo warm"] += hit
        return get_targets(self, *args)

    monkeypatch.setattr(TasState, "could_fit", counted)
    monkeypatch.setattr(Preemptor, "get_targets", searches)
    fast = _decisions(snap)
    if family == "scale-1000":
        assert fired["could_fit False"] and fired["memo warm"]

    def fresh_targets(self: Preemptor, *args: Any) -> Any:
        self._memo.clear()
        return get_targets(self, *args)

    find = TasState.find_workload_assignments

    def fresh_find(self: TasState, *args: Any, **kwargs: Any) -> Any:
        self._live_results.clear()
        return find(self, *args, **kwargs)

    monkeypatch.setattr(TasState, "could_fit", lambda self, *args: None)
    monkeypatch.setattr(Preemptor, "get_targets", fresh_targets)
    monkeypatch.setattr(TasState, "find_workload_assignments", fresh_find)
    assert _decisions(snap) == fast
