"""An LP upper bound on GPU allocation when every arrival is known in advance.

No policy, online or offline, can allocate more than the best offline
packing of the same arrivals, and that packing is at most this LP's value.
Identical pods and identical nodes are aggregated (1,213 nodes fall into 15
shapes), so the LP has one variable per (pod shape, node shape) and solves in
well under a second, where a pod x node model of ~10,800 x 1,213 would not be
solvable on 2 cores.

Rows per node shape: CPU, memory, total GPU milli, and per-card packing cuts.
The cuts are Fekete-Schepers dual-feasible functions: for k = 1..K, the
function u_k(x) = x if (k+1)x is an integer, else floor((k+1)x)/k, sums to at
most 1 over the items of any card (whole-GPU pods count u = 1 per card).  They
capture that two 600-milli pods cannot share a card, which the milli total
alone does not.  Multi-card and type rules are relaxed, which keeps the
bound valid (only looser).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import CARD_MILLI, Trace

__all__ = ["BoundResult", "lp_bound"]

DFF_ORDERS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class BoundResult:
    """The LP value as GPU milli and as % of capacity, plus solve facts."""

    gpu_milli: float
    alloc_pct: float
    n_pod_shapes: int
    n_node_shapes: int
    n_vars: int
    seconds: float
    status: str


def _dff(milli: int, k: int) -> Fraction:
    """Fekete-Schepers u_k of an item of ``milli`` on a 1000-milli card."""
    x = Fraction(milli, CARD_MILLI)
    y = (k + 1) * x
    if y.denominator == 1:
        return x
    return Fraction(int(y), k)


PodShape = tuple[int, int, int, int, int]  # cpu, mem, num, milli, model mask
NodeShape = tuple[int, int, int, int]  # cpu, mem, gpus, model index


def lp_bound(
    trace: Trace, workload: Workload, dff_orders: tuple[int, ...] = DFF_ORDERS
) -> BoundResult:
    """Maximise GPU milli placed over all arrivals of ``workload`` (LP relaxation).

    HiGHS runs in a spawned child process: OR-Tools 9.15 and highspy 1.15
    each bundle HiGHS, and whichever is loaded second in a process fails to
    resolve its symbols, so the two never share one.
    """
    t0 = time.perf_counter()
    pods: dict[PodShape, int] = {}
    for arrival in workload.arrivals:
        p = int(arrival)
        pkey = (
            int(trace.pod_cpu[p]),
            int(trace.pod_mem[p]),
            int(trace.pod_num[p]),
            int(trace.pod_milli[p]),
            int(trace.pod_model_mask[p]),
        )
        pods[pkey] = pods.get(pkey, 0) + 1
    nodes: dict[NodeShape, int] = {}
    for n in range(trace.n_nodes):
        nkey = (
            int(trace.node_cpu[n]),
            int(trace.node_mem[n]),
            int(trace.node_gpus[n]),
            int(trace.node_model[n]),
        )
        nodes[nkey] = nodes.get(nkey, 0) + 1
    payload = json.dumps(
        {
            "pods": [[*k, v] for k, v in pods.items()],
            "nodes": [[*k, v] for k, v in nodes.items()],
            "dff": list(dff_orders),
        }
    )
    # A fresh interpreter (not a fork or multiprocessing spawn, which would
    # re-import the caller's main module and with it, possibly, OR-Tools).
    proc = subprocess.run(
        [sys.executable, "-m", "placewise.benchmarks.fgd.bound"],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    value, status, n_vars = json.loads(proc.stdout)
    return BoundResult(
        gpu_milli=value,
        alloc_pct=100.0 * value / trace.total_gpu_milli,
        n_pod_shapes=len(pods),
        n_node_shapes=len(nodes),
        n_vars=n_vars,
        seconds=time.perf_counter() - t0,
        status=status,
    )


def _solve_lp(
    pods: dict[PodShape, int], nodes: dict[NodeShape, int], dff_orders: tuple[int, ...]
) -> tuple[float, str, int]:
    """Build and solve the aggregated LP with pulp + HiGHS (in the child process)."""
    import pulp

    prob = pulp.LpProblem("fgd_offline_bound", pulp.LpMaximize)
    x: dict[tuple[int, int], pulp.LpVariable] = {}
    pod_keys = list(pods)
    node_keys = list(nodes)
    for i, (cpu, mem, num, _milli, mask) in enumerate(pod_keys):
        for j, (ncpu, nmem, ngpu, model) in enumerate(node_keys):
            if cpu > ncpu or mem > nmem or num > ngpu:
                continue
            if num > 0 and not (mask >> model) & 1:
                continue
            x[i, j] = pulp.LpVariable(f"x_{i}_{j}", lowBound=0)
    prob += pulp.lpSum(pod_keys[i][2] * pod_keys[i][3] * v for (i, _j), v in x.items())
    by_pod: dict[int, list[pulp.LpVariable]] = {}
    by_node: dict[int, list[tuple[int, pulp.LpVariable]]] = {}
    for (i, j), v in x.items():
        by_pod.setdefault(i, []).append(v)
        by_node.setdefault(j, []).append((i, v))
    for i, vs in by_pod.items():
        prob += pulp.lpSum(vs) <= pods[pod_keys[i]], f"arrivals_{i}"
    for j, items in by_node.items():
        ncpu, nmem, ngpu, _model = node_keys[j]
        count = nodes[node_keys[j]]
        prob += (
            pulp.lpSum(pod_keys[i][0] * v for i, v in items) <= ncpu * count,
            f"cpu_{j}",
        )
        prob += (
            pulp.lpSum(pod_keys[i][1] * v for i, v in items) <= nmem * count,
            f"mem_{j}",
        )
        gpu_items = [(i, v) for i, v in items if pod_keys[i][2] > 0]
        prob += (
            pulp.lpSum(pod_keys[i][2] * pod_keys[i][3] * v for i, v in gpu_items)
            <= CARD_MILLI * ngpu * count,
            f"gpu_{j}",
        )
        for k in dff_orders:
            terms = []
            for i, v in gpu_items:
                u = _dff(pod_keys[i][3], k) * pod_keys[i][2]
                if u:
                    terms.append(float(u) * v)
            if terms:
                prob += pulp.lpSum(terms) <= ngpu * count, f"card_dff{k}_{j}"
    prob.solve(pulp.HiGHS(msg=False))
    return float(pulp.value(prob.objective) or 0.0), pulp.LpStatus[prob.status], len(x)


def _main() -> None:
    """Child entry: JSON shapes on stdin, [value, status, n_vars] on stdout."""
    raw = json.load(sys.stdin)
    pods = {tuple(r[:-1]): r[-1] for r in raw["pods"]}
    nodes = {tuple(r[:-1]): r[-1] for r in raw["nodes"]}
    print(json.dumps(_solve_lp(pods, nodes, tuple(raw["dff"]))))


if __name__ == "__main__":
    _main()
