"""Runs fuzz cases through the real CLI in one process, under the limits the
parent sets (address space, wall clock), and reports each case as JSON.

``python -m tests.adapters.fuzz_worker CASES.json RESULTS.jsonl``: every case
is ``placewise.adapters.cli.main(argv)`` with stdout and stderr captured; an
exception escaping ``main`` is recorded as a traceback (the defect the fuzz
test exists to catch).  A plan written by a successful solve is checked by
the independent validator here, while the instance is at hand.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

STDERR_KEPT = 20_000


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    from placewise.adapters.cli.validate import read_plan
    from placewise.adapters.io.loader import load_snapshot
    from placewise.cli import main
    from placewise.models.validate import validate

    for handler in logging.getLogger().handlers[:]:
        logging.getLogger().removeHandler(handler)  # re-bind to this case's stderr
    out, err = io.StringIO(), io.StringIO()
    crash = None
    start = time.perf_counter()
    code: Any = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(case["argv"])
        except SystemExit as exc:
            code = exc.code
        except BaseException:  # everything, MemoryError and RecursionError included
            crash = traceback.format_exc()
    seconds = time.perf_counter() - start
    result: dict[str, Any] = {
        "id": case["id"],
        "code": code,
        "seconds": seconds,
        "stderr": err.getvalue()[:STDERR_KEPT],
        "crash": crash,
        "plan": None,
        "violations": None,
    }
    plan_path = Path(case["plan"])
    if code == 0 and case["instances"] and plan_path.exists():
        plan = read_plan(str(plan_path))
        snapshot = load_snapshot(case["instances"])
        result["violations"] = [str(v) for v in validate(snapshot, plan)]
        result["plan"] = plan.to_dict()
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    with Path(sys.argv[2]).open("a") as results:
        for case in cases:
            # One line per case, flushed: a killed worker still tells which.
            results.write(json.dumps(run_case(case)) + "\n")
            results.flush()


if __name__ == "__main__":
    main()
