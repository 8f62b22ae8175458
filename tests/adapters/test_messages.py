"""Error and warning messages a newcomer reads: the real line, each name once.

Issue 14: JSON errors all said line 1 and so did the items of a YAML List;
a policy file was named twice, YAML errors in ``--policy`` and ``generate
--config`` said ``in "<unicode string>"``, an inactive ClusterQueue's
warning repeated its name, and ``placewise emulate`` served a Workload that
``solve`` rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_objects, load_snapshot, snapshot_from_text
from placewise.cli import main
from placewise.models.errors import InstanceError

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = sorted(str(p) for p in (DATA.parents[1] / "instances" / "demo").glob("*.yaml"))


def _node(name: str, cpu: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu}},
    }


def _problems(path: Path) -> list[str]:
    with pytest.raises(InstanceError) as info:
        load_snapshot([path])
    return [str(p) for p in info.value.problems]


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("wrapped", [True, False], ids=["List", "array"])
def test_json_errors_name_the_line_of_their_item(tmp_path: Path, wrapped: bool) -> None:
    """``kubectl get -o json`` prints one List: its third item's error says
    the third item's line, not line 1."""
    items = [_node("a", "1"), _node("b", "2"), _node("c", "-4")]
    doc = {"apiVersion": "v1", "kind": "List", "items": items} if wrapped else items
    text = "\n" + json.dumps(doc, indent=2)
    path = tmp_path / "dump.json"
    path.write_text(text)
    (problem,) = _problems(path)
    start = _line_of(text, '"name": "c"') - 4  # the item opens 4 lines up
    assert text.splitlines()[start - 1].strip() == "{"
    assert problem.startswith(f"{path}:{start}: Node c: field status.allocatable.cpu")


def test_json_single_object_names_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "node.json"
    path.write_text("\n\n" + json.dumps(_node("a", "-1")))
    (problem,) = _problems(path)
    assert problem.startswith(f"{path}:3: Node a:")


def test_json_list_reads_as_json_loads_does(tmp_path: Path) -> None:
    """The item-by-item reading gives the very objects ``json.loads`` does
    (duplicate keys: the last wins, nested Lists untouched)."""
    text = json.dumps(
        {
            "kind": "List",
            "apiVersion": "v1",
            "items": [_node("a", "1"), _node("b", "1")],
            "metadata": {"resourceVersion": "7"},
        }
    ).replace('"kind": "List"', '"kind": "Other", "kind": "List"')
    path = tmp_path / "l.json"
    path.write_text(text)
    assert set(load_snapshot([path]).nodes) == {"a", "b"}
    assert load_objects([path]) == json.loads(text)["items"]


def test_yaml_list_items_name_their_own_line() -> None:
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n"
        "  status: {allocatable: {cpu: '1'}}\n"
        "- apiVersion: v1\n  kind: Node\n  metadata: {name: b}\n"
        "  status: {allocatable: {cpu: '-1'}}\n"
        "- 42\n"
    )
    with pytest.raises(InstanceError) as info:
        snapshot_from_text(text, "l.yaml")
    assert [str(p).split(": ")[0] for p in info.value.problems] == [
        "l.yaml:12",  # the scalar item
        "l.yaml:8",  # node b, decoded after the reading
    ]


def test_a_policy_file_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "pol.yaml"
    policy.write_text("bogus: 1\n")
    assert main(["solve", *DEMO, "--policy", str(policy)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"error: {policy}: Policy: unknown policy keys ['bogus']"


@pytest.mark.parametrize("command", ["solve", "generate"])
def test_yaml_errors_in_a_policy_or_config_say_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\nb: 2\nc: [\n")
    argv = (
        ["solve", *DEMO, "--policy", str(bad)]
        if command == "solve"
        else ["generate", "--config", str(bad)]
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4: " in err and "YAML syntax error" in err
    assert "<unicode string>" not in err


def test_an_inactive_queue_is_named_once() -> None:
    snap = snapshot_from_text("""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: missing
      resources: [{name: cpu, nominalQuota: "1"}]
""")
    assert [str(w) for w in snap.warnings] == [
        "ClusterQueue cq: inactive: flavor missing not found"
    ]
    assert snap.inactive == {
        "cq": "ClusterQueue cq is inactive: flavor missing not found"
    }


MALFORMED = sorted(p for p in (DATA / "malformed").iterdir() if p.name != "empty.yaml")


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_the_emulator_rejects_what_solve_rejects(path: Path) -> None:
    """The emulator's seed reader runs the loader's decoders: same problems."""
    with pytest.raises(InstanceError) as info:
        load_objects([path])
    assert [str(p) for p in info.value.problems] == _problems(path)


def test_emulate_refuses_a_negative_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = DATA / "malformed" / "negative-count.yaml"
    assert main(["emulate", "--from", str(bad), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: Workload team-a/train: field spec.podSets[0].count" in err


def test_the_emulator_still_serves_other_kinds_and_empty_files(tmp_path: Path) -> None:
    """Kinds placewise does not read need only a kind, an apiVersion and a
    name; verbatim repeats merge; an empty file is an empty cluster."""
    crd = tmp_path / "crd.yaml"
    crd.write_text(
        "apiVersion: example.com/v1\nkind: GpuPolicy\nmetadata: {name: p}\n"
        "spec: {replicas: 2}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n"
    )
    again = tmp_path / "again.yaml"
    again.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    objects = load_objects([crd, again, empty])
    assert [o["kind"] for o in objects] == ["GpuPolicy", "Namespace"]
    assert objects[0]["spec"]["replicas"] == 2  # typed: served as JSON numbers
    nameless = tmp_path / "nameless.yaml"
    nameless.write_text("apiVersion: example.com/v1\nkind: GpuPolicy\n")
    with pytest.raises(InstanceError, match=r"nameless\.yaml:1: GpuPolicy without"):
        load_objects([nameless])
