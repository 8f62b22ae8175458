"""A CP-SAT model of linear rows, written out as arrays for HiGHS."""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from placewise.solver.highs import Arrays

INF = float("inf")
_BIG = 1 << 60


def _num(x: int) -> float:
    if x <= -_BIG:
        return -INF
    if x >= _BIG:
        return INF
    return float(x)


def export(
    model: cp_model.CpModel,
    objective: list[tuple[int, int]],
    integer: set[int] | None = None,
) -> Arrays:
    """``objective``: (coefficient, variable index) terms to maximise;
    ``integer``: variable indices kept integral (everything else relaxed)."""
    proto = model.proto
    n = len(proto.variables)
    col_lo = np.empty(n)
    col_hi = np.empty(n)
    for i, var in enumerate(proto.variables):
        dom = list(var.domain)
        col_lo[i], col_hi[i] = _num(dom[0]), _num(dom[-1])
    starts = [0]
    index: list[int] = []
    value: list[float] = []
    row_lo: list[float] = []
    row_hi: list[float] = []
    for ct in proto.constraints:
        if not ct.has_linear() or len(ct.enforcement_literal):
            raise ValueError("only plain linear rows can be exported")
        lin = ct.linear
        dom = list(lin.domain)
        if len(dom) != 2:
            raise ValueError("only interval domains can be exported")
        index.extend(lin.vars)
        value.extend(float(c) for c in lin.coeffs)
        starts.append(len(index))
        row_lo.append(_num(dom[0]))
        row_hi.append(_num(dom[1]))
    cost = np.zeros(n)
    for c, i in objective:
        cost[i] += c
    flags = np.zeros(n, dtype=bool)
    for i in integer or ():
        flags[i] = True
    return Arrays(
        cost=cost,
        offset=0.0,
        col_lo=col_lo,
        col_hi=col_hi,
        row_lo=np.asarray(row_lo),
        row_hi=np.asarray(row_hi),
        start=np.asarray(starts, dtype=np.int64),
        index=np.asarray(index, dtype=np.int64),
        value=np.asarray(value),
        integer=flags,
    )
