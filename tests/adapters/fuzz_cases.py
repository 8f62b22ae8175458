"""Seeded hostile inputs for the fuzz test: one generator per class of issue 13.

Each generator returns :class:`Case` objects: files to write, the command
line to run (``{name}`` stands for a written file's path), the exit codes
allowed and, for exit 2, alternatives of message fragments of which one must
all appear.  The classes are the ones the issue found by fuzzing, plus
generic mutations of a small valid instance.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted((ROOT / "instances" / "demo").glob("*.yaml"))
BASE_TEXT = "---\n".join(p.read_text() for p in DEMO)
BASE_DOCS: list[dict[str, Any]] = [d for d in yaml.safe_load_all(BASE_TEXT) if d]
N = 24
"""Mutations per class: a few dozen, as the issue asks, within ~30 s total."""
GREEDY = ["--solver", "greedy"]
OPTIMIZER = ["--time-limit", "1", "--workers", "1"]
NEST = "nested deeper than 100"


@dataclass
class Case:
    id: str
    files: dict[str, bytes]
    argv: list[str]
    codes: tuple[int, ...] = (2,)
    expect: list[list[str]] = field(default_factory=list)
    """Alternatives of fragments (one alternative must fully appear on stderr)."""
    instances: list[str] = field(default_factory=list)
    """Files of the instance, to validate a plan written to ``{plan}``."""
    same_plan: bool = False
    """The plan must decide as the base instance's greedy plan does."""
    seconds: float = 10.0
    paths: list[str] = field(default_factory=list)
    """Every file's path once written (exit-2 errors must name one)."""


def solve(files: list[str], solver: list[str] = GREEDY) -> list[str]:
    return ["solve", *(f"{{{f}}}" for f in files), *solver, "-o", "{plan}"]


def dump(docs: list[Any], as_json: bool) -> bytes:
    if as_json:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}).encode()
    return yaml.safe_dump_all(docs, sort_keys=False).encode()


# -- bytes that are not UTF-8 --------------------------------------------------

