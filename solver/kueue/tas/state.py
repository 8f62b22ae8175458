"""Shared TAS capacity of one snapshot, and the placer's public entry point.

Capacity model (kueue-semantics §6.1): each flavor's leaf has a fixed base
(allocatable minus non-TAS pods of its nodes). TAS usage of hostname-level
flavors is kept once per hostname in ``host_usage``, shared by every such
flavor, which is what TASHandleOverlappingFlavors does; a flavor whose
leaves aggregate nodes keeps its own per-leaf usage, as Kueue does. Each
flavor's ``rem`` (base minus usage) is updated incrementally on every
``add_usage``/``remove_usage``, so a placement only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from placewise.models.cluster import PODS
from placewise.models.scheduling import Toleration
from placewise.models.snapshot import Snapshot
from placewise.models.workload import TopologyAssignment
from placewise.solver.kueue.tas.assign import assign_group
from placewise.solver.kueue.tas.capacity import Demand, demand, fit_count, free_view
from placewise.solver.kueue.tas.memo import (
    EMPTY_CACHE,
    FIT_ROWS_CACHE,
    RequestsKey,
    leaf_needs,
    requests_key,
)
from placewise.solver.kueue.tas.tables import Prepared, UsageTables, plain_flavors
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.tas.types import (
    TasPodSetRequest,
    TasResult,
    clip,
)

Groups = Sequence[Sequence[TasPodSetRequest]]
Usage = tuple[str, TopologyAssignment, dict[str, int]]


def _copy(result: TasResult) -> TasResult:
    """A remembered result, its assignments dict the caller's own."""
    found = result.assignments
    return TasResult(
        None if found is None else dict(found), result.reason, result.failed_pod_set
    )


