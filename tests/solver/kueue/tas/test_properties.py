"""Property test: on random small trees every placement is feasible and
honours its request; failures happen exactly when Kueue's rules say so.

(``test_reference`` checks the same trees against a naive Kueue port, with
both the Python and the numpy walk.)"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placewise.models.workload import TopologyAssignment
from placewise.solver.kueue.tas import TasPodSetRequest, TasState
from tests.solver.kueue.tas.helpers import (
    BLOCK,
    HOST,
    LEVELS3,
    RACK,
    node,
    request,
    snapshot,
)


@dataclass
class Cluster:
    levels: tuple[str, ...]
    paths: list[tuple[str, ...]]  # leaf path per node (hostname or rack leaves)
    cpu: list[int]  # whole CPUs per node
    pods: list[int]


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    hostname = draw(st.booleans())
    paths, cpu, pods = [], [], []
    for b in range(draw(st.integers(1, 3))):
        for r in range(draw(st.integers(1, 3))):
            for h in range(draw(st.integers(1, 3))):
                paths.append((f"b{b}", f"b{b}r{r}", f"b{b}r{r}h{h}"))
                cpu.append(draw(st.integers(0, 6)))
                pods.append(draw(st.integers(0, 8)))
    if hostname:
        return Cluster(LEVELS3, paths, cpu, pods)
    return Cluster((BLOCK, RACK), [p[:2] for p in paths], cpu, pods)


MODES = ("required", "preferred", "unconstrained", "implied", "slices", "layers")


@st.composite
def requests(draw: st.DrawFn, levels: tuple[str, ...]) -> TasPodSetRequest:
    mode = draw(st.sampled_from(MODES))
    level = draw(st.sampled_from(levels))
    cpu = draw(st.sampled_from([1000, 2000]))
    size = draw(st.integers(1, 3))
    count = size * draw(st.integers(1, 6))
    if mode == "required":
        return request(count, cpu, required=level)
    if mode == "preferred":
        return request(count, cpu, preferred=level)
    if mode == "unconstrained":
        return request(count, cpu, unconstrained=True)
    if mode == "implied":
        return request(count, cpu)
    slice_level = draw(st.sampled_from(levels[levels.index(level) :]))
    required = draw(st.sampled_from([None, level]))
    if mode == "slices" or slice_level == levels[-1]:
        return request(count, cpu, required=required, slices=[(slice_level, size)])
    # Two layers: an outer slice and an inner one deeper that divides it.
    inner_level = draw(st.sampled_from(levels[levels.index(slice_level) + 1 :]))
    outer = size * draw(st.sampled_from([1, 2]))
    inner = draw(st.sampled_from([d for d in (1, 2, 3, 6) if outer % d == 0]))
    count = outer * draw(st.integers(1, 3))
    return request(
        count,
        cpu,
        required=required,
        slices=[(slice_level, outer), (inner_level, inner)],
    )


def leaf_capacity(c: Cluster, cpu_req: int) -> dict[tuple[str, ...], int]:
    """Pods per leaf: nodes pooled per leaf, as Kueue aggregates them."""
    per_cpu: Counter[tuple[str, ...]] = Counter()
    per_pods: Counter[tuple[str, ...]] = Counter()
    for path, cpu, pods in zip(c.paths, c.cpu, c.pods, strict=True):
        per_cpu[path] += cpu * 1000
        per_pods[path] += pods
    return {p: min(per_cpu[p] // cpu_req, per_pods[p]) for p in per_cpu}


def full_paths(c: Cluster, ta: TopologyAssignment) -> Counter[tuple[str, ...]]:
    by_last = {p[-1]: p for p in c.paths}
    return Counter({by_last[d.values[-1]]: d.count for d in ta.domains})


def build(c: Cluster) -> TasState:
    nodes = [
        node(f"n{i}", path, levels=c.levels, cpu=cpu * 1000, pods=pods)
        for i, (path, cpu, pods) in enumerate(zip(c.paths, c.cpu, c.pods, strict=True))
    ]
    return TasState.build(snapshot(nodes, levels=c.levels))


def check(
    c: Cluster,
    req: TasPodSetRequest,
    ta: TopologyAssignment,
    cap: dict[tuple[str, ...], int],
) -> None:
    placed = full_paths(c, ta)
    assert sum(placed.values()) == req.count
    assert all(n > 0 for n in placed.values())
    assert ta.levels == ((HOST,) if c.levels[-1] == HOST else c.levels)
    for path, n in placed.items():
        assert n <= cap[path], (path, n, cap[path])
    topo = req.topology
    if topo.required:
        depth = c.levels.index(topo.required) + 1
        assert len({p[:depth] for p in placed}) == 1
    for layer in topo.slices:  # every layer: whole slices per domain
        depth = c.levels.index(layer.level) + 1
        per: Counter[tuple[str, ...]] = Counter()
        for path, n in placed.items():
            per[path[:depth]] += n
        assert all(n % layer.size == 0 for n in per.values())


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_placements_are_feasible_and_honour_the_request(data: st.DataObject) -> None:
    c = data.draw(clusters())
    state = build(c)
    first = data.draw(requests(c.levels))
    second = data.draw(requests(c.levels))
    cpu = int(first.requests["cpu"])
    cap = leaf_capacity(c, cpu)
    result = state.find_assignments("tas", [[first]])
    if result.assignments is None:
        assert result.reason and "could not distribute" not in result.reason
        topo = first.topology
        if not topo.slices:
            if topo.required:
                depth = c.levels.index(topo.required) + 1
                best = Counter()
                for path, n in cap.items():
                    best[path[:depth]] += n
                assert max(best.values()) < first.count
            else:  # preferred, unconstrained, implied: any capacity will do
                assert sum(cap.values()) < first.count
        return
    ta = result.assignments["main"]
    check(c, first, ta, cap)
    # Capacity is consumed: a second placement never overlaps the first.
    state.add_usage("tas", ta, first.requests)
    used = full_paths(c, ta)
    second_cpu = int(second.requests["cpu"])
    again = state.find_assignments("tas", [[second]])
    if again.assignments is not None:
        ta2 = again.assignments["main"]
        got2 = full_paths(c, ta2)
        for path, n in got2.items():
            idx = [i for i, p in enumerate(c.paths) if p == path]
            cpu_free = sum(c.cpu[i] for i in idx) * 1000 - used[path] * cpu
            pods_free = sum(c.pods[i] for i in idx) - used[path]
            assert n * second_cpu <= cpu_free and n <= pods_free
    state.remove_usage("tas", ta, first.requests)
    assert state.find_assignments("tas", [[first]]).assignments == result.assignments


@settings(
    max_examples=100,
    deadline=None,
)
@given(data=st.data())
def test_leader_joins_workers_in_the_required_domain(data: st.DataObject) -> None:
    c = data.draw(clusters())
    state = build(c)
    level = data.draw(st.sampled_from(c.levels))
    workers = request(data.draw(st.integers(1, 8)), name="workers", required=level)
    leader = request(1, name="leader", cpu=500)
    result = state.find_assignments("tas", [[workers, leader]])
    if result.assignments is None:
        return
    w = full_paths(c, result.assignments["workers"])
    ld = full_paths(c, result.assignments["leader"])
    assert sum(w.values()) == workers.count and sum(ld.values()) == 1
    depth = c.levels.index(level) + 1
    assert len({p[:depth] for p in list(w) + list(ld)}) == 1
    cpu_cap = Counter()
    pods_cap = Counter()
    for path, cpu, pods in zip(c.paths, c.cpu, c.pods, strict=True):
        cpu_cap[path] += cpu * 1000
        pods_cap[path] += pods
    for path in set(w) | set(ld):
        assert w[path] * 1000 + ld[path] * 500 <= cpu_cap[path]
        assert w[path] + ld[path] <= pods_cap[path]
