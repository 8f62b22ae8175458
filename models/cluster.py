"""Cluster-side objects: flavors, queues, cohorts, topologies, nodes, pods.

Field names follow Kueue's API in snake_case; quantities are exact integers
(see :mod:`placewise.models.quantity`).  These records carry no cross-object logic:
the :class:`placewise.models.snapshot.Snapshot` resolves references.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from fractions import Fraction
from typing import Literal

from placewise.models.scheduling import Frozen, LabelSelector, Taint, Toleration

ResourceMap = dict[str, int]
"""resource name -> integer units; frozen records never mutate it."""

HOSTNAME_LABEL = "kubernetes.io/hostname"
PODS = "pods"
"""The pod-count resource a ClusterQueue may cover (one unit per pod)."""
KUEUE_GROUP = "kueue.x-k8s.io"
QUEUE_NAME_LABEL = f"{KUEUE_GROUP}/queue-name"
"""The label naming the LocalQueue of a Workload or of a Kueue-managed pod."""


class ResourceFlavor(Frozen):
    name: str
    node_labels: dict[str, str] = {}
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None

    @property
    def is_tas(self) -> bool:
        return self.topology_name is not None


class ResourceQuota(Frozen):
    """Quota of one resource within one flavor of a queue or cohort."""

    name: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


class FlavorQuotas(Frozen):
    name: str
    resources: tuple[ResourceQuota, ...]


class ResourceGroup(Frozen):
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


WithinClusterQueue = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
ReclaimWithinCohort = Literal["Never", "LowerPriority", "Any"]


class BorrowWithinCohort(Frozen):
    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = None


class PreemptionPolicy(Frozen):
    within_cluster_queue: WithinClusterQueue = "Never"
    reclaim_within_cohort: ReclaimWithinCohort = "Never"
    borrow_within_cohort: BorrowWithinCohort = BorrowWithinCohort()


AdmissionMode = Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]
"""``spec.admissionScope.admissionMode`` of a ClusterQueue."""


class FlavorFungibility(Frozen):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] = (
        "BorrowingOverPreemption"
    )


class ClusterQueue(Frozen):
    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    namespace_selector: LabelSelector | None = None
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    preemption: PreemptionPolicy = PreemptionPolicy()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    stop_policy: str = "None"
    fair_weight: Fraction = Fraction(1)
    """``spec.fairSharing.weight``: exact, so shares compare without rounding."""
    admission_mode: AdmissionMode = "NoAdmissionFairSharing"
    """Usage-based: the queue orders its heads by their LocalQueues' usage
    (admission fair sharing), when Kueue's Configuration enables it."""

    def quota(self, flavor: str, resource: str) -> ResourceQuota | None:
        for group in self.resource_groups:
            for fq in group.flavors:
                if fq.name == flavor:
                    for rq in fq.resources:
                        if rq.name == resource:
                            return rq
        return None

    def group_of(self, resource: str) -> int | None:
        """Index of the first resource group covering ``resource`` (Kueue's
        ``RGByResource``), None when none does.  What a pod set's resources
        are served by is :meth:`serving_groups`."""
        for i, group in enumerate(self.resource_groups):
            if resource in group.covered_resources:
                return i
        return None

    def serving_groups(self, requested: Iterable[str]) -> dict[str, int]:
        """The resource group serving each of ``requested`` (the resources a
        pod-set group asks for, ``pods`` included where covered).

        Kueue's webhook forbids a resource in two groups, yet its own tests
        build such queues, and its flavor assigner then decides: it walks the
        requested resources by name, an unassigned one takes its first group
        (:meth:`group_of`), and that group picks one flavor for every
        requested resource it covers, overwriting an earlier group's pick.
        Without repeated resources this is plain :meth:`group_of`.  It is the
        one home of the rule: greedy, optimizer and validator all map a pod
        set's resources to groups through it, so their plans agree.
        """
        wanted = set(requested)
        out: dict[str, int] = {}
        for r in sorted(wanted):
            g = self.group_of(r)
            if r in out or g is None:
                continue
            for c in self.resource_groups[g].covered_resources:
                if c in wanted:
                    out[c] = g
        return out

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for g in self.resource_groups for f in g.flavors)


