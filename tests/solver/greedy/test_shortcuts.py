"""The greedy's shortcuts at scale change nothing: answers remembered by
state version (preemption searches, TAS placements) and walks refused by
``TasState.could_fit`` give the same run as asking afresh every time."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.solver.greedy.preemption import Preemptor
from placewise.solver.greedy.runs import RunMoves
from placewise.solver.greedy.slack import QuotaSlack
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


def _state(state: ClusterState) -> tuple[object, ...]:
    """Quota usage, running sets and every flavor's free capacity."""
    quota = sorted((k, sorted(n.usage.items())) for k, n in state.quota.nodes.items())
    running = sorted((q, sorted(per)) for q, per in state.running.items())
    rem = [state.tas.tree(f).rem.tolist() for f in state.tas.flavors()]
    return quota, running, rem


def test_kept_prefix_and_owed_quota_give_the_same_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A walk's prefix left out of the tables after the bisection, and fill
    back's victims added to quota only when the tree is read, decide as
    putting everything back, taking the prefix out and adding victims one by
    one do (the paths a saturating walk, or margins that never promise,
    take)."""
    snap = generate_snapshot(Instance("scale-1000", 1))
    fired: collections.Counter[str] = collections.Counter()
    keep, repay = Preemptor._keep_prefix, Preemptor._repay

    def kept(self: Preemptor, *args: Any) -> None:
        fired["kept"] += 1
        keep(self, *args)

    def repaid(self: Preemptor, owed: list[Any]) -> None:
        fired["owed"] += len(owed)
        repay(self, owed)

    get_targets = Preemptor.get_targets

    def as_found(self: Preemptor, *args: Any) -> Any:
        before = _state(self.state)
        found = get_targets(self, *args)
        assert _state(self.state) == before  # every search leaves it as found
        return found

    monkeypatch.setattr(Preemptor, "_keep_prefix", kept)
    monkeypatch.setattr(Preemptor, "_repay", repaid)
    monkeypatch.setattr(Preemptor, "get_targets", as_found)
    fast = _decisions(snap)
    assert fired["kept"] and fired["owed"]

    init = RunMoves.__init__

    def saturating(self: RunMoves, *args: Any) -> None:
        init(self, *args)
        self.big = True

    monkeypatch.setattr(RunMoves, "__init__", saturating)
    monkeypatch.setattr(QuotaSlack, "add", lambda self, info: False)
    fired.clear()
    assert _decisions(snap) == fast
    assert not fired["kept"] and not fired["owed"]


def test_running_rows_are_the_builds_own() -> None:
    """The rows a running workload moves with are what ``prepare`` gives."""
    state = ClusterState(generate_snapshot(Instance("topology-heavy", 1)))
    usages = [t for per in state.running.values() for i in per.values() for t in i.tas]
    assert usages and all(t.prepared is not None for t in usages)
    for t in usages:
        fresh = state.tas.prepare(t.flavor, t.assignment, t.per_pod)
        assert t.prepared is not None
        assert t.prepared.owner is fresh.owner
        assert (t.prepared.keys == fresh.keys).all()
        assert (t.prepared.delta == fresh.delta).all()
        assert (t.prepared.unique, t.prepared.big) == (fresh.unique, fresh.big)
