"""Settings of the serve sidecar, one documented field each."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Literal

from placewise.adapters.serve.server import Limits
from placewise.models.cluster import FairSharing
from placewise.solver.policy import Policy

Mode = Literal["extender", "binder", "kueue"]
MODES: tuple[Mode, ...] = ("extender", "binder", "kueue")

GANG_ANNOTATION = "placewise.io/gang"
"""Set on every pod we bind: the gang (workload key) it was bound as part of."""
ASSIGNMENT_ANNOTATION = "placewise.io/assignment"
"""Set on every pod we bind: the whole gang's intended ``{podSet: {node: count}}``.

It makes a restart mid-bind recoverable: the bound half of a gang carries the
decision for the unbound half, so no decision is lost with the process.
"""


def _identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class ServeConfig:
    """How one sidecar replica behaves; defaults suit a real cluster."""

    mode: Mode = "extender"
    """extender: answer kube-scheduler; binder: bind/ungate gated pods itself;
    kueue: write Kueue Workload admissions as Kueue's scheduler does."""
    listen: tuple[str, int] = ("127.0.0.1", 8888)
    """Where the extender verbs (and health, and ``/debug/plan`` when enabled)
    listen: loopback, as kube-scheduler runs in the same pod."""
    metrics_listen: tuple[str, int] = ("127.0.0.1", 8889)
    """Where ``/metrics`` and the health probes listen, apart from the
    extender, so Prometheus and kubelet never need to reach the verbs."""
    enable_debug: bool = False
    """Serve ``/debug/plan`` (every gang, pod and node) on the extender port."""
    tls_cert_file: str = ""
    """With ``tls_key_file``: serve the extender over HTTPS (the scheduler's
    ``enableHTTPS``)."""
    tls_key_file: str = ""
    client_ca_file: str = ""
    """Require client certificates signed by this CA (kube-scheduler's
    ``tlsConfig.certFile``/``keyFile``): mutual TLS."""
    limits: Limits = field(default_factory=Limits)
    """Body cap, read/idle timeouts and connection bound of both listeners."""
    prefix: str = "/scheduler"
    """URL prefix of the extender verbs (the ``urlPrefix`` path)."""
    solver: str = "auto"
    """auto/cpsat/greedy, as ``placewise solve``."""
    time_limit: float = 10.0
    """Optimizer budget per re-solve; a slow or failed solve falls back to greedy."""
    policy: Policy = field(default_factory=Policy)
    """The objective of every re-solve, in every mode: the lost-work and
    reversal prices (a re-solve reverses a decision acted on only when that
    pays) and the reservation of a starving workload; its ``moves`` budget
    (or ``--moves K``) lets kueue mode move running Workloads to make room
    for blocked gangs (:mod:`.mover`)."""
    solver_grace: float = 5.0
    """A solve not back within 1.5 x time_limit + this is abandoned for greedy
    (model building is outside the optimizer's own time limit)."""
    workers: int = 1
    """CP-SAT workers: one keeps a core free for watches and extender calls."""
    debounce: float = 0.5
    """Quiet time after the last change before re-solving: a burst of pod
    creations becomes one solve instead of hundreds."""
    max_delay: float = 3.0
    """Longest a change waits for a solve while changes keep arriving."""
    scheduler_names: tuple[str, ...] = ("default-scheduler",)
    """Extender mode: pods of these schedulerNames are the ones kube-scheduler
    sends us; pending pods of other schedulers are not ours to plan."""
    managed_resources: tuple[str, ...] = ()
    """Extender mode: only pods requesting one of these are planned, matching
    the extender entry's ``managedResources`` (kube-scheduler sends only
    those); empty means every pod of ``scheduler_names``."""
    binder_scheduler_name: str = "placewise"
    """Binder mode: pods with this schedulerName are bound directly."""
    gate: str = "placewise.io/gang"
    """Binder mode: the scheduling gate pods are created with."""
    default_topology: tuple[str, ...] = ()
    """Levels (highest first) above the hostname for gangs outside Kueue, e.g.
    block and rack labels, so their pods can ask for a required/preferred level."""
    leader_elect: bool = True
    """Only the Lease holder writes; off only for a single replica in tests."""
    lease_follow: bool = False
    """Do not hold a Lease of our own: act exactly while the kube-scheduler in
    the same pod holds its Lease (identity = pod name, its holder is
    ``<pod name>_<uuid>``), so the active scheduler always talks to the active
    sidecar."""
    lease_namespace: str = "default"
    lease_name: str = "placewise-serve"
    identity: str = field(default_factory=_identity)
    lease_duration: float = 15.0
    """Seconds another replica waits on an unrenewed lease before taking over."""
    renew_deadline: float = 10.0
    """A leader that could not renew for this long stops acting (< duration)."""
    retry_period: float = 2.0
    """How often the lease is renewed or tried."""
    resync: float = 1.0
    """Actuator tick: re-check readiness (victims gone, gangs complete)."""
    watch_timeout: int = 300
    """Server-side watch timeout (seconds) before our own reconnect."""
    request_timeout: float = 30.0
    """Client read timeout of every API call (a hung server is a failure)."""
    protect_seconds: float = 30.0
    """After a PodDisruptionBudget refused a victim's eviction, the solver
    treats that workload as not preemptible for this long."""
    event_component: str = "placewise"
    """reportingController of the Events we write."""
    kueue_config: FairSharing | None = None
    """Kueue mode: fair sharing from ``--kueue-config FILE``; None reads
    Kueue's manager ConfigMap (kueue-system/kueue-manager-config)."""

    @property
    def scheduler_name_for_events(self) -> str:
        return self.event_component
