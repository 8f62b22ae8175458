"""Hypothesis strategies: small random Kueue instances as YAML text.

The instances are deliberately tiny (a handful of workloads, two to four
hosts) so that an exhaustive search can enumerate every plan, yet they
exercise what the optimizer must get right together: cohorts with
borrowing and lending limits, a TAS flavor beside a plain one, running
workloads that hold quota and node capacity (some of them preemptible under
the queues' policies), partial admission and required/preferred topology.
The text goes through the real loader (``snapshot_from_text``), so the
properties test the whole path from objects to plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

GPU = "nvidia.com/gpu"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
BLOCK = "example.com/block"
TAS_FLAVOR = "tas"
TOPOLOGY = "topo"


@dataclass
class Host:
    name: str
    block: str
    rack: str
    cpu: int
    gpu: int
    used_cpu: int = 0
    used_gpu: int = 0


@dataclass
class Queue:
    name: str
    flavors: list[str]
    nominal: dict[tuple[str, str], int]
    """(flavor, resource) -> nominal quota (cpu in whole cores)."""
    borrowing: dict[tuple[str, str], int | None]
    lending: dict[tuple[str, str], int | None]
    within: str
    reclaim: str
    borrow_within: str
    used: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class Instance:
    """One generated instance and the sizes the tests filter on."""

    yaml: str
    pending: int
    running: int
    tas: bool
    summary: str = ""


def _doc(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _node(h: Host) -> str:
    return _doc(
        [
            "apiVersion: v1",
            "kind: Node",
            "metadata:",
            f"  name: {h.name}",
            "  labels:",
            f"    {HOST}: {h.name}",
            f"    {BLOCK}: {h.block}",
            f"    {RACK}: {h.rack}",
            "    pool: tas",
            "status:",
            f"  allocatable: {{cpu: '{h.cpu}', {GPU}: '{h.gpu}', pods: '110'}}",
            "  conditions:",
            "  - {type: Ready, status: 'True'}",
        ]
    )


def _queue(q: Queue, cohort: str | None) -> str:
    lines = [
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: ClusterQueue",
        f"metadata: {{name: {q.name}}}",
        "spec:",
        "  namespaceSelector: {}",
    ]
    if cohort:
        lines.append(f"  cohortName: {cohort}")
    lines += [
        "  preemption:",
        f"    withinClusterQueue: {q.within}",
        f"    reclaimWithinCohort: {q.reclaim}",
        f"    borrowWithinCohort: {{policy: {q.borrow_within}}}",
        "  resourceGroups:",
        f"  - coveredResources: [cpu, {GPU}]",
        "    flavors:",
    ]
    for f in q.flavors:
        lines += [f"    - name: {f}", "      resources:"]
        for r in ("cpu", GPU):
            lines.append(f"      - name: {r}")
            lines.append(f"        nominalQuota: '{q.nominal[(f, r)]}'")
            b, ll = q.borrowing[(f, r)], q.lending[(f, r)]
            if b is not None:
                lines.append(f"        borrowingLimit: '{b}'")
            if ll is not None:
                lines.append(f"        lendingLimit: '{ll}'")
    lines += [
        "---",
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: LocalQueue",
        f"metadata: {{name: lq-{q.name}, namespace: default}}",
        f"spec: {{clusterQueue: {q.name}}}",
    ]
    return _doc(lines)


def _pod_set(
    name: str,
    count: int,
    cpu: int,
    gpu: int,
    min_count: int | None,
    topology: tuple[str, str] | None,
) -> list[str]:
    lines = [f"  - name: {name}", f"    count: {count}"]
    if min_count is not None:
        lines.append(f"    minCount: {min_count}")
    requests = ", ".join(f"{r}: '{v}'" for r, v in (("cpu", cpu), (GPU, gpu)) if v > 0)
    lines += [
        "    template:",
        "      spec:",
        "        containers:",
        "        - name: c",
        "          resources:",
        f"            requests: {{{requests}}}",
    ]
    if topology is not None:
        mode, level = topology
        value = "true" if mode == "unconstrained" else level
        lines += ["    topologyRequest:", f"      {mode}: {value}"]
    return lines


def _workload(
    name: str, queue: str, priority: int, minute: int, pod_sets: list[list[str]]
) -> list[str]:
    lines = [
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: Workload",
        "metadata:",
        f"  name: {name}",
        "  namespace: default",
        f"  creationTimestamp: '2026-01-01T00:{minute:02d}:00Z'",
        "spec:",
        f"  queueName: lq-{queue}",
        f"  priority: {priority}",
        "  podSets:",
    ]
    for ps in pod_sets:
        lines += ps
    return lines


@st.composite
def instances(draw: st.DrawFn, max_pending: int = 6, max_running: int = 3) -> Instance:
    """A small instance: 1-2 queues (maybe in a cohort), 1-2 flavors (maybe one
    TAS flavor over 2-4 hosts), running and 1..max_pending pending workloads."""
    tas = draw(st.booleans())
    n_flavors = draw(st.integers(1, 2))
    if tas:
        flavors = [TAS_FLAVOR] + (["plain"] if n_flavors == 2 else [])
    else:
        flavors = ["f0", "f1"][:n_flavors]
    hosts: list[Host] = []
    docs: list[str] = [
        _doc(
            [
                "apiVersion: v1",
                "kind: Namespace",
                "metadata: {name: default}",
            ]
        )
    ]
    for f in flavors:
        spec = "{}"
        if f == TAS_FLAVOR:
            spec = f"{{nodeLabels: {{pool: tas}}, topologyName: {TOPOLOGY}}}"
        docs.append(
            _doc(
                [
                    "apiVersion: kueue.x-k8s.io/v1beta2",
                    "kind: ResourceFlavor",
                    f"metadata: {{name: {f}}}",
                    f"spec: {spec}",
                ]
            )
        )
    if tas:
        docs.append(
            _doc(
                [
                    "apiVersion: kueue.x-k8s.io/v1beta2",
                    "kind: Topology",
                    f"metadata: {{name: {TOPOLOGY}}}",
                    "spec:",
                    "  levels:",
                    f"  - nodeLabel: {BLOCK}",
                    f"  - nodeLabel: {RACK}",
                    f"  - nodeLabel: {HOST}",
                ]
            )
        )
        n_hosts = draw(st.integers(2, 4))
        two_blocks = n_hosts == 4 and draw(st.booleans())
        for i in range(n_hosts):
            block = f"b{i // 2}" if two_blocks else "b0"
            hosts.append(
                Host(
                    f"h{i}",
                    block,
                    f"r{i // 2}",
                    cpu=draw(st.integers(2, 6)),
                    gpu=draw(st.sampled_from([2, 4])),
                )
            )
            docs.append(_node(hosts[-1]))
    n_queues = draw(st.integers(1, 2))
    cohort = "co" if n_queues == 2 and draw(st.booleans()) else None
    queues: list[Queue] = []
    for i in range(n_queues):
        order = draw(st.permutations(flavors))
        nominal, borrowing, lending = {}, {}, {}
        for f in order:
            for r in ("cpu", GPU):
                nominal[(f, r)] = draw(st.integers(0, 8))
                borrowing[(f, r)] = (
                    draw(st.none() | st.integers(0, 4)) if cohort else None
                )
                top = nominal[(f, r)]
                lending[(f, r)] = (
                    draw(st.none() | st.integers(0, top)) if cohort else None
                )
        within = draw(
            st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
        )
        reclaim = draw(st.sampled_from(["Never", "LowerPriority", "Any"]))
        borrow_within = (
            draw(st.sampled_from(["Never", "LowerPriority"]))
            if reclaim != "Never"
            else "Never"
        )
        queues.append(
            Queue(
                f"cq{i}",
                list(order),
                nominal,
                borrowing,
                lending,
                within,
                reclaim,
                borrow_within,
            )
        )
    docs += [_queue(q, cohort) for q in queues]
    minute = 0
    n_running = 0
    for i in range(draw(st.integers(0, max_running))):
        q = draw(st.sampled_from(queues))
        f = draw(st.sampled_from(q.flavors))
        count = draw(st.integers(1, 2))
        cpu, gpu = draw(st.integers(1, 2)), draw(st.integers(0, 2))
        if not _fits_quota(q, queues, cohort, f, cpu * count, gpu * count):
            continue
        placement: list[tuple[str, int]] = []
        if f == TAS_FLAVOR:
            placement = _place(hosts, count, cpu, gpu)
            if not placement:
                continue
        q.used[(f, "cpu")] = q.used.get((f, "cpu"), 0) + cpu * count
        q.used[(f, GPU)] = q.used.get((f, GPU), 0) + gpu * count
        minute += 1
        n_running += 1
        topo = ("unconstrained", "") if f == TAS_FLAVOR else None
        lines = _workload(
            f"run{i}",
            q.name,
            draw(st.sampled_from([0, 10, 20])),
            minute,
            [_pod_set("main", count, cpu, gpu, None, topo)],
        )
        usage = f"{{cpu: '{cpu * count}'" + (f", {GPU}: '{gpu * count}'" if gpu else "")
        flav = f"{{cpu: {f}" + (f", {GPU}: {f}" if gpu else "")
        lines += [
            "status:",
            "  admission:",
            f"    clusterQueue: {q.name}",
            "    podSetAssignments:",
            "    - name: main",
            f"      count: {count}",
            f"      flavors: {flav}}}",
            f"      resourceUsage: {usage}}}",
        ]
        if placement:
            lines += [
                "      topologyAssignment:",
                f"        levels: [{HOST}]",
                "        domains:",
            ]
            lines += [f"        - {{values: [{h}], count: {n}}}" for h, n in placement]
        lines += [
            "  conditions:",
            "  - type: QuotaReserved",
            "    status: 'True'",
            "    reason: QuotaReserved",
            f"    lastTransitionTime: '2026-01-01T00:{minute:02d}:30Z'",
        ]
        docs.append(_doc(lines))
    n_pending = draw(st.integers(1, max_pending))
    # GPUs often come in pairs: then every GPU coefficient shares a factor,
    # which is what exposes scaling and rounding in quota arithmetic.
    gpu_sizes = draw(st.sampled_from([(0, 1, 2), (0, 2)]))
    for i in range(n_pending):
        q = draw(st.sampled_from(queues))
        pod_sets: list[list[str]] = []
        has_min = False
        for j in range(draw(st.integers(1, 2))):
            count = draw(st.integers(1, 4))
            min_count = None
            if not has_min and count > 1 and draw(st.booleans()):
                min_count = draw(st.integers(1, count - 1))
                has_min = True
            cpu, gpu = draw(st.integers(0, 2)), draw(st.sampled_from(gpu_sizes))
            if cpu == 0 and gpu == 0:
                cpu = 1
            topology = None
            if tas and draw(st.booleans()):
                topology = draw(
                    st.sampled_from(
                        [
                            ("required", HOST),
                            ("required", RACK),
                            ("preferred", RACK),
                            ("preferred", HOST),
                            ("unconstrained", ""),
                        ]
                    )
                )
            pod_sets.append(_pod_set(f"ps{j}", count, cpu, gpu, min_count, topology))
        minute += 1
        docs.append(
            _doc(
                _workload(
                    f"w{i}",
                    q.name,
                    draw(st.sampled_from([0, 10, 20])),
                    minute,
                    pod_sets,
                )
            )
        )
    summary = (
        f"{len(queues)} queue(s){' in a cohort' if cohort else ''}, "
        f"flavors {flavors}, {len(hosts)} host(s), {n_running} running, "
        f"{n_pending} pending"
    )
    return Instance("---\n".join(docs), n_pending, n_running, tas, summary)


def _fits_quota(
    q: Queue, queues: list[Queue], cohort: str | None, f: str, cpu: int, gpu: int
) -> bool:
    """Running workloads start in a consistent state: after adding this one,
    the quota tree still satisfies kueue-semantics §9's linear form (queues
    within nominal plus borrowingLimit, the cohort within what the queues'
    lendingLimits share).  Plans from inconsistent states are judged
    differently by the validator and by Kueue (test_cpsat_properties::
    test_validator_accepts_admission_inside_private_quota), so the
    properties stay on consistent ones."""
    for r, add in (("cpu", cpu), (GPU, gpu)):
        fr = (f, r)
        used = {x.name: x.used.get(fr, 0) + (add if x is q else 0) for x in queues}
        if cohort is None:
            if used[q.name] > q.nominal[fr]:
                return False
            continue
        shared = passed = 0
        for x in queues:
            lend = x.lending[fr]
            local = max(0, x.nominal[fr] - lend) if lend is not None else 0
            shared += x.nominal[fr] - local
            up = max(0, used[x.name] - local)
            passed += up
            borrow = x.borrowing[fr]
            if borrow is not None and up > x.nominal[fr] - local + borrow:
                return False
        if passed > shared:
            return False
    return True


def _place(hosts: list[Host], count: int, cpu: int, gpu: int) -> list[tuple[str, int]]:
    """First fit over hosts; empty when the pods do not fit."""
    out: list[tuple[str, int]] = []
    left = count
    for h in hosts:
        n = 0
        while left and h.used_cpu + cpu <= h.cpu and h.used_gpu + gpu <= h.gpu:
            h.used_cpu += cpu
            h.used_gpu += gpu
            n += 1
            left -= 1
        if n:
            out.append((h.name, n))
    if left:
        for name, n in out:  # undo
            h = next(x for x in hosts if x.name == name)
            h.used_cpu -= cpu * n
            h.used_gpu -= gpu * n
        return []
    return out
