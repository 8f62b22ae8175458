"""Multi-cluster dispatch benchmark: MultiKueue's two races against the optimizer.

For each seed of the ``multi-cluster`` family (a manager and three regions,
:mod:`placewise.adapters.generate.multicluster`) every solver's plan is
validated per cluster and across clusters, then measured:

* **GPUs per tier**: accelerators running after the plan per priority tier
  (the objective, highest first), and the optimizer's proven bound on each;
* **admitted GPUs per tier**: GPUs of the workloads the plan admits;
* **idle GPUs per cluster**: GPUs of Ready, schedulable nodes left unused
  after the plan — stranded, since every run leaves work pending;
* **pending with room**: dispatched workloads the plan leaves pending
  although some cluster could admit them right away, alone and without
  preempting (Kueue's own flavor assignment and TAS, on the cluster as the
  plan leaves it).

    python -m placewise.benchmarks.multicluster_bench [--seeds 1,2,3]
        [--hosts 300] [--pending 150] [--time-limit 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from placewise.adapters.generate.multicluster import REGIONS, multi_cluster
from placewise.adapters.io.loader import RawObject
from placewise.adapters.multicluster import (
    Federation,
    federation_from_raws,
    user_plan,
    validate_clusters,
)
from placewise.models.multicluster import MultiSnapshot, split_key, split_name
from placewise.models.plan import Plan
from placewise.models.snapshot import Objects, Snapshot
from placewise.models.validate import validate
from placewise.models.workload import Admission
from placewise.solver.greedy.modes import Mode
from placewise.solver.greedy.scheduler import GreedyScheduler
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.kueue.workload import WlInfo
from placewise.solver.policy import tier_figures
from placewise.solver.solve import SolveParams, solve

SOLVERS = ("multikueue-allatonce", "multikueue-incremental", "cpsat")


@dataclass
class Figures:
    solver: str
    status: str
    wall: float
    violations: int
    tiers: list[tuple[int, int, int | None]]
    """(priority, GPUs after the plan, bound) per tier, highest first."""
    admitted: dict[int, int]
    idle: dict[str, int]
    with_room: int
    pending: int
    preempted: int
    notes: list[str] = field(default_factory=list)


def federation(seed: int, hosts: int, pending: int) -> Federation:
    inst = multi_cluster(seed, hosts=hosts, pending=pending)
    return federation_from_raws(
        [RawObject(o, "manager", None) for o in inst.pop("manager")],
        {c: [RawObject(o, c, None) for o in objs] for c, objs in inst.items()},
    )


def _gpus(requests: dict[str, int]) -> int:
    return sum(requests.get(r, 0) for r in ACCELERATORS)


def after(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """The cluster as the plan leaves it: admissions running, victims gone,
    the copies of admitted workloads withdrawn."""
    admitted = {a.workload: a for a in plan.admissions}
    victims = {p.workload for p in plan.preemptions}
    taken = {w.exclusive for k, w in snapshot.workloads.items() if k in admitted} - {
        None
    }
    workloads = {}
    for key, w in snapshot.workloads.items():
        if key in victims or (key not in admitted and w.exclusive in taken):
            continue
        if key in admitted:
            a = admitted[key]
            w = w.model_copy(
                update={
                    "admission": Admission(
                        cluster_queue=a.cluster_queue,
                        pod_set_assignments=a.pod_set_assignments,
                    ),
                    "quota_reserved": True,
                }
            )
        workloads[key] = w
    objs = snapshot.objects
    fields = {name: getattr(objs, name) for name in Objects.__dataclass_fields__}
    return Snapshot(Objects(**{**fields, "workloads": workloads}))


def idle_gpus(post: Snapshot) -> dict[str, int]:
    """Per cluster: GPUs of usable nodes minus what pods and running
    workloads take."""
    idle: dict[str, int] = defaultdict(int)
    for node in post.nodes.values():
        if node.ready and not node.unschedulable:
            idle[split_name(node.name)[0]] += _gpus(node.allocatable)
    for pod in post.pods.values():
        if pod.consumes_node and pod.node_name is not None:
            idle[split_name(pod.node_name)[0]] -= _gpus(pod.requests)
    for w in post.running:
        idle[split_key(w.key)[0]] -= sum(
            q for (_f, r), q in w.usage().items() if r in ACCELERATORS
        )
    return dict(idle)


def pending_with_room(snapshot: MultiSnapshot, plan: Plan, post: Snapshot) -> int:
    """Dispatched workloads left pending that some cluster could admit alone
    now, without preemption."""
    admitted = {a.workload for a in plan.admissions}
    greedy = GreedyScheduler(post)
    count = 0
    for d in snapshot.facts.dispatch.values():
        if any(c in admitted for c in d.copies.values()):
            continue
        for copy in d.copies.values():
            w = post.workloads.get(copy)
            cq = post.cluster_queue_of(w) if w is not None else None
            if w is None or cq is None or post.blocked_reason(w) is not None:
                continue
            assignment, _ = greedy.get_assignments(WlInfo(obj=w, cq=cq))
            if assignment.mode() is Mode.FIT:
                count += 1
                break
    return count


def measure(fed: Federation, solver: str, params: SolveParams) -> Figures:
    snap = fed.snapshot
    start = time.perf_counter()
    plan = solve(snap, params)
    wall = time.perf_counter() - start
    shown = user_plan(snap, plan)
    violations = validate(snap, plan) + validate_clusters(fed, shown)
    post = after(snap, plan)
    bounds = {t.priority: t.bound for t in plan.solver.tiers}
    admitted: dict[int, int] = defaultdict(int)
    for a in plan.admissions:
        w = snap.workloads[a.workload]
        spec = {ps.name: ps for ps in w.pod_sets}
        admitted[w.priority] += sum(
            _gpus(spec[p.name].requests) * p.count for p in a.pod_set_assignments
        )
    return Figures(
        solver=solver,
        status=plan.solver.status,
        wall=wall,
        violations=len(violations),
        tiers=[
            (f.priority, f.gpus, bounds.get(f.priority))
            for f in tier_figures(snap, plan, params.policy)
            if f.gpus or bounds.get(f.priority)
        ],
        admitted=dict(admitted),
        idle=idle_gpus(post),
        with_room=pending_with_room(snap, plan, post),
        pending=sum(1 for p in shown.pending if p.cluster is None),
        preempted=len(plan.preemptions),
        notes=[str(v) for v in violations[:3]],
    )


def _tiers(f: Figures) -> str:
    return " / ".join(str(g) for _, g, _ in f.tiers)


def _bounds(f: Figures) -> str:
    if not any(b is not None for _, _, b in f.tiers):
        return "-"
    return " / ".join("-" if b is None else str(b) for _, _, b in f.tiers)


def _gap(f: Figures) -> str:
    """Gap below the bound: the top tier's (what the tiers rank first) and
    all tiers' together."""
    pairs = [(got, bound) for _, got, bound in f.tiers if bound is not None]
    if not pairs or not pairs[0][1]:
        return "-"
    top = 100 * (pairs[0][1] - pairs[0][0]) / pairs[0][1]
    got, bound = sum(g for g, _ in pairs), sum(b for _, b in pairs)
    return f"{top:.1f}% / {100 * (bound - got) / max(bound, 1):.1f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--hosts", type=int, default=300, help="hosts per region")
    parser.add_argument("--pending", type=int, default=150, help="manager workloads")
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    args = parser.parse_args(argv)
    regions = [r.name for r in REGIONS]
    print(
        "| seed | solver | GPUs per tier (high / normal / low) | tier bounds | "
        "gap top / all | "
        "admitted GPUs per tier | idle GPUs " + " / ".join(regions) + " | "
        "pending | pending with room | preempted | status | wall s |"
    )
    print("|---" * 12 + "|")
    for seed in (int(s) for s in args.seeds.split(",")):
        fed = federation(seed, args.hosts, args.pending)
        for solver in args.solvers.split(","):
            params = SolveParams(
                solver=solver,
                time_limit=args.time_limit,
                workers=args.workers,
                seed=seed,
            )
            f = measure(fed, solver, params)
            admitted = " / ".join(str(f.admitted.get(p, 0)) for p, _, _ in f.tiers)
            idle = " / ".join(str(f.idle.get(r, 0)) for r in regions)
            print(
                f"| {seed} | {solver} | {_tiers(f)} | {_bounds(f)} | {_gap(f)} | "
                f"{admitted} | {idle} | {f.pending} | {f.with_room} | "
                f"{f.preempted} | {f.status} | {f.wall:.1f} |",
                flush=True,
            )
            for note in f.notes:
                print(f"  !! {note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
