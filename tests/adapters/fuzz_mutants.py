"""Seeded hostile inputs, part 2: plans, other readers, generic mutations.

See :mod:`tests.adapters.fuzz_cases` for the shape of a case.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

import yaml

from tests.adapters.fuzz_cases import (
    BASE_DOCS,
    BASE_TEXT,
    GREEDY,
    NEST,
    OPTIMIZER,
    Case,
    N,
    dump,
    laughs,
    solve,
)

# -- plans ---------------------------------------------------------------------

_NOT_NUMBERS: list[Any] = ["abc", [1, 2], {"a": 1}, True, "", "1e999"]


def plans(rng: random.Random, plan: dict[str, Any]) -> list[Case]:
    out = []
    for i in range(N):
        doc = copy.deepcopy(plan)
        key = rng.choice(["objective", "objective", "bound", "wallSeconds"])
        as_json = rng.random() < 0.5
        value: Any = rng.choice(_NOT_NUMBERS)
        if as_json and rng.random() < 0.4:
            value = "__BIG__"  # beyond float, or beyond 4300 digits
        doc["solver"][key] = value
        text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
        text = text.replace('"__BIG__"', "9" * rng.choice([400, 4000, 5000]))
        if not as_json and rng.random() < 0.3:
            text = text.replace(
                f"{key}: ",
                f"{key}: {rng.choice(['.nan', '.inf', '-.inf', '1' * 400])} #",
                1,
            )
        name = "p.json" if as_json else "p.yaml"
        fragments = ["{" + name + "}", "Plan", f"field solver.{key}"]
        alt = ["{" + name + "}", "JSON error"]  # more than 4300 digits
        out.append(
            Case(
                f"plan-{key}-{i}",
                {"i.yaml": BASE_TEXT.encode(), name: text.encode()},
                ["validate", "{i.yaml}", "--plan", "{" + name + "}"],
                expect=[fragments, alt],
            )
        )
    return out


# -- generic mutations of a valid instance -------------------------------------


def _random_value(rng: random.Random) -> Any:
    return rng.choice(
        [
            lambda: rng.choice(["", "x", "-1", "8x", "1.5", "True", "null", "é"]),
            lambda: "y" * rng.choice([64, 300, 5000]),
            lambda: rng.choice([0, -1, 7, 2**31, -(2**63), 10**30]),
            lambda: rng.choice([0.5, -2.5, 1e300]),
            lambda: rng.choice([True, False, None]),
            lambda: [rng.choice(["a", 1, None])],
            lambda: {"k": rng.choice(["v", 2, None])},
            lambda: {},
            lambda: [],
        ]
    )()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(rng: random.Random, docs: list[dict[str, Any]]) -> None:
    doc = rng.choice(docs)
    op = rng.choice(["replace", "replace", "replace", "delete", "duplicate", "kind"])
    if op == "duplicate":
        docs.append(copy.deepcopy(doc))
        return
    if op == "kind":
        doc["kind"] = rng.choice(["Node", "Pod", "Workload", "ClusterQueue", "Nope"])
        return
    path = rng.choice(_paths(doc))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if op == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = _random_value(rng)


def generic(rng: random.Random) -> list[Case]:
    out = []
    for i in range(2 * N):
        docs = copy.deepcopy(BASE_DOCS)
        for _ in range(rng.randint(1, 3)):
            _mutate(rng, docs)
        as_json = rng.random() < 0.3
        name = "i.json" if as_json else "i.yaml"
        solver = GREEDY if i % 4 else ["--solver", "auto", *OPTIMIZER]
        out.append(
            Case(
                f"mutant-{i}",
                {name: dump(docs, as_json)},
                solve([name], solver),
                (0, 2),
                [["{" + name + "}"]],
                [name],
            )
        )
    return out


# -- the other readers: plans, generator configs, policies, emulator seeds -----

_HOSTILE: list[tuple[str, bytes, str]] = [
    ("bytes", b"a: \xff\n", "not UTF-8 text"),
    ("deep", b"a: " + b"[" * 3000, NEST),
    ("deep-json", b"[" * 3000, NEST),
    ("bomb", "\n".join([*laughs(10, 5), "f: *a5"]).encode(), "aliases expand too much"),
    ("empty", b"", "holds no document"),
    ("recursive", b"a: &a [*a]\n", "recursive alias"),
]


def readers(rng: random.Random) -> list[Case]:
    commands: dict[str, Callable[[str], list[str]]] = {
        "validate": lambda f: ["validate", "{i.yaml}", "--plan", f],
        "generate": lambda f: ["generate", "--config", f, "-o", "{plan}"],
        "policy": lambda f: ["solve", "{i.yaml}", "--policy", f, "-o", "{plan}"],
        "emulate": lambda f: ["emulate", "--from", f],
    }
    out = []
    for command, argv in sorted(commands.items()):
        for what, data, why in _HOSTILE:
            name = "h.json" if what == "deep-json" else "h.yaml"
            if command == "emulate" and what == "empty":
                continue  # an empty emulator is legitimate (it would serve)
            files = {"i.yaml": BASE_TEXT.encode(), name: data}
            out.append(
                Case(
                    f"{command}-{what}",
                    files,
                    argv("{" + name + "}"),
                    expect=[["{" + name + "}", why]],
                )
            )
    for i, bad in enumerate(
        [
            "demand_scale: x",
            "demand_scale: 1000000000000000000000",
            "accelerators: 5",
            "topology: maybe",
            "nope: 1",
            "[1, 2]",
        ]
    ):
        files = {"i.yaml": BASE_TEXT.encode(), "p.yaml": bad.encode()}
        out.append(
            Case(
                f"policy-type-{i}",
                files,
                ["solve", "{i.yaml}", "--policy", "{p.yaml}"],
                expect=[["{p.yaml}"]],
            )
        )
    rng.shuffle(out)
    return out
