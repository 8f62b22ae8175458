"""The HiGHS child process: one ``.npz`` problem on stdin, one JSON line out.

Run as ``python -m placewise.solver.highs_worker`` by :mod:`.highs`; it must
import numpy and highspy only (OR-Tools ships its own ``libhighs.so.1``, and
whichever loads first wins the SONAME), which is why it is a module of its
own and why ``placewise`` and ``placewise.solver`` keep empty package inits.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from typing import Any

import highspy
import numpy as np

from placewise.solver.highs import PARENT_ENV  # numpy only, no OR-Tools


def solve(a: Any) -> dict[str, Any]:
    """Maximise the arrays' problem; the LP optimum or the MIP's dual bound."""
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    limit = float(a["time_limit"][0])
    if limit > 0:
        h.setOptionValue("time_limit", limit)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_ = int(a["cost"].size)
    lp.num_row_ = int(a["row_lo"].size)
    lp.col_cost_ = a["cost"]
    lp.col_lower_ = np.maximum(a["col_lo"], -inf)
    lp.col_upper_ = np.minimum(a["col_hi"], inf)
    lp.row_lower_ = np.maximum(a["row_lo"], -inf)
    lp.row_upper_ = np.minimum(a["row_hi"], inf)
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.offset_ = float(a["offset"][0])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = a["start"]
    lp.a_matrix_.index_ = a["index"]
    lp.a_matrix_.value_ = a["value"]
    mip = bool(a["integer"].size and a["integer"].any())
    if mip:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
            for i in a["integer"]
        ]
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    bound = None
    if mip:
        bound = info.mip_dual_bound
    elif status == highspy.HighsModelStatus.kOptimal:
        bound = info.objective_function_value
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    return {
        "status": h.modelStatusToString(status),
        "bound": bound if bound is None or np.isfinite(bound) else None,
        "objective": info.objective_function_value if found else None,
        "x": list(h.getSolution().col_value) if found and a["want_x"][0] else None,
    }


WATCH_SECONDS = 0.5


def _watch(parent: int) -> None:
    """Exit once the parent is gone.  A parent that ends without calling
    ``Running.stop`` (killed mid-solve by a ``timeout`` or the OOM killer, or
    a script that gave up on a result and exited) left its child solving:
    four such children, on LPs HiGHS looped on past their time limit, kept
    a 2-core machine busy for 80 minutes.  highspy releases the GIL while it
    solves, so this thread runs beside it."""
    while True:
        time.sleep(WATCH_SECONDS)
        if os.getppid() != parent:
            os._exit(3)


def main() -> None:
    parent = int(os.environ.get(PARENT_ENV) or os.getppid())
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    arrays = np.load(io.BytesIO(sys.stdin.buffer.read()))
    print(json.dumps(solve(arrays)))


if __name__ == "__main__":
    main()
