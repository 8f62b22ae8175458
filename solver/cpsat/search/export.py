"""A CP-SAT model of linear rows, written out as arrays for HiGHS."""

from __future__ import annotations

import os
import tempfile

import numpy as np
from ortools.sat import cp_model_pb2
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


def _parsed(model: cp_model.CpModel) -> cp_model_pb2.CpModelProto:
    """The model as a plain protobuf message.  Reading rows field by field
    from OR-Tools' own proto wrapper costs ~0.1 ms each (1.2 s for the
    8,000 rows of a 10,000-host relaxed model); written out and parsed back
    it is ten times faster."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pb")
        if not model.export_to_file(path):
            raise ValueError("the model could not be written out")
        with open(path, "rb") as fh:
            parsed: cp_model_pb2.CpModelProto = cp_model_pb2.CpModelProto.FromString(
                fh.read()
            )
    return parsed


def export(
    model: cp_model.CpModel,
    objective: list[tuple[int, int]],
    integer: set[int] | None = None,
) -> Arrays:
    """``objective``: (coefficient, variable index) terms to maximise;
    ``integer``: variable indices kept integral (everything else relaxed)."""
    proto = _parsed(model)
    n = len(proto.variables)
    col_lo = np.empty(n)
    col_hi = np.empty(n)
    for i, var in enumerate(proto.variables):
        dom = var.domain
        col_lo[i], col_hi[i] = _num(dom[0]), _num(dom[-1])
    starts = [0]
    index: list[int] = []
    value: list[int] = []
    bounds: list[int] = []
    for ct in proto.constraints:
        if ct.WhichOneof("constraint") != "linear" or len(ct.enforcement_literal):
            raise ValueError("only plain linear rows can be exported")
        lin = ct.linear
        if len(lin.domain) != 2:
            raise ValueError("only interval domains can be exported")
        index.extend(lin.vars)
        value.extend(lin.coeffs)
        starts.append(len(index))
        bounds.extend(lin.domain)
    rows = np.asarray([_num(b) for b in bounds]).reshape(-1, 2)
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
        row_lo=rows[:, 0].copy(),
        row_hi=rows[:, 1].copy(),
        start=np.asarray(starts, dtype=np.int64),
        index=np.asarray(index, dtype=np.int64),
        value=np.asarray(value, dtype=np.float64),
        integer=flags,
    )