class Cohort(Frozen):
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    implicit: bool = False
    """True when no Cohort object exists and a queue's reference created it."""
    fair_weight: Fraction = Fraction(1)

    def quota(self, flavor: str, resource: str) -> ResourceQuota | None:
        for group in self.resource_groups:
            for fq in group.flavors:
                if fq.name == flavor:
                    for rq in fq.resources:
                        if rq.name == resource:
                            return rq
        return None


PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
DEFAULT_STRATEGIES: tuple[PreemptionStrategy, ...] = (
    "LessThanOrEqualToFinalShare",
    "LessThanInitialShare",
)
SUPPORTED_STRATEGIES: tuple[tuple[PreemptionStrategy, ...], ...] = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    DEFAULT_STRATEGIES,
)
"""The only lists Kueue's configuration validation accepts, in this order."""


class AdmissionFairSharing(Frozen):
    """Kueue's ``Configuration.admissionFairSharing``.

    Durations are exact nanoseconds, as Go's ``time.Duration`` holds them;
    resource weights are exact (Kueue reads them as float64 and defaults an
    unlisted resource to 1).
    """

    usage_half_life_ns: int
    usage_sampling_interval_ns: int = 300 * 10**9
    resource_weights: tuple[tuple[str, Fraction], ...] = ()


class FeatureGates(Frozen):
    """Kueue feature gates from the Configuration that placewise reads besides
    AdmissionFairSharing (which shows as ``FairSharing.admission``); Kueue's
    defaults when unset."""

    tas_balanced_placement: bool = False
    """TASBalancedPlacement (alpha): even spreads for preferred TAS requests."""


class FairSharing(Frozen):
    """Kueue's ``Configuration.fairSharing``: cohort fair sharing on or off.

    Off (the default, no Configuration object) keeps Kueue's classical
    ordering and preemption; on, every back-end orders and preempts by
    dominant resource share (kueue-semantics §5.4, §5.5, §7.2).
    """

    enable: bool = False
    preemption_strategies: tuple[PreemptionStrategy, ...] = DEFAULT_STRATEGIES
    admission: AdmissionFairSharing | None = None
    """``Configuration.admissionFairSharing`` while the AdmissionFairSharing
    gate is on (its default); None: no queue orders by usage."""
    gates: FeatureGates = FeatureGates()
    """The Configuration's other feature gates that change decisions."""


class LocalQueue(Frozen):
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"
    fair_weight: Fraction = Fraction(1)
    """``spec.fairSharing.weight``: divides the queue's admission usage."""
    consumed: tuple[tuple[str, Fraction], ...] = ()
    """``status.fairSharing.admissionFairSharingStatus.consumedResources``:
    Kueue's decayed usage history, in the quantities' own units (cpu in
    cores, not milli-cores), exact."""
    consumed_at: datetime | None = None
    """``...admissionFairSharingStatus.lastUpdate``."""


class PriorityClass(Frozen):
    """WorkloadPriorityClass (kueue) or PriorityClass (scheduling.k8s.io)."""

    name: str
    value: int
    kueue: bool = True
    global_default: bool = False


class Topology(Frozen):
    name: str
    levels: tuple[str, ...]

    @property
    def hostname_leaves(self) -> bool:
        return self.levels[-1] == HOSTNAME_LABEL


class Namespace(Frozen):
    name: str
    labels: dict[str, str] = {}


class Node(Frozen):
    name: str
    labels: dict[str, str] = {}
    allocatable: ResourceMap = {}
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True


class Pod(Frozen):
    """A bound, non-workload pod: all placewise needs is its usage."""

    namespace: str
    name: str
    node_name: str | None = None
    requests: ResourceMap = {}
    phase: str = "Pending"
    tas_managed: bool = False
    start_time: datetime | None = None
    """``status.startTime``: when the kubelet started it."""
    created: datetime | None = None
    workload: str | None = None
    """Name of its Kueue Workload (same namespace), when the pod names it:
    annotation ``kueue.x-k8s.io/workload`` or its pod group's name."""
    owner_uids: tuple[str, ...] = ()

    @property
    def consumes_node(self) -> bool:
        """Bound, not terminated, not counted through a Workload's TAS usage."""
        return (
            self.node_name is not None
            and self.phase not in ("Succeeded", "Failed")
            and not self.tas_managed
        )
