"""Hostile and broken input, case by case (the fuzz test covers the breadth).

Each test pins one rule of issue 13 part 2 with a small, readable input:
located errors for bytes, depth, aliases and non-scalar names; ``<Kind>List``
items inheriting their kind; empty streams; plans whose numbers are not
numbers; quantities beyond int64 on running work; ``auto``'s fallback; and
``serve`` refusing a taken port before it starts anything.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import yaml

from placewise.adapters.io import yaml_fast
from placewise.adapters.io.loader import load_snapshot, snapshot_from_text
from placewise.cli import main
from placewise.models.errors import InstanceError, Location, describe
from placewise.models.plan import plan_from_dict
from placewise.models.validate import validate
from placewise.solver.solve import SolveParams, solve

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = sorted((Path(__file__).resolve().parents[1] / "data" / "base").glob("*.yaml"))
"""A small valid cluster (the first demo) the hostile cases mutate; it is
kept here so the demo can change without changing what these tests feed."""

MALFORMED = {
    "not-utf8.yaml": ["not-utf8.yaml", "not UTF-8 text (line 6, byte 71)"],
    "deep-nesting.json": ["deep-nesting.json", "nested deeper than 100"],
    "alias-bomb.yaml": ["alias-bomb.yaml:9", "aliases expand too much"],
    "label-not-scalar.yaml": [
        "label-not-scalar.yaml:2: Node gpu-1: field metadata.labels.zone",
        "expected a string, got a list of 2 item(s)",
        "field metadata.labels.rack",
    ],
    "empty.yaml": ["empty.yaml", "holds no Kubernetes objects"],
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_hostile_file_is_a_located_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.yaml"
    path = str(DATA / "malformed" / name)
    code = main(["solve", path, "--solver", "greedy", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists()
    assert "Traceback" not in err
    for fragment in MALFORMED[name]:
        assert fragment in err, err


def _demo_plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.yaml"
    args = ["solve", *map(str, DEMO), "--solver", "greedy", "-o", str(plan)]
    assert main(args) == 0
    return plan


def test_kind_list_items_take_the_lists_kind(tmp_path: Path) -> None:
    """``kubectl get --raw`` lists: items carry no kind/apiVersion."""
    docs = [d for p in DEMO for d in yaml.safe_load_all(p.read_text()) if d]
    lists: dict[tuple[str, str], list[dict[str, object]]] = {}
    for d in docs:
        item = {k: v for k, v in d.items() if k not in ("kind", "apiVersion")}
        lists.setdefault((d["apiVersion"], d["kind"]), []).append(item)
    files = []
    for i, ((api, kind), items) in enumerate(sorted(lists.items())):
        f = tmp_path / f"{i}.json"
        f.write_text(
            json.dumps({"apiVersion": api, "kind": f"{kind}List", "items": items})
        )
        files.append(f)
    from_lists = load_snapshot(files)
    from_demo = load_snapshot(DEMO)
    assert len(from_lists.nodes) == 8
    assert from_lists.nodes == from_demo.nodes
    assert from_lists.workloads == from_demo.workloads


def test_plain_list_items_need_a_kind() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- metadata: {name: x}\n"
    with pytest.raises(InstanceError) as info:
        snapshot_from_text(text, "l.yaml")
    assert "l.yaml:4: <no kind> x: field kind: missing" in str(info.value)


def test_empty_file_beside_others_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "nodes.yaml"
    empty.write_text("# kubectl get nodes -o yaml > nodes.yaml failed\n")
    out = tmp_path / "plan.yaml"
    args = ["solve", *map(str, DEMO), str(empty), "--solver", "greedy", "-o", str(out)]
    assert main(args) == 0
    assert f"{empty}: holds no Kubernetes objects" in caplog.text
    assert yaml.safe_load(out.read_text())["admissions"]


def test_utf16_with_bom_loads(tmp_path: Path) -> None:
    """What PowerShell's ``>`` writes."""
    path = tmp_path / "demo.yaml"
    path.write_bytes("---\n".join(p.read_text() for p in DEMO).encode("utf-16"))
    assert load_snapshot([path]).workloads == load_snapshot(DEMO).workloads


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ('"abc"', "got 'abc'"),
        ("[1, 2]", "got a list of 2 item(s)"),
        ("true", "got True"),
        ("1" * 400, "got an integer of about 399 digits"),
        (".nan", "got nan"),
    ],
)
def test_plan_objective_must_be_a_number(
    value: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _demo_plan(tmp_path)
    doc = yaml.safe_load(plan.read_text())
    doc["solver"]["objective"] = "@@"
    plan.write_text(yaml.safe_dump(doc).replace("'@@'", value))
    capsys.readouterr()
    assert main(["validate", *map(str, DEMO), "--plan", str(plan)]) == 2
    err = capsys.readouterr().err
    where = f"{plan}: Plan: field solver.objective"
    assert f"{where}: expected a finite number, {shown}" in err, err


@pytest.mark.parametrize("target", ["bound-pod", "running-usage", "quota"])
@pytest.mark.parametrize("solver", ["cpsat", "auto"])
def test_beyond_int64_never_crashes_the_optimizer(
    target: str, solver: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "---\n".join(p.read_text() for p in DEMO)
    old, new = {
        "bound-pod": (
            '{cpu: "4", nvidia.com/gpu: "2"}',
            '{cpu: "1e30", nvidia.com/gpu: "2"}',
        ),
        "running-usage": ("memory: 256Gi", "memory: 99999999999999999999Ei"),
        "quota": (
            '{name: cpu, nominalQuota: "384"}',
            '{name: cpu, nominalQuota: "1e20"}',
        ),
    }[target]
    assert old in text
    path = tmp_path / "i.yaml"
    path.write_text(text.replace(old, new, 1))
    snap = load_snapshot([path])
    plan = solve(snap, SolveParams(solver=solver, time_limit=2, workers=1))
    assert validate(snap, plan) == []
    assert plan.admissions
    if target != "bound-pod":
        assert plan.solver.status == "FALLBACK"


def test_auto_falls_back_to_greedy_when_the_optimizer_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import placewise.solver.cpsat as cpsat

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("model invalid")

    monkeypatch.setattr(cpsat, "solve_cpsat", broken)
    snap = load_snapshot(DEMO)
    plan = solve(snap, SolveParams(solver="auto", time_limit=2, workers=1))
    greedy = solve(snap, SolveParams(solver="greedy"))
    assert plan.solver.status == "FALLBACK"
    assert plan.admissions == greedy.admissions
    assert validate(snap, plan) == []
    assert "RuntimeError: model invalid" in caplog.text
    with pytest.raises(RuntimeError):  # asked for by name: no silent substitute
        solve(snap, SolveParams(solver="cpsat", time_limit=2, workers=1))


def test_serve_refuses_a_taken_port_before_starting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--listen", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "embedded API server" not in err  # nothing was started


def test_policy_fields_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("demand_scale: 1000000000000000000000\n")
    assert main(["solve", *map(str, DEMO), "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert f"{policy}: Policy: demand_scale must be in [1, 10^6]" in err


def test_reader_limits_and_typing() -> None:
    typed = list(yaml_fast.documents("a: 1\nb: 2.5\nc: x\n1: y\nd: 0x10\n", typed=True))
    assert typed == [({"a": 1, "b": 2.5, "c": "x", "1": "y", "d": 16}, 1, None)]
    plain = list(yaml_fast.documents("a: 1\nb: true\n"))
    assert plain == [({"a": "1", "b": True}, 1, None)]
    shared = next(yaml_fast.documents("a: &x [1, 2]\nb: *x\n"))[0]
    assert shared["a"] is shared["b"]  # aliases share, they are not copied
    for text, why in [
        ("a: &x [*x]\n", "recursive alias"),
        ("a: *nowhere\n", "undefined alias"),
        ("a: " + "[" * 101 + "]" * 101, "nested deeper than 100"),
        ("? [a]\n: b\n", "complex mapping keys"),
    ]:
        with pytest.raises(yaml.MarkedYAMLError, match=why):
            list(yaml_fast.documents(text))


def test_messages_never_print_arbitrary_values() -> None:
    assert describe("x" * 500).endswith("...'") and len(describe("x" * 500)) < 100
    assert describe(10**5000) == "an integer of about 5000 digits"
    assert describe({"a": [1] * 10**6}) == "a mapping of 1 key(s)"
    long = Location(file="f", kind="Node", name="n" * 10_000, field="x" * 10_000)
    assert len(str(long)) < 1300  # 600 characters each for object and field


def test_plan_domain_values_may_be_empty_label_values() -> None:
    """A node label value may be "" in Kubernetes; a plan naming such a
    domain must read back (found by fuzzing: solve wrote what validate refused)."""
    psa = {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}}
    psa |= {"count": 1, "topologyAssignment": {"levels": ["rack"]}}
    psa["topologyAssignment"]["domains"] = [{"values": [""], "count": 1}]
    doc = {"apiVersion": "placewise.io/v1alpha1", "kind": "Plan"}
    doc |= {"solver": {"name": "greedy", "status": "FEASIBLE"}}
    doc["admissions"] = [{"workload": "a/w", "clusterQueue": "cq"}]
    doc["admissions"][0]["podSetAssignments"] = [psa]
    plan = plan_from_dict(doc)
    ta = plan.admissions[0].pod_set_assignments[0].topology_assignment
    assert ta is not None and ta.domains[0].values == ("",)
    psa["topologyAssignment"]["domains"][0]["values"] = [None]
    with pytest.raises(InstanceError, match="domains"):
        plan_from_dict(doc)
