"""HiGHS in a child interpreter, fed a model as arrays.

OR-Tools and highspy both ship a ``libhighs.so.1`` (different HiGHS versions
under one SONAME); the dynamic loader shares whichever was loaded first, so
the second import fails with an undefined symbol.  The child imports numpy
and highspy only (~0.3 s to start), reads one ``.npz`` on stdin and answers
one JSON line.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

WORKER = "placewise.solver.highs_worker"
"""The child's module (numpy and highspy only, see its docstring)."""
PARENT_ENV = "PLACEWISE_HIGHS_PARENT"
"""The spawning process's pid, passed to the worker (which exits when it is
gone): read at spawn, where ``os.getppid()`` in the child may already be
init's if the parent died first."""


@dataclass(slots=True)
class Arrays:
    """A maximisation problem: row_lo <= A x <= row_hi, col_lo <= x <= col_hi."""

    cost: FloatArray
    offset: float
    col_lo: FloatArray
    col_hi: FloatArray
    row_lo: FloatArray
    row_hi: FloatArray
    start: IntArray
    index: IntArray
    value: FloatArray
    integer: npt.NDArray[np.bool_]


@dataclass(slots=True)
class HighsResult:
    status: str
    bound: float | None
    """Proven upper bound (LP optimum, or the MIP's dual bound)."""
    objective: float | None
    """Best solution's objective (a MIP incumbent), if any."""
    x: list[float] | None = None


class Running:
    """A HiGHS run in a child process, started without waiting for it."""

    def __init__(self, arrays: Arrays, time_limit: float, want_x: bool) -> None:
        payload = _payload(arrays, time_limit, want_x)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, PARENT_ENV: str(os.getpid())},
        )
        self._io = threading.Thread(target=self._talk, args=(payload,), daemon=True)
        self._out: tuple[bytes, bytes] | None = None
        self._io.start()

    def _talk(self, payload: bytes) -> None:
        self._out = self.proc.communicate(payload)

    def result(self, timeout: float | None = None) -> HighsResult | None:
        """The answer, or None when it is not in within ``timeout`` seconds."""
        self._io.join(timeout)
        if self._io.is_alive() or self._out is None:
            return None
        stdout, stderr = self._out
        if self.proc.returncode != 0:
            tail = stderr.decode(errors="replace").strip().splitlines()[-1:]
            why = " ".join(tail) or str(self.proc.returncode)
            return HighsResult(f"worker failed: {why}", None, None)
        out = json.loads(stdout)
        return HighsResult(str(out["status"]), out["bound"], out["objective"], out["x"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._io.join(5)


def run_highs(
    arrays: Arrays, time_limit: float = 0.0, want_x: bool = False
) -> HighsResult:
    """Solve and wait."""
    got = Running(arrays, time_limit, want_x).result()
    assert got is not None
    return got


def _payload(arrays: Arrays, time_limit: float, want_x: bool) -> bytes:
    buf = io.BytesIO()
    np.savez(
        buf,
        cost=arrays.cost,
        offset=np.asarray([arrays.offset]),
        col_lo=arrays.col_lo,
        col_hi=arrays.col_hi,
        row_lo=arrays.row_lo,
        row_hi=arrays.row_hi,
        start=arrays.start.astype(np.int32),
        index=arrays.index.astype(np.int32),
        value=arrays.value,
        integer=arrays.integer,
        time_limit=np.asarray([time_limit]),
        want_x=np.asarray([want_x]),
    )
    return buf.getvalue()


def run_pulp(arrays: Arrays) -> HighsResult:
    """The LP through pulp's bundled CBC: starts in milliseconds where the
    HiGHS child needs ~0.3 s, so small instances (tests) prefer it."""
    import math
    import warnings

    import pulp

    prob = pulp.LpProblem("gpu_bound", pulp.LpMaximize)
    xs = [
        prob.add_variable(
            f"x{j}",
            None if math.isinf(lo) else float(lo),
            None if math.isinf(hi) else float(hi),
        )
        for j, (lo, hi) in enumerate(zip(arrays.col_lo, arrays.col_hi, strict=True))
    ]
    prob += pulp.LpAffineExpression(
        [(xs[j], float(c)) for j, c in enumerate(arrays.cost) if c]
    )
    for k in range(arrays.row_lo.size):
        a, b = int(arrays.start[k]), int(arrays.start[k + 1])
        expr = pulp.LpAffineExpression(
            [
                (xs[int(j)], float(v))
                for j, v in zip(arrays.index[a:b], arrays.value[a:b], strict=True)
            ]
        )
        lo, hi = float(arrays.row_lo[k]), float(arrays.row_hi[k])
        if lo == hi:
            prob += expr == lo
            continue
        if not math.isinf(hi):
            prob += expr <= hi
        if not math.isinf(lo):
            prob += expr >= lo
    with warnings.catch_warnings():
        # pulp 3.3 deprecates its bundled-binary class for 4.0; it is the one
        # that needs no separately installed cbc.
        warnings.simplefilter("ignore", DeprecationWarning)
        backend = pulp.PULP_CBC_CMD(msg=False)
    prob.solve(backend)
    text = str(pulp.LpStatus[prob.status])
    if prob.status != pulp.LpStatusOptimal:
        return HighsResult(text, None, None)
    value = float(pulp.value(prob.objective) or 0.0)
    return HighsResult(text, value, value)
