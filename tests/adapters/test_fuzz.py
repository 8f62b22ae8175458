"""Fuzzing the command line with hostile and broken input (issue 13, part 2).

Seeded mutations of each class the issue found (bytes that are not UTF-8,
deep nesting, alias bombs, quantities beyond int64 on running work, plans
whose numbers are not numbers, empty streams, ``<Kind>List`` items without
kinds, generic mutations of a valid instance, and the same hostile files fed
to the other readers) run through the real CLI in one worker process under
an address-space limit and a wall-clock timeout.  Every case must end with
exit 0 or 2 and no traceback, within its time; exit 2 names the file (and
the object and field where the class has one); every plan written passes
the independent validator.
"""

from __future__ import annotations

import functools
import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from placewise.cli import main
from tests.adapters import fuzz_mutants
from tests.adapters.fuzz_cases import BASE_TEXT, CLASSES, Case

SEED = 13
ADDRESS_SPACE = 4 << 30
"""The worker's address-space limit: a blow-up fails the case, not the host."""
PEAK_RSS_MB = 1500
TIMEOUT = 120
"""Seconds for all cases together (about 15 s on one core)."""


def _base_plan(tmp: Path) -> dict[str, Any]:
    base, plan = tmp / "base.yaml", tmp / "base-plan.yaml"
    base.write_text(BASE_TEXT)
    assert main(["solve", str(base), "--solver", "greedy", "-o", str(plan)]) == 0
    doc = yaml.safe_load(plan.read_text())
    assert doc["admissions"], "the base instance must admit something"
    return doc


def _fill(text: str, paths: dict[str, str]) -> str:
    """``{name}`` -> the written file's path (names hold dots: no str.format)."""
    for name, path in paths.items():
        text = text.replace("{" + name + "}", path)
    return text


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Case], dict[str, dict[str, Any]], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    base_plan = _base_plan(tmp)
    classes = {
        **CLASSES,
        "generic": fuzz_mutants.generic,
        "readers": fuzz_mutants.readers,
        "plans": functools.partial(fuzz_mutants.plans, plan=base_plan),
    }
    cases: dict[str, Case] = {}
    specs = []
    for cls, make in sorted(classes.items()):
        for case in make(random.Random(f"{SEED}-{cls}")):
            case.id = f"{cls}/{case.id}"
            folder = tmp / case.id.replace("/", "-")
            folder.mkdir()
            paths = {name: str(folder / name) for name in case.files}
            paths["plan"] = str(folder / "plan.yaml")
            for name, data in case.files.items():
                Path(paths[name]).write_bytes(data)
            case.argv = [_fill(a, paths) for a in case.argv]
            case.expect = [[_fill(f, paths) for f in alt] for alt in case.expect]
            case.instances = [paths[n] for n in case.instances]
            case.paths = [paths[n] for n in case.files]
            cases[case.id] = case
            specs.append(
                {
                    "id": case.id,
                    "argv": case.argv,
                    "plan": paths["plan"],
                    "instances": case.instances,
                }
            )
    (tmp / "cases.json").write_text(json.dumps(specs))
    results_file = tmp / "results.jsonl"
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.adapters.fuzz_worker",
                str(tmp / "cases.json"),
                str(results_file),
            ],
            cwd=Path(__file__).resolve().parents[2],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            preexec_fn=_limit,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        died = proc.stderr[-3000:] if proc.returncode else ""
    except subprocess.TimeoutExpired:
        died = f"no answer within {TIMEOUT} s (a hang)"
    lines = results_file.read_text().splitlines() if results_file.exists() else []
    results = {r["id"]: r for r in map(json.loads, lines)}
    done = len(results)
    assert not died, (
        f"worker died after {done} of {len(specs)} cases, in "
        f"{specs[done]['id'] if done < len(specs) else '-'}: {died}"
    )
    return cases, results, base_plan


def _decisions(plan: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(
        sorted(json.dumps(x, sort_keys=True) for x in plan[key])
        for key in ("admissions", "preemptions", "pending")
    )


@pytest.mark.parametrize("cls", sorted([*CLASSES, "generic", "readers", "plans"]))
def test_fuzz_class(
    cls: str,
    fuzzed: tuple[dict[str, Case], dict[str, dict[str, Any]], dict[str, Any]],
) -> None:
    """Exit 0 or 2, never a traceback; located errors; valid plans; bounded."""
    cases, results, base_plan = fuzzed
    mine = [c for c in cases.values() if c.id.startswith(cls + "/")]
    assert len(mine) >= 20, "a few dozen mutations per class"
    failures = []
    for case in mine:
        r = results[case.id]
        err = r["stderr"]
        why = []
        if r["crash"] or "Traceback (most recent call last)" in err:
            why.append(f"traceback:\n{r['crash'] or err}")
        if r["code"] not in case.codes:
            why.append(f"exit {r['code']}, expected {case.codes}")
        if r["seconds"] > case.seconds:
            why.append(f"took {r['seconds']:.1f} s")
        if r["code"] == 2:
            for line in err.splitlines():
                if line.startswith("error:") and not any(f in line for f in case.paths):
                    why.append(f"error names no file: {line[:300]}")
        if (
            case.expect
            and (r["code"] == 2 or case.codes == (0,))
            and not any(all(f in err for f in alt) for alt in case.expect)
        ):
            why.append(f"stderr lacks {case.expect}")
        if r["violations"]:
            why.append(f"invalid plan: {r['violations'][:5]}")
        if (
            case.codes == (0,)
            and case.instances
            and r["code"] == 0
            and r["plan"] is None
        ):
            why.append("no plan written")
        plan = r["plan"]
        if case.same_plan and plan and _decisions(plan) != _decisions(base_plan):
            why.append("decides differently from the base instance")
        if why:
            failures.append(
                f"{case.id}: " + "; ".join(why) + f"\n  stderr: {err[:500]}"
            )
    assert not failures, "\n".join(failures)
    peak = max(results[c.id]["maxrss_mb"] for c in mine)
    assert peak < PEAK_RSS_MB, f"peak RSS {peak:.0f} MB"
