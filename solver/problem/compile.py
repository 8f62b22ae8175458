"""One compiled problem: the index tables and their aggregated placement.

:class:`Problem` is complete when built: the placement
(:func:`placewise.solver.problem.layout.build_layout`) is derived from the
tables, so the tables are compiled first and both are then frozen together;
nothing downstream checks for a missing half.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placewise.models.plan import PlanAdmission
from placewise.models.snapshot import Snapshot
from placewise.solver.kueue.workload import WlInfo
from placewise.solver.problem.data import ModelData, admitted_info, compile_data
from placewise.solver.problem.layout import Layout, build_layout
from placewise.solver.problem.pairs import add_pairs
from placewise.solver.reservation import Reservation


@dataclass(frozen=True, slots=True)
class Problem:
    """What the CP model, the warm start, the decoder and the bound read."""

    data: ModelData
    layout: Layout
    """The aggregated TAS placement of ``data``."""


def compile_problem(
    snap: Snapshot,
    decided: Sequence[PlanAdmission] = (),
    reservation: Reservation | None = None,
) -> Problem:
    """The tables and their placement.  ``decided``: admissions the model
    takes as made (counted as running, the running slices they replace gone).
    A ``reservation``'s hosts are closed to the work it shuts out (the
    placement reads it from the tables).

    Workloads whose topology request the placement cannot express are left
    out with why; the index tables are then compiled again without them, so
    that every index stays dense (the placement and the model index pod sets
    and workloads by position)."""
    fixed = {a.workload: admitted_info(snap, a) for a in decided}
    removed = frozenset(a.replaces for a in decided if a.replaces)
    data = _tables(snap, fixed, removed, {}, decided, reservation)
    layout = build_layout(data)
    if layout.unsupported:
        bad = {
            data.workloads[data.pod_sets[p].wl].key: why
            for p, why in layout.unsupported.items()
        }
        data = _tables(snap, fixed, removed, bad, decided, reservation)
        layout = build_layout(data)
    return Problem(data, layout)


def _tables(
    snap: Snapshot,
    fixed: dict[str, WlInfo],
    removed: frozenset[str],
    exclude: dict[str, str],
    decided: Sequence[PlanAdmission],
    reservation: Reservation | None,
) -> ModelData:
    data = compile_data(snap, None, fixed, removed, exclude, decided)
    data.reservation = reservation
    add_pairs(data)
    return data
