"""Time TAS placement on a synthetic 10,000-node block/rack/host cluster.

Not a test: run ``python -m placewise.benchmarks.tas_bench`` and read the medians.
The cluster is half full (random earlier placements recorded through
``add_usage``), then each request kind is placed many times; a final loop
places and records 2,000 mixed workloads the way the greedy scheduler does,
to show what capacity updates cost on top.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from placewise.models.cluster import HOSTNAME_LABEL, Node, ResourceFlavor, Topology
from placewise.models.scheduling import PodPlacement
from placewise.models.snapshot import Objects, Snapshot
from placewise.models.workload import SliceLayer, TopologyRequest
from placewise.solver.kueue.tas import TasPodSetRequest, TasState

BLOCK, RACK = "cloud.com/block", "cloud.com/rack"
GPU = "nvidia.com/gpu"
GI = 2**30
NODE = {"cpu": 96_000, "memory": 1024 * GI, GPU: 8, "pods": 110}


def cluster(blocks: int, racks: int, hosts: int) -> Snapshot:
    nodes = {}
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h}"
                nodes[name] = Node(
                    name=name,
                    labels={BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOSTNAME_LABEL: name},
                    allocatable=NODE,
                )
    topo = Topology(name="default", levels=(BLOCK, RACK, HOSTNAME_LABEL))
    rf = ResourceFlavor(name="gpu", topology_name="default")
    return Snapshot(
        Objects(flavors={"gpu": rf}, topologies={"default": topo}, nodes=nodes)
    )


def req(count: int, gpus: int, **topo: object) -> TasPodSetRequest:
    return TasPodSetRequest(
        name="main",
        count=count,
        requests={"cpu": 8000 * gpus, "memory": 64 * GI * gpus, GPU: gpus},
        topology=TopologyRequest.model_validate(topo),
        placement=PodPlacement(),
    )


KINDS: dict[str, Callable[[random.Random], TasPodSetRequest]] = {
    "required rack": lambda g: req(g.choice([4, 8, 16]), 8, required=RACK),
    "required block": lambda g: req(g.choice([32, 64]), 8, required=BLOCK),
    "preferred rack": lambda g: req(g.choice([16, 48]), 8, preferred=RACK),
    "unconstrained": lambda g: req(g.choice([1, 4, 16]), 1, unconstrained=True),
    "implied": lambda g: req(g.choice([1, 2]), 2),
    "block + rack slices": lambda g: req(
        64, 8, required=BLOCK, slices=(SliceLayer(level=RACK, size=16),)
    ),
}


def fill(state: TasState, rng: random.Random, target: float, total_gpus: int) -> None:
    """Place random rack/host jobs until about ``target`` of the GPUs are used."""
    used = 0
    while used < target * total_gpus:
        r = req(rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8]), required=RACK)
        result = state.find_assignments("gpu", [[r]])
        if result.assignments is None:
            break
        state.add_usage("gpu", result.assignments["main"], r.requests)
        used += r.count * int(r.requests[GPU])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--racks", type=int, default=25)
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n_nodes = args.blocks * args.racks * args.hosts
    snap = cluster(args.blocks, args.racks, args.hosts)

    t0 = time.perf_counter()
    state = TasState.build(snap)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fill(state, rng, 0.5, n_nodes * 8)
    fill_s = time.perf_counter() - t0
    print(f"{n_nodes} nodes: build {build_s * 1000:.0f} ms, fill to 50% {fill_s:.2f} s")

    all_ms: list[float] = []
    for kind, make in KINDS.items():
        times = []
        ok = 0
        for _ in range(args.repeat):
            r = make(rng)
            t0 = time.perf_counter()
            result = state.find_assignments("gpu", [[r]])
            times.append((time.perf_counter() - t0) * 1000)
            ok += result.assignments is not None
        all_ms += times
        q = statistics.quantiles(times, n=10)
        print(
            f"  {kind:22s} median {statistics.median(times):6.3f} ms  "
            f"p90 {q[-1]:6.3f} ms  placed {ok}/{args.repeat}"
        )
    print(f"  {'all kinds':22s} median {statistics.median(all_ms):6.3f} ms")

    # Greedy-like loop: place and record 2,000 mixed workloads.
    state = TasState.build(snap)
    kinds = list(KINDS.values())
    t0 = time.perf_counter()
    admitted = 0
    for _ in range(2000):
        r = rng.choice(kinds)(rng)
        result = state.find_assignments("gpu", [[r]])
        if result.assignments is not None:
            state.add_usage("gpu", result.assignments["main"], r.requests)
            admitted += 1
    loop_s = time.perf_counter() - t0
    print(
        f"2000 place+add_usage calls: {loop_s:.2f} s "
        f"({loop_s / 2:.3f} ms each), {admitted} placed"
    )


if __name__ == "__main__":
    main()
