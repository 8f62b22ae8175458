"""Plan writers: YAML (default), JSON, and a rich table for people."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from io import StringIO
from pathlib import Path
from typing import Any, TextIO

import yaml
from rich.console import Console
from rich.table import Table

from placewise.models.plan import Plan, TierResult
from placewise.models.quantity import format_units
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import PodSetAssignment, Workload
from placewise.solver.metrics import (
    busy_gpus,
    compute,
    pod_set_span,
    requested_gpus,
    workload_gpus,
)

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Dumper = yaml.SafeDumper

FORMATS = ("yaml", "json", "table")


def render(plan: Plan, fmt: str, snapshot: Snapshot | None = None) -> str:
    """``snapshot`` lets the table name each victim's priority and GPUs."""
    if fmt == "json":
        return json.dumps(plan.to_dict(), indent=2) + "\n"
    if fmt == "table":
        return render_table(plan, snapshot)
    text: str = yaml.dump(
        plan.to_dict(), Dumper=_Dumper, sort_keys=False, default_flow_style=False
    )
    return text


def table_width() -> int:
    """``COLUMNS`` if set, else the terminal's width, else 120 (a pipe or a
    file has no width of its own)."""
    return shutil.get_terminal_size((120, 24)).columns


def _console(buf: StringIO, width: int | None) -> Console:
    return Console(
        file=buf,
        width=width or table_width(),
        force_terminal=False,
        color_system=None,
    )


def render_table(
    plan: Plan, snapshot: Snapshot | None = None, width: int | None = None
) -> str:
    buf = StringIO()
    console = _console(buf, width)
    s = plan.solver
    console.print(
        f"solver {s.name}  status {s.status}  {s.wall_seconds:.3f}s"
        + (_busy(plan, snapshot) if snapshot is not None else "")
    )
    if s.tiers:
        console.print("  ".join(_tier_cell(t) for t in s.tiers))
    adm = Table(title=f"Admitted ({len(plan.admissions)})", title_justify="left")
    for col in (
        "workload",
        "clusterQueue",
        "podSet",
        "count",
        "flavors",
        "usage",
        "topology",
    ):
        adm.add_column(col)
    for a in plan.admissions:
        # An elastic slice names the running slice it finishes.
        name = f"{a.workload} (replaces {a.replaces})" if a.replaces else a.workload
        for i, p in enumerate(a.pod_set_assignments):
            flavors = ", ".join(sorted(set(p.flavors.values())))
            usage = ", ".join(
                f"{r}={format_units(r, v)}" for r, v in sorted(p.resource_usage.items())
            )
            adm.add_row(
                name if i == 0 else "",
                a.cluster_queue if i == 0 else "",
                p.name,
                str(p.count),
                flavors,
                usage,
                _hosts(p),
            )
    console.print(adm)
    if plan.preemptions:
        pre = Table(title=f"Preempted ({len(plan.preemptions)})", title_justify="left")
        cols = ["workload", "priority", "GPUs", "preemptor", "reason"]
        if snapshot is None:
            cols = [c for c in cols if c not in ("priority", "GPUs")]
        for col in cols:
            pre.add_column(col)
        for victim in plan.preemptions:
            row = [victim.workload, victim.preemptor, victim.reason]
            w = snapshot.workloads.get(victim.workload) if snapshot else None
            if snapshot is not None:
                prio, gpus = (str(w.priority), str(workload_gpus(w))) if w else ("", "")
                row[1:1] = [prio, gpus]
            pre.add_row(*row)
        console.print(pre)
    if plan.moves:
        mov = Table(title=f"Moved ({len(plan.moves)})", title_justify="left")
        for col in ("workload", "from", "to", "lost GPU-hours"):
            mov.add_column(col)
        for m in plan.moves:
            mov.add_row(
                m.workload,
                ", ".join(m.from_hosts),
                ", ".join(m.to_hosts),
                f"{m.lost_gpu_hours:g}",
            )
        console.print(mov)
    pen = Table(title=f"Pending ({len(plan.pending)})", title_justify="left")
    pen.add_column("workload")
    pen.add_column("reason")
    certified = any(p.blocked_by for p in plan.pending)
    if certified:
        pen.add_column("blocked by")
        pen.add_column("fewest moves")
    for waiting in plan.pending:
        row = [waiting.workload, waiting.reason]
        if certified:
            fewest = waiting.fewest_moves
            row += [waiting.blocked_by or "", "" if fewest is None else str(fewest)]
        pen.add_row(*row)
    console.print(pen)
    return buf.getvalue()


def _busy(plan: Plan, snapshot: Snapshot) -> str:
    """The plan's GPU total, as ``--compare`` and ``bound`` name it."""
    m = compute(snapshot, plan)
    bound = plan.solver.bound
    tail = "" if bound is None else f" (bound {busy_gpus(snapshot, bound)})"
    return f"  GPUs busy after the plan {m.gpus_busy}/{m.gpu_capacity}{tail}"


def _tier_cell(t: TierResult) -> str:
    """One priority tier: GPUs after the plan, its proven bound, Kueue's."""
    notes = [f"bound {t.bound}"] if t.bound is not None else []
    if t.greedy is not None:
        notes.append(f"greedy {t.greedy}")
    tail = f" ({', '.join(notes)})" if notes else ""
    return f"priority {t.priority}: {t.gpus} GPUs{tail}"


def _hosts(p: PodSetAssignment, shown: int = 4) -> str:
    if p.topology_assignment is None:
        return ""
    doms = p.topology_assignment.domains
    text = ", ".join(f"{'/'.join(d.values)}:{d.count}" for d in doms[:shown])
    return text + (f" (+{len(doms) - shown})" if len(doms) > shown else "")