class TasState(UsageTables):
    """Shared, mutable TAS capacity for every TAS flavor of one snapshot."""

    def __init__(
        self,
        resources: Sequence[str],
        trees: Mapping[str, FlavorTree],
        hosts: Sequence[str],
    ) -> None:
        self.resources: tuple[str, ...] = tuple(resources)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(resources)}
        self._trees: dict[str, FlavorTree] = dict(trees)
        self._host_index: dict[str, int] = {h: i for i, h in enumerate(hosts)}
        self._host_usage: IntArray = np.zeros((len(resources), len(hosts)), np.int64)
        # Per hostname flavor: global host row -> its leaf (-1 if absent).
        self._host_leaf: dict[str, IntArray] = {}
        self._host_identity: set[str] = set()
        for name, tree in self._trees.items():
            if tree.hostname:
                rows = np.asarray(
                    [self._host_index[p[-1]] for p in tree.leaf_paths], dtype=np.int64
                )
                tree.leaf_host = rows
                table = np.full(len(hosts), -1, dtype=np.int64)
                table[rows] = np.arange(rows.shape[0])
                self._host_leaf[name] = table
                if rows.shape[0] == len(hosts) and bool(
                    (rows == np.arange(len(hosts))).all()
                ):
                    self._host_identity.add(name)
        self.balanced = False
        """Kueue's TASBalancedPlacement gate (from the Configuration)."""
        self._workloads: dict[str, list[Usage]] = {}
        self._demands: dict[tuple[tuple[str, int], ...], Demand] = {}
        self._empty_results: dict[tuple[bool, RequestsKey], TasResult] = {}
        self._fit_rows: dict[
            tuple[str, int],
            tuple[TopologyAssignment, tuple[IntArray, IntArray] | None],
        ] = {}
        self._plain: set[str] = plain_flavors(self._trees)
        self._all_plain = len(self._plain) == len(self._trees)
        self._saturated = False
        """Whether a large delta has touched a usage table.

        A ``rem`` entry is ``base - usage``: with ``base`` below ``_PLAIN``
        and only small deltas summed into ``usage`` (the argument of
        ``_BIG``) it cannot leave +-CAP, so :meth:`_refresh` skips the
        saturation until then."""
        self._leaf_domain: dict[tuple[str, int], IntArray] = {}
        """Per (flavor, level): each leaf's domain there (:meth:`could_fit`)."""
        self._version = 0
        """Bumped by every table update (:meth:`move_rows`)."""
        self._live_results: dict[tuple[bool, RequestsKey], TasResult] = {}
        self._live_version = -1
        """Placements on the current tables, valid while ``_version`` holds."""
        self._built = {}
        """Rows :meth:`build` prepared per running assignment (by its id; see
        :meth:`built_rows`)."""

    @classmethod
    def build(cls, snapshot: Snapshot) -> TasState:
        """Trees of every TAS flavor, minus non-TAS pods and running TAS usage."""
        flavor_nodes = {
            name: snapshot.flavor_nodes(rf)
            for name, rf in sorted(snapshot.flavors.items())
            if rf.topology_name is not None and rf.topology_name in snapshot.topologies
        }
        names: set[str] = {PODS}
        for nodes in flavor_nodes.values():
            for node in nodes:
                names.update(node.allocatable)
        resources = sorted(names)
        index = {r: i for i, r in enumerate(resources)}
        pod_usage = snapshot.pod_usage_by_node
        node_free: dict[str, list[int]] = {}
        for nodes in flavor_nodes.values():
            for node in nodes:
                if node.name in node_free:
                    continue
                used = pod_usage.get(node.name, {})
                node_free[node.name] = [
                    clip(node.allocatable.get(r, 0)) - used.get(r, 0) for r in resources
                ]
        trees: dict[str, FlavorTree] = {}
        hosts: dict[str, None] = {}
        for name, nodes in flavor_nodes.items():
            rf = snapshot.flavors[name]
            topology = snapshot.topologies[rf.topology_name or ""]
            tree = FlavorTree(rf, topology, nodes, index, node_free)
            trees[name] = tree
            if tree.hostname:
                hosts.update((p[-1], None) for p in tree.leaf_paths)
        state = cls(resources, trees, sorted(hosts))
        state.balanced = snapshot.fair_sharing.gates.tas_balanced_placement
        # One table update for all running usage: with no negative delta,
        # saturating the sum once equals saturating after every add.
        running: list[Prepared] = []
        for wl in snapshot.running:
            if wl.admission is None:
                continue
            for psa in wl.admission.pod_set_assignments:
                ta = psa.topology_assignment
                tas = sorted({f for f in psa.flavors.values() if f in trees})
                if ta is None or not tas or psa.count <= 0:
                    continue
                per_pod = {
                    r: v // psa.count
                    for r, v in psa.resource_usage.items()
                    if r != PODS
                }
                rows = state.prepare(tas[0], ta, per_pod)
                running.append(rows)
                state._built[id(ta)] = (tas[0], ta, per_pod, rows)
                state._workloads.setdefault(wl.key, []).append((tas[0], ta, per_pod))
        if all(p.delta.size == 0 or int(p.delta.min()) >= 0 for p in running):
            state.apply(running, 1)
        else:
            for p in running:
                state.apply([p], 1)
        return state

    # -- introspection -------------------------------------------------------

    def flavors(self) -> list[str]:
        return sorted(self._trees)

    def tree(self, flavor: str) -> FlavorTree:
        """Static structure and current ``rem`` of a flavor (read-only use)."""
        return self._trees[flavor]

    def workload_usage(self, workload_key: str) -> list[Usage]:
        """What :meth:`build` recorded for a running workload.

        Per-pod usage is ``resourceUsage // count`` without ``pods`` (the
        placer adds one per pod, as Kueue derives it from the count).
        """
        return list(self._workloads.get(workload_key, []))

    # -- placement -------------------------------------------------------------

    def find_assignments(
        self,
        flavor: str,
        groups: Groups,
        *,
        empty: bool = False,
        tolerations: Sequence[Toleration] = (),
    ) -> TasResult:
        """Place the groups of one flavor in order, each seeing earlier ones.

        Algorithm overview (per group, see :func:`assign_group`):
          0. interpret the request; 1. bottom-up capacity; 2a. level choice;
          2b. top-down distribution; 3. build assignments.
        ``empty`` ignores all TAS usage (Kueue's simulate-empty) but still
        subtracts non-TAS pods and earlier groups of this call. Tolerations
        are unioned with each pod's own and the flavor's. Pod sets with
        count 0 are left out of the result (Kueue does not place them).
        """
        return self._find(flavor, groups, empty, tuple(tolerations), {})

    def find_workload_assignments(
        self,
        requests: Mapping[str, Groups],
        *,
        empty: bool = False,
        tolerations: Mapping[str, Sequence[Toleration]] | None = None,
        quiet: bool = False,
    ) -> TasResult:
        """All TAS flavors of one workload, in flavor-name order.

        ``quiet`` skips composing Kueue's failure message (the preemption
        search only needs to know whether the workload fits).

        Hostname-level flavors share the workload's assumed usage per host,
        as Kueue's cross-flavor ``aggregatedDomainUsages`` does, also when
        ``empty`` (where usage added through :meth:`add_usage` is ignored).
        """
        if empty and tolerations is None:
            # Simulate-empty placements read only the static ``base``: the
            # same request always gets the same answer (the greedy asks
            # again for every preempting head of the same shape).
            key = (quiet, requests_key(requests))
            hit = self._empty_results.get(key)
            if hit is None:
                if len(self._empty_results) >= EMPTY_CACHE:
                    self._empty_results.clear()
                hit = self._empty_results[key] = self._find_all(
                    requests, True, None, quiet
                )
            return _copy(hit)
        if not empty and tolerations is None:
            # A greedy cycle places the same request again on unchanged
            # tables (a head assigned at nomination, then when processed).
            if self._live_version != self._version:
                self._live_results.clear()
                self._live_version = self._version
            key = (quiet, requests_key(requests))
            hit = self._live_results.get(key)
            if hit is None:
                hit = self._live_results[key] = self._find_all(
                    requests, False, None, quiet
                )
            return _copy(hit)
        return self._find_all(requests, empty, tolerations, quiet)

    def _find_all(
        self,
        requests: Mapping[str, Groups],
        empty: bool,
        tolerations: Mapping[str, Sequence[Toleration]] | None,
        quiet: bool,
    ) -> TasResult:
        host_assumed: dict[int, list[int]] = {}
        merged: dict[str, TopologyAssignment] = {}
        flavors = sorted(requests)
        for n, flavor in enumerate(flavors):
            extra = tuple((tolerations or {}).get(flavor, ()))
            # Only a later flavor reads what this one assumes.
            result = self._find(
                flavor,
                requests[flavor],
                empty,
                extra,
                host_assumed,
                share=n + 1 < len(flavors),
                quiet=quiet,
            )
            if result.assignments is None:
                return result
            merged.update(result.assignments)
        return TasResult(merged, None, None)

    def _find(
        self,
        flavor: str,
        groups: Groups,
        empty: bool,
        tolerations: tuple[Toleration, ...],
        host_assumed: dict[int, list[int]],
        share: bool = False,
        quiet: bool = False,
    ) -> TasResult:
        """Groups in order; ``share`` keeps host usage for later flavors."""
        tree = self._trees.get(flavor)
        if tree is None:
            first = next((r.name for g in groups for r in g), None)
            reason = f'flavor "{flavor}" information missing in TAS cache'
            return TasResult(None, reason, first)
        table = tree.base if empty else tree.rem
        leaf_assumed: dict[int, list[int]] = {}
        out: dict[str, TopologyAssignment] = {}
        live_groups = [[r for r in g if r.count > 0] for g in groups]
        live_groups = [g for g in live_groups if g]
        for n, live in enumerate(live_groups):
            if len(live) > 2:
                reason = "a pod set group may hold at most two pod sets"
                return TasResult(None, reason, live[0].name)
            workers, leader = live[0], None
            if len(live) == 2:
                # The smaller pod set leads; the second one on a tie.
                workers, leader = live
                if leader.count > workers.count:
                    workers, leader = leader, workers
                if leader.count != 1:
                    # Kueue's webhook rejects such groups; placing one pod
                    # for a larger pod set would under-count its usage.
                    reason = f"leader pod set {leader.name} must have exactly 1 pod"
                    return TasResult(None, reason, leader.name)
            free = free_view(
                table,
                tree.fit_cache,
                empty,
                self._assumed(tree, host_assumed, leaf_assumed),
            )
            placed = assign_group(
                tree,
                free,
                workers,
                leader,
                tolerations,
                self._demand,
                quiet,
                self.balanced,
            )
            if isinstance(placed, str):
                return TasResult(None, placed, workers.name)
            out.update(placed)
            if share or n + 1 < len(live_groups):
                for r in live:
                    self._assume(
                        tree, placed[r.name], r.requests, host_assumed, leaf_assumed
                    )
        return TasResult(out, None, None)

    def _assumed(
        self,
        tree: FlavorTree,
        host_assumed: Mapping[int, list[int]],
        leaf_assumed: Mapping[int, list[int]],
    ) -> list[tuple[int, list[int]]]:
        """This call's earlier placements as (leaf of ``tree``, usage) pairs."""
        if not tree.hostname:
            return list(leaf_assumed.items())
        if not host_assumed:
            return []
        table = self._host_leaf[tree.name]
        return [(int(table[h]), v) for h, v in host_assumed.items() if table[h] >= 0]

    def _assume(
        self,
        tree: FlavorTree,
        assignment: TopologyAssignment,
        per_pod: Mapping[str, int],
        host_assumed: dict[int, list[int]],
        leaf_assumed: dict[int, list[int]],
    ) -> None:
        vec = self._vector(per_pod)
        for dom in assignment.domains:
            if tree.hostname:
                key, table = self._host_index.get(dom.values[-1]), host_assumed
            else:
                key, table = tree.leaf_of(dom.values), leaf_assumed
            if key is None:
                continue
            acc = table.get(key) or [0] * len(vec)
            table[key] = [
                clip(a + v * dom.count) for a, v in zip(acc, vec, strict=True)
            ]

    # -- usage accounting -----------------------------------------------------

    def _demand(self, per_pod: Mapping[str, int]) -> Demand:
        """Per-pod demand over the resource table, memoised by content."""
        key = tuple(sorted(per_pod.items()))
        found = self._demands.get(key)
        if found is None:
            if len(self._demands) >= 4096:
                self._demands.clear()
            found = self._demands[key] = demand(per_pod, self.resource_index)
        return found

    def could_fit(
        self,
        requests: Mapping[str, Groups],
        freed: Sequence[tuple[FlavorTree | None, IntArray, IntArray]],
    ) -> bool | None:
        """Whether the requests might fit once the ``freed`` usage rows
        (table owner, distinct keys, summed rows) leave the tables, without
        moving them: False proves that no placement fits; True, or None
        (not decidable so cheaply), promises nothing.

        A placement needs, for every pod set, its pods in the leaves of one
        domain at its required level (of the whole tree otherwise), each
        leaf holding at most what one pod's request fits in its free
        capacity: node filters, leaders, slices and other pod sets only
        take more.
        """
        if self._saturated or not self._all_plain:
            return None  # rem plus the freed rows is not exactly new capacity
        for flavor, groups in requests.items():
            tree = self._trees.get(flavor)
            if tree is None:
                return None
            leaves, add = self._freed_leaves(tree, freed)
            for group in groups:
                for r in group:
                    if r.count <= 0:
                        continue
                    top = self._most_pods(tree, r, leaves, add)
                    if top is None:
                        return None
                    if top < r.count:
                        return False
        return True

    def _freed_leaves(
        self,
        tree: FlavorTree,
        freed: Sequence[tuple[FlavorTree | None, IntArray, IntArray]],
    ) -> tuple[IntArray, IntArray]:
        """The leaves of ``tree`` the freed rows touch, and their rows."""
        for owner, keys, rows in freed:
            if owner is None and tree.hostname:
                leaves = self._host_leaf[tree.name][keys]
                hit = leaves >= 0
                return leaves[hit], rows[hit]
            if owner is tree:
                return keys, rows
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(self.resources)), np.int64)

    def _most_pods(
        self, tree: FlavorTree, r: TasPodSetRequest, leaves: IntArray, add: IntArray
    ) -> int | None:
        """Most pods of ``r`` one domain at its required level (the whole
        tree otherwise) could hold, leaf by leaf, with ``add`` freed."""
        topo = r.topology
        if topo.invalid or (topo.required and topo.required not in tree.levels):
            return None
        d = self._demand(r.requests)
        pc = tree.fit_cache.fit(tree.rem, d, False)
        if leaves.size:
            pc = pc.copy()
            pc[leaves] = fit_count(tree.rem[:, leaves] + add.T, d)
        if not pc.size:
            return 0
        if not topo.required:
            return int(pc.sum())
        level = tree.levels.index(topo.required)
        key = (tree.name, level)
        domain = self._leaf_domain.get(key)
        if domain is None:
            domain = np.arange(tree.n_leaves, dtype=np.int64)
            for lvl in range(tree.depth - 1, level, -1):
                domain = tree.parent[lvl][domain]
            self._leaf_domain[key] = domain
        # Float sums are exact here: leaf counts are int32, leaves few.
        return int(np.bincount(domain, weights=pc).max())

    def fits(
        self, flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
    ) -> bool:
        """Whether this exact assignment still fits the current free capacity.

        Like Kueue's ``Fits``, every domain must exist and hold its pods;
        unlike it, ``pods`` is checked too (one per pod).
        """
        tree = self._trees.get(flavor)
        if tree is None:
            return False
        # The same assignment is checked again whenever its workload is
        # processed: its leaves and pods per leaf are kept (with the
        # assignment itself, so its id cannot be reused meanwhile).
        key = (flavor, id(assignment))
        hit = self._fit_rows.get(key)
        if hit is None or hit[0] is not assignment:
            if len(self._fit_rows) >= FIT_ROWS_CACHE:
                self._fit_rows.clear()
            hit = self._fit_rows[key] = (assignment, leaf_needs(tree, assignment))
        rows = hit[1]
        if rows is None:
            return False
        uniq, need = rows
        if not uniq.size:
            return True
        got = fit_count(tree.rem[:, uniq], self._demand(per_pod))
        return bool((got >= need).all())