_BAD = [b"\xff", b"\xc3\x28", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x28\x8c"]


def non_utf8(rng: random.Random) -> list[Case]:
    out = []
    raw = BASE_TEXT.encode()
    for i in range(N - 4):
        at = rng.randrange(len(raw))
        data = raw[:at] + rng.choice(_BAD) + raw[at:]
        line = raw.count(b"\n", 0, at) + 1
        out.append(
            Case(
                f"bad-bytes-{i}",
                {"i.yaml": data},
                solve(["i.yaml"]),
                expect=[["{i.yaml}", f"not UTF-8 text (line {line}, byte {at})"]],
            )
        )
    # What PowerShell's '>' and some editors write is fine.
    for i, data in enumerate(
        [
            BASE_TEXT.encode("utf-16"),
            b"\xfe\xff" + BASE_TEXT.encode("utf-16-be"),
            b"\xef\xbb\xbf" + raw,
            json.dumps(BASE_DOCS[0]).encode("utf-8-sig"),
        ]
    ):
        out.append(
            Case(f"bom-{i}", {"i.yaml": data}, solve(["i.yaml"]), (0,), [], ["i.yaml"])
        )
    return out


# -- deep nesting --------------------------------------------------------------


def _flow(rng: random.Random, depth: int) -> str:
    """Flow collections ``depth`` deep, lists and mappings mixed."""
    opens = [rng.choice("[{") for _ in range(depth)]
    head = "".join("[" if o == "[" else "{a: " for o in opens)
    return head + "x" + "".join("]" if o == "[" else "}" for o in reversed(opens))


def deep_nesting(rng: random.Random) -> list[Case]:
    out = []
    for i in range(N):
        depth = rng.choice([101, 150, 1000, 3000, 5000, 100_000])
        shape = rng.choice(["json-file", "json-field", "yaml-name", "yaml-quantity"])
        shape = "yaml-block" if i % 8 == 7 else shape
        if shape == "json-file":
            opens, closes = rng.choice([("[", "]"), ('{"a": ', "}")])
            files = {"i.json": (opens * depth + "1" + closes * depth).encode()}
        elif shape == "json-field":
            node = copy.deepcopy(BASE_DOCS[2])
            deep: Any = "x"
            for _ in range(min(depth, 500)):  # json.dumps here recurses
                deep = [deep]
            node["metadata"]["labels"]["deep"] = deep
            files = {"i.json": json.dumps(node).encode()}
        elif shape == "yaml-block":
            depth = min(depth, 400)
            lines = [f"{'  ' * d}a:" for d in range(depth)] + [f"{'  ' * depth}b: c"]
            text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
            text += "\n".join("    " + x for x in lines) + "\n"
            files = {"i.yaml": text.encode()}
        else:
            value = _flow(rng, min(depth, 20_000))
            field_ = "name: " + value if shape == "yaml-name" else "name: n"
            text = f"apiVersion: v1\nkind: Node\nmetadata:\n  {field_}\n"
            if shape == "yaml-quantity":
                text += f"status:\n  allocatable:\n    cpu: {value}\n"
            files = {"i.yaml": text.encode()}
        name = next(iter(files))
        out.append(
            Case(f"deep-{shape}-{depth}-{i}", files, solve([name]), expect=[[NEST]])
        )
    # 2 MB of flow collections just inside the limit: bounded time, a field error.
    wide = ", ".join([_flow(rng, 95)] * 3000)  # 4 levels above: 99 in all
    text = (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {{a: [{wide}]}}"
    )
    out.append(
        Case(
            "deep-wide-95",
            {"i.yaml": text.encode()},
            solve(["i.yaml"]),
            expect=[["Node n", "field metadata.labels.a", "expected a string"]],
        )
    )
    return out


def laughs(width: int, levels: int) -> list[str]:
    """Mapping lines of a "billion laughs": ``a{levels}`` expands to
    ``width ** (levels + 1)`` scalars from a few hundred bytes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for k in range(1, levels + 1):
        lines.append(f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * width)}]")
    return lines


# -- aliases -------------------------------------------------------------------

_TARGETS = {
    "label": ("Node", "metadata:\n  name: n\n  labels:\n    x: {ref}\n"),
    "name": ("Node", "metadata:\n  name: {ref}\n"),
    "annotation": (
        "Workload",
        "metadata:\n  name: w\n  namespace: team-a\n  annotations:\n    x: {ref}\n"
        "spec:\n  queueName: main\n  podSets: [{{name: a, count: 1}}]\n",
    ),
    "quantity": (
        "Node",
        "metadata:\n  name: n\nstatus:\n  allocatable:\n    cpu: {ref}\n",
    ),
    "containers": (
        "Pod",
        "metadata:\n  name: p\nspec:\n  nodeName: gpu-r1-h1\n  containers: {ref}\n",
    ),
}
_FIELD = {
    "label": "field metadata.labels.x",
    "name": "field metadata.name",
    "annotation": "field metadata.annotations.x",
    "quantity": "field status.allocatable.cpu",
    "containers": "field spec.containers[0]",
}


def aliases(rng: random.Random) -> list[Case]:
    out = []
    for i in range(N - 3):
        target = rng.choice(sorted(_TARGETS))
        kind, body = _TARGETS[target]
        width, levels = rng.randint(2, 10), rng.randint(1, 9)
        bomb = ["  " + line for line in laughs(width, levels)]
        api = "kueue.x-k8s.io/v1beta2" if kind == "Workload" else "v1"
        text = f"apiVersion: {api}\nkind: {kind}\nx-bomb:\n" + "\n".join(bomb) + "\n"
        text += body.format(ref=f"*a{levels}")
        expect = [["{i.yaml}", "aliases expand too much"], ["{i.yaml}", _FIELD[target]]]
        out.append(
            Case(
                f"alias-{target}-{width}x{levels}-{i}",
                {"i.yaml": text.encode()},
                solve(["i.yaml"]),
                expect=expect,
            )
        )
    for i, (text, why) in enumerate(
        [
            (
                "apiVersion: v1\nkind: Node\nmetadata: &m {name: n, x: *m}\n",
                "recursive alias",
            ),
            (
                "apiVersion: v1\nkind: Node\nmetadata: {name: *nowhere}\n",
                "undefined alias",
            ),
            (
                "a: &a x\n---\napiVersion: v1\nkind: Node\nmetadata: {name: *a}\n",
                "undefined alias",
            ),
        ]
    ):
        out.append(
            Case(
                f"alias-bad-{i}",
                {"i.yaml": text.encode()},
                solve(["i.yaml"]),
                expect=[["{i.yaml}", why]],
            )
        )
    return out


# -- quantities beyond int64 on running work -----------------------------------

_HUGE = ["1e30", "99999999999999999999Ei", "9223372036854775808", "1" + "0" * 120, "8E"]


def _set_quantity(docs: list[dict[str, Any]], target: str, value: str) -> None:
    for d in docs:
        if target == "pod" and d["kind"] == "Pod":
            d["spec"]["containers"][0]["resources"]["requests"]["cpu"] = value
        elif target == "running" and d["kind"] == "Workload" and d.get("status"):
            d["status"]["admission"]["podSetAssignments"][0]["resourceUsage"][
                "memory"
            ] = value
        elif target == "node" and d["kind"] == "Node":
            d["status"]["allocatable"]["memory"] = value
            return
        elif target == "quota" and d["kind"] == "ClusterQueue":
            d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
                "nominalQuota"
            ] = value
            return


def int64(rng: random.Random) -> list[Case]:
    out = []
    for i in range(N):
        docs = copy.deepcopy(BASE_DOCS)
        target = ["pod", "running", "node", "quota"][i % 4]
        _set_quantity(docs, target, rng.choice(_HUGE))
        solver = [["--solver", "auto"], ["--solver", "cpsat"], GREEDY][i % 3]
        args = solver if solver is GREEDY else [*solver, *OPTIMIZER]
        out.append(
            Case(
                f"int64-{target}-{solver[1]}-{i}",
                {"i.yaml": dump(docs, rng.random() < 0.3)},
                solve(["i.yaml"], args),
                (0,),
                instances=["i.yaml"],
            )
        )
    return out


# -- empty streams -------------------------------------------------------------

_EMPTY = [
    b"",
    b"\n\n",
    b"# a comment only\n",
    b"---\n",
    b"---\n...\n",
    b"\xef\xbb\xbf",
    b" \t\n",
    b"---\n---\n",
]


def empty(rng: random.Random) -> list[Case]:
    out = []
    for i in range(N):
        data = _EMPTY[i % len(_EMPTY)]
        if i % 2:
            out.append(
                Case(
                    f"empty-alone-{i}",
                    {"e.yaml": data},
                    solve(["e.yaml"]),
                    expect=[["{e.yaml}", "holds no Kubernetes objects"]],
                )
            )
        else:
            files = {"i.yaml": BASE_TEXT.encode(), "e.yaml": data}
            out.append(
                Case(
                    f"empty-beside-{i}",
                    files,
                    solve(["i.yaml", "e.yaml"]),
                    (0,),
                    [["{e.yaml}", "holds no Kubernetes objects"]],
                    ["i.yaml", "e.yaml"],
                    same_plan=True,
                )
            )
    return out


# -- <Kind>List without item kinds ---------------------------------------------


def kind_lists(rng: random.Random) -> list[Case]:
    out = []
    for i in range(N):
        by_kind: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for d in BASE_DOCS:
            by_kind.setdefault((d["apiVersion"], d["kind"]), []).append(d)
        lists = []
        for (api, kind), items in by_kind.items():
            stripped = [
                {
                    k: v
                    for k, v in d.items()
                    if k not in ("apiVersion", "kind") or rng.random() < 0.2
                }
                for d in items
            ]
            lists.append(
                {
                    "apiVersion": api,
                    "kind": f"{kind}List",
                    "metadata": {"resourceVersion": "1"},
                    "items": stripped,
                }
            )
        rng.shuffle(lists)
        if i % 6 == 5:  # a plain List cannot lend its items a kind
            generic = {
                "apiVersion": "v1",
                "kind": "List",
                "items": [{"metadata": {"name": "x"}}],
            }
            files = {"i.yaml": yaml.safe_dump(generic).encode()}
            out.append(
                Case(
                    f"list-generic-{i}",
                    files,
                    solve(["i.yaml"]),
                    expect=[["{i.yaml}", "field kind", "missing"]],
                )
            )
            continue
        if i % 2:
            files = {
                f"l{j}.json": json.dumps(lst).encode() for j, lst in enumerate(lists)
            }
        else:
            files = {"l.yaml": yaml.safe_dump_all(lists).encode()}
        out.append(
            Case(
                f"kind-list-{i}",
                files,
                solve(sorted(files)),
                (0,),
                instances=sorted(files),
                same_plan=True,
            )
        )
    return out


CLASSES: dict[str, Callable[[random.Random], list[Case]]] = {
    "non_utf8": non_utf8,
    "deep_nesting": deep_nesting,
    "aliases": aliases,
    "int64": int64,
    "empty": empty,
    "kind_lists": kind_lists,
}
