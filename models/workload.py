"""Workloads: gangs of pod sets, their topology requests and admissions."""

from __future__ import annotations

from datetime import datetime

from placewise.models.cluster import ResourceMap
from placewise.models.scheduling import Frozen, PodPlacement


class SliceLayer(Frozen):
    """One pod-set slice constraint: groups of ``size`` pods in one ``level``."""

    level: str
    size: int


class TopologyRequest(Frozen):
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slices: tuple[SliceLayer, ...] = ()
    """Slice constraints, outermost first (Kueue allows up to three)."""
    group: str | None = None
    """``podSetGroupName``: a leader/worker pair placed jointly."""
    invalid: str | None = None
    """Why Kueue would reject this request at placement (workload stays pending)."""

    @property
    def requests_tas(self) -> bool:
        return bool(
            self.required or self.preferred or self.unconstrained or self.slices
        )


class PodSet(Frozen):
    name: str
    count: int
    min_count: int | None = None
    requests: ResourceMap = {}
    """Effective per-pod request (containers, init containers, overhead)."""
    placement: PodPlacement = PodPlacement()
    topology: TopologyRequest = TopologyRequest()


class TopologyDomain(Frozen):
    values: tuple[str, ...]
    count: int


class TopologyAssignment(Frozen):
    """Kueue's logical (v1beta1) form: levels highest first, leaf domains."""

    levels: tuple[str, ...]
    domains: tuple[TopologyDomain, ...]

    def as_counts(self) -> dict[tuple[str, ...], int]:
        """Domain values -> pods; duplicate domains are summed."""
        out: dict[tuple[str, ...], int] = {}
        for d in self.domains:
            out[d.values] = out.get(d.values, 0) + d.count
        return out


class PodSetAssignment(Frozen):
    name: str
    flavors: dict[str, str] = {}
    resource_usage: ResourceMap = {}
    count: int
    topology_assignment: TopologyAssignment | None = None


class Admission(Frozen):
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


class PriorityRef(Frozen):
    """A reference to a priority class; ``kueue`` selects the API group."""

    name: str
    kueue: bool = True


class Workload(Frozen):
    namespace: str
    name: str
    uid: str = ""
    queue_name: str | None = None
    priority: int = 0
    """Effective priority (resolved by the snapshot when not in spec)."""
    priority_set: bool = False
    """Whether ``spec.priority`` was present in the object."""
    priority_class: PriorityRef | None = None
    creation_timestamp: datetime
    queue_order_timestamp: datetime
    pod_sets: tuple[PodSet, ...]
    active: bool = True
    finished: bool = False
    admission: Admission | None = None
    quota_reserved: bool = False
    quota_reserved_at: datetime | None = None
    running_since: datetime | None = None
    """When its current run began: the lastTransitionTime of its Admitted
    condition, else of QuotaReserved (None: not running, or not recorded)."""
    max_execution_seconds: int | None = None
    """Kueue's ``spec.maximumExecutionTimeSeconds``: Kueue stops it after
    this long admitted, in total over its admissions."""
    past_execution_seconds: int = 0
    """``status.accumulatedPastExecutionTimeSeconds``: time admitted in
    earlier runs, which counts against the maximum."""
    expected_seconds: int | None = None
    """The user's estimate of a run's length (annotation
    ``placewise.io/expected-duration``)."""
    owner_uids: tuple[str, ...] = ()
    """``metadata.ownerReferences`` UIDs: its pods share an owner (the Job)."""
    newest_timestamp: datetime | None = None
    """The newest time the object records (creation, condition changes): a
    dump was taken no earlier."""
    evicted: bool = False
    preemptible: bool = True
    """False: the caller forbids evicting this running workload.  No Kueue
    object carries it; the live loop sets it so that a re-solve with nothing
    changed cannot take back what it admitted, and on victims a
    PodDisruptionBudget refused.  Every solver and the validator honour it."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    exclusive: str | None = None
    """Copies of one MultiKueue manager Workload, one per worker cluster,
    share this group name: at most one of them may be admitted (the manager
    keeps whichever worker admits it).  No Kueue object carries it; the
    multi-cluster loader sets it, and every solver and the validator honour it."""
    replaces: str | None = None
    """An elastic job's scale-up slice (Kueue's ElasticJobsViaWorkloadSlices):
    the ``namespace/name`` key of the running slice it replaces, from the
    ``kueue.x-k8s.io/workload-slice-replacement-for`` annotation.  Admitting
    it finishes that slice instead of preempting it; only the growth needs
    quota (``Snapshot.replaced_slice`` says when the link holds)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_running(self) -> bool:
        """Holds quota (formats.md §1): admitted, QuotaReserved, live."""
        return (
            self.admission is not None
            and self.quota_reserved
            and self.active
            and not self.finished
        )

    @property
    def is_pending(self) -> bool:
        return self.active and not self.finished and not self.is_running

    def pod_set(self, name: str) -> PodSet | None:
        for ps in self.pod_sets:
            if ps.name == name:
                return ps
        return None

    def usage(self) -> dict[tuple[str, str], int]:
        """Quota held while running, keyed by (flavor, resource).

        As in Kueue it comes from the admission's ``resourceUsage``; a
        resource without an assigned flavor holds no quota.
        """
        out: dict[tuple[str, str], int] = {}
        if self.admission is None:
            return out
        for psa in self.admission.pod_set_assignments:
            for resource, amount in psa.resource_usage.items():
                flavor = psa.flavors.get(resource)
                if flavor is None:
                    continue
                key = (flavor, resource)
                out[key] = out.get(key, 0) + amount
        return out
