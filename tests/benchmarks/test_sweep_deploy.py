"""``deploy/sweep-rayjob.yaml``: a RayJob Kueue admits, running a real command.

The entrypoint is parsed with the real ``placewise sweep`` parser, so a
renamed flag breaks this test instead of the first sweep on a cluster.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from placewise.cli import build_parser
from placewise.models.cluster import QUEUE_NAME_LABEL

RAYJOB = Path(__file__).resolve().parents[2] / "deploy" / "sweep-rayjob.yaml"


def test_rayjob_is_queued_by_kueue_and_runs_placewise_sweep_on_its_cluster() -> None:
    doc = yaml.safe_load(RAYJOB.read_text(encoding="utf-8"))
    assert (doc["apiVersion"], doc["kind"]) == ("ray.io/v1", "RayJob")
    assert doc["metadata"]["name"] and doc["metadata"]["labels"][QUEUE_NAME_LABEL]
    spec = doc["spec"]
    cluster = spec["rayClusterSpec"]
    assert cluster["headGroupSpec"]["template"]["spec"]["containers"]
    assert all(g["template"]["spec"]["containers"] for g in cluster["workerGroupSpecs"])
    assert cluster["enableInTreeAutoscaling"] is False  # Kueue admits a fixed size
    assert spec["shutdownAfterJobFinishes"] is True
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["placewise", "sweep"]
    args = build_parser().parse_args(argv[1:])
    assert args.spec.startswith("/specs/")
    assert (args.ray_address, args.output) == ("auto", "/out")
    mounts = cluster["headGroupSpec"]["template"]["spec"]["containers"][0][
        "volumeMounts"
    ]
    assert {m["mountPath"] for m in mounts} >= {"/specs", "/out"}