def write(
    plan: Plan,
    fmt: str,
    out: str | None,
    stream: TextIO | None = None,
    snapshot: Snapshot | None = None,
) -> None:
    """Render first, then write: nothing reaches ``out`` if rendering fails."""
    emit(render(plan, fmt, snapshot), out, stream)


def emit(text: str, out: str | None, stream: TextIO | None = None) -> None:
    if out and out != "-":
        Path(out).write_text(text)
    else:
        (stream or sys.stdout).write(text)


# -- several plans side by side ----------------------------------------------------


def render_many(plans: Sequence[Plan], fmt: str, snapshot: Snapshot) -> str:
    """YAML: one document per plan; JSON: a list; table: side by side."""
    if fmt == "json":
        return json.dumps([p.to_dict() for p in plans], indent=2) + "\n"
    if fmt == "table":
        return render_comparison(snapshot, plans)
    return "---\n".join(render(p, "yaml") for p in plans)


def _tier_names(snapshot: Snapshot) -> dict[int, str]:
    names: dict[int, set[str]] = {}
    for w in snapshot.workloads.values():
        if w.priority_class is not None:
            names.setdefault(w.priority, set()).add(w.priority_class.name)
    return {p: ", ".join(sorted(n)) for p, n in names.items()}


def render_comparison(
    snapshot: Snapshot, plans: Sequence[Plan], width: int | None = None
) -> str:
    """What the optimizer ranks plans by (GPUs per priority tier, highest
    first), what it costs (preemptions), what it leaves (idle GPUs, split
    gangs), then each workload's fate in every plan; every plan is also put
    through the validator, so a better-looking plan cannot be an infeasible
    one."""
    buf = StringIO()
    console = _console(buf, width)
    scores = [compute(snapshot, p) for p in plans]
    checks = [validate(snapshot, p) for p in plans]
    tiers = _tier_names(snapshot)
    summary = Table(
        title="Plans side by side",
        title_justify="left",
        caption="the optimizer ranks plans by GPUs per priority, highest first; then "
        "preemption cost, topology, fragmentation, borrowing",
        caption_justify="left",
    )
    summary.add_column("")
    for p in plans:
        summary.add_column(p.solver.name, justify="right")

    def row(label: str, cells: Iterable[str]) -> None:
        summary.add_row(label, *cells)

    row("status", (f"{p.solver.status} {p.solver.wall_seconds:.2f}s" for p in plans))
    row("validator", ("valid" if not v else f"{len(v)} violations" for v in checks))
    row("GPUs admitted - preempted, by priority", ("" for _ in plans))
    for i, (prio, _) in enumerate(scores[0].tier_demand):
        name = f" ({tiers[prio]})" if prio in tiers else ""
        row(f"  {prio}{name}", (f"{m.tier_demand[i][1]:+d}" for m in scores))
    row(
        "admitted workloads (GPUs)",
        (f"{m.admitted_workloads} ({m.admitted_gpus})" for m in scores),
    )
    row(
        "preempted workloads (GPUs)",
        (f"{m.preemptions} ({m.preempted_gpus})" for m in scores),
    )
    if any(p.moves for p in plans):
        row(
            "moved workloads (lost GPU-hours)",
            (
                f"{len(p.moves)} ({sum(m.lost_gpu_hours for m in p.moves):g})"
                for p in plans
            ),
        )
    row("GPUs busy after the plan", (f"{m.gpus_busy}/{m.gpu_capacity}" for m in scores))
    row(
        "gangs split across domains",
        (
            f"{m.topology_gangs - m.gangs_in_domain} of {m.topology_gangs}"
            for m in scores
        ),
    )
    row("pending workloads", (str(len(p.pending)) for p in plans))
    console.print(summary)
    console.print(_fates(snapshot, plans))
    return buf.getvalue()


def _fates(snapshot: Snapshot, plans: Sequence[Plan]) -> Table:
    """Pending workloads, and running ones any plan preempts, one row each."""
    table = Table(title="Workloads", title_justify="left")
    for col in ("workload", "priority", "GPUs"):
        table.add_column(col)
    for p in plans:
        table.add_column(p.solver.name)
    victims = {v.workload for p in plans for v in p.preemptions}
    shown = [w for w in snapshot.pending] + [
        w for w in snapshot.running if w.key in victims
    ]
    for w in shown:
        gpus = workload_gpus(w) if w.admission else requested_gpus(w)
        cells = [_fate(snapshot, p, w) for p in plans]
        table.add_row(w.key, str(w.priority), str(gpus), *cells)
    return table


def _fate(snapshot: Snapshot, plan: Plan, w: Workload) -> str:
    for v in plan.preemptions:
        if v.workload == w.key:
            return f"preempted by {v.preemptor}"
    if w.admission is not None:
        return "keeps running"
    admission = next((a for a in plan.admissions if a.workload == w.key), None)
    if admission is None:
        return "pending"
    parts = []
    for psa in admission.pod_set_assignments:
        ps = w.pod_set(psa.name)
        span = pod_set_span(snapshot, ps, psa) if ps is not None else None
        where = ""
        if ps is not None and span is not None:
            asked = ps.topology.required or ps.topology.preferred
            split = "SPLIT " if asked and len(span[1]) > 1 else ""
            where = split + " + ".join(span[1]) + ": "
        parts.append(where + _hosts(psa))
    return "\n".join(parts)
