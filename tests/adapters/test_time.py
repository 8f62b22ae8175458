"""Time inputs: since when running work runs, how long it may still run.

The price of a preemption (issue 19) rests on these figures, read from the
objects a dump holds: the Admitted / QuotaReserved condition, else the
pods' ``status.startTime``; Kueue's ``maximumExecutionTimeSeconds`` and the
``placewise.io/expected-duration`` annotation.  Unknown stays None.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot, snapshot_from_text
from placewise.cli import main
from placewise.models.snapshot import build_snapshot
from placewise.models.timing import RunTime

DATA = Path(__file__).resolve().parents[1] / "data"

CQ = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: "100"}]}]
"""


def running(
    name: str,
    conditions: str = "",
    extra_spec: str = "",
    annotations: str = "{}",
    owner: str = "",
    status_extra: str = "",
) -> str:
    """A running Workload of cq; ``conditions`` add times to QuotaReserved."""
    owners = f"\n  ownerReferences: [{{uid: {owner}, kind: Job, name: j}}]"
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: default
  creationTimestamp: "2026-05-01T08:00:00Z"
  annotations: {annotations}{owners if owner else ""}
spec:
  queueName: lq{extra_spec}
  podSets: [{{name: main, count: 1, template: {{spec: {{containers: [{{name: c,
    resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}]
status:
  admission:
    clusterQueue: cq
    podSetAssignments: [{{name: main, flavors: {{cpu: f}}, resourceUsage: {{cpu: "1"}},
      count: 1}}]
  conditions:
  - {{type: QuotaReserved, status: "True"{conditions}}}{status_extra}
"""


def pod(name: str, start: str, owner: str = "", workload: str = "") -> str:
    meta = f"ownerReferences: [{{uid: {owner}, kind: Job, name: j}}]" if owner else ""
    if workload:
        meta = f"annotations: {{kueue.x-k8s.io/workload: {workload}}}"
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  {meta}
spec: {{containers: [{{name: c}}]}}
status: {{phase: Running, startTime: "{start}"}}
"""


def times(*docs: str, now: datetime | None = None) -> dict[str, RunTime]:
    snap = snapshot_from_text("---\n".join([CQ, *docs]))
    if now is not None:
        snap = build_snapshot(replace(snap.objects, now=now))
    return {k.split("/")[1]: v for k, v in snap.run_times.items()}


def at(hh: int, mm: int = 0) -> datetime:
    return datetime(2026, 5, 1, hh, mm, tzinfo=UTC)


def test_since_the_admitted_condition_else_quota_reserved() -> None:
    got = times(
        running(
            "both",
            ', lastTransitionTime: "2026-05-01T09:00:00Z"}\n'
            '  - {type: Admitted, status: "True", '
            'lastTransitionTime: "2026-05-01T09:30:00Z"',
        ),
        running("reserved", ', lastTransitionTime: "2026-05-01T10:00:00Z"'),
        now=at(11),
    )
    assert got["both"].started == at(9, 30) and got["both"].elapsed == 90 * 60
    assert got["reserved"].started == at(10) and got["reserved"].elapsed == 3600
    assert got["both"].remaining is None


def test_pods_start_time_when_no_condition_time() -> None:
    """Earliest startTime of the pods sharing its owner, or naming it."""
    got = times(
        running("owned", owner="job-1"),
        pod("owned-0", "2026-05-01T09:10:00Z", owner="job-1"),
        pod("owned-1", "2026-05-01T09:05:00Z", owner="job-1"),
        pod("other", "2026-05-01T07:00:00Z", owner="job-2"),
        running("named"),
        pod("named-0", "2026-05-01T10:20:00Z", workload="named"),
        now=at(11),
    )
    assert got["owned"].started == at(9, 5)
    assert got["owned"].elapsed == 115 * 60
    assert got["named"].started == at(10, 20)


def test_unknown_stays_unknown() -> None:
    """No time anywhere: no now, nothing started, nothing elapsed."""
    snap = snapshot_from_text(
        "---\n".join([CQ, running("w").replace("  creationTimestamp", "  #")])
    )
    assert snap.now is None
    assert snap.run_times["default/w"] == RunTime()
    # A now but no start recorded: still unknown, never zero.
    assert times(running("w"), now=at(11))["w"] == RunTime()


def test_maximum_execution_time_and_expected_duration() -> None:
    reserved = ', lastTransitionTime: "2026-05-01T10:00:00Z"'
    got = times(
        running(
            "capped",
            reserved,
            extra_spec="\n  maximumExecutionTimeSeconds: 7200",
            status_extra="\n  accumulatedPastExecutionTimeSeconds: 600",
        ),
        running(
            "expected",
            reserved,
            annotations="{placewise.io/expected-duration: 1h30m}",
        ),
        running(
            "seconds",
            reserved,
            annotations='{placewise.io/expected-duration: "5400"}',
            extra_spec="\n  maximumExecutionTimeSeconds: 4000",
        ),
        running(
            "overrun",
            reserved,
            annotations="{placewise.io/expected-duration: 30m}",
        ),
        now=at(11),
    )
    assert got["capped"].remaining == 7200 - 600 - 3600
    assert got["expected"].remaining == 30 * 60
    assert got["seconds"].remaining == 4000 - 3600  # the smaller of the two
    assert got["overrun"].remaining is None  # an estimate proved wrong


def test_a_workload_built_in_code_runs_since_its_reservation() -> None:
    """A replay sets ``quota_reserved_at`` on the workloads it admits: that
    is when they started, and a time the snapshot knows."""
    snap = snapshot_from_text("---\n".join([CQ, running("w")]))
    w = snap.objects.workloads["default/w"]
    moved = w.model_copy(update={"quota_reserved_at": at(12)})
    snap = build_snapshot(replace(snap.objects, workloads={w.key: moved}))
    assert snap.now == at(12)
    assert snap.run_times["default/w"].started == at(12)


def test_now_defaults_to_the_newest_timestamp() -> None:
    snap = snapshot_from_text(
        "---\n".join(
            [
                CQ,
                running("w", ', lastTransitionTime: "2026-05-01T10:00:00Z"'),
                pod("p", "2026-05-01T10:45:00Z", owner="x"),
            ]
        )
    )
    assert snap.now == at(10, 45)
    assert snap.run_times["default/w"].elapsed == 45 * 60


def test_solve_now_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "i.yaml"
    path.write_text(
        "---\n".join([CQ, running("w", ', lastTransitionTime: "2026-05-01T10:00:00Z"')])
    )
    snap = load_snapshot([path], now=at(12))
    assert snap.run_times["default/w"].elapsed == 2 * 3600
    code = main(["solve", str(path), "--solver", "greedy", "--now", "2026-05-01T12:00"])
    assert code == 0
    with pytest.raises(SystemExit) as usage:  # argparse: a usage error
        main(["solve", str(path), "--now", "noon"])
    assert usage.value.code == 2
    assert "'noon' is not an RFC 3339 timestamp" in capsys.readouterr().err


def test_bad_times_are_located_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A non-timestamp, a negative maximum, a bad annotation: exit 2, each
    named by file, line, object and field; nothing written."""
    bad = DATA / "malformed" / "bad-times.yaml"
    out = tmp_path / "plan.yaml"
    assert main(["solve", str(bad), "--solver", "greedy", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert not out.exists()
    for fragment in (
        f"{bad}:1: Workload team-a/train: field status.conditions[0]"
        ".lastTransitionTime: 'yesterday' is not an RFC 3339 timestamp",
        f"{bad}:1: Workload team-a/train: field spec.maximumExecutionTimeSeconds: "
        "must be >= 1, got -5",
        f"{bad}:1: Workload team-a/train: field metadata.annotations."
        "placewise.io/expected-duration: 'soon' is not a positive duration",
        f"{bad}:25: Pod team-a/train-0: field status.startTime: '12:00' is not "
        "an RFC 3339 timestamp",
    ):
        assert fragment in err, err
