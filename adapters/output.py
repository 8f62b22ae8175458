"""Plan writers: YAML (default), JSON, and a rich table for people."""

from __future__ import annotations

import json
import sys
from io import StringIO
from pathlib import Path
from typing import Any, TextIO

import yaml
from rich.console import Console
from rich.table import Table

from placewise.models.plan import Plan
from placewise.models.quantity import format_units

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Dumper = yaml.SafeDumper

FORMATS = ("yaml", "json", "table")


def render(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(plan.to_dict(), indent=2) + "\n"
    if fmt == "table":
        return render_table(plan)
    text: str = yaml.dump(
        plan.to_dict(), Dumper=_Dumper, sort_keys=False, default_flow_style=False
    )
    return text


def render_table(plan: Plan, width: int = 120) -> str:
    buf = StringIO()
    console = Console(file=buf, width=width, force_terminal=False, color_system=None)
    s = plan.solver
    extra = ""
    if s.objective is not None:
        extra += f"  objective {s.objective:g}"
    if s.bound is not None:
        extra += f"  bound {s.bound:g}"
    console.print(f"solver {s.name}  status {s.status}  {s.wall_seconds:.3f}s{extra}")
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
        for i, p in enumerate(a.pod_set_assignments):
            flavors = ", ".join(sorted(set(p.flavors.values())))
            usage = ", ".join(
                f"{r}={format_units(r, v)}" for r, v in sorted(p.resource_usage.items())
            )
            topo = ""
            if p.topology_assignment is not None:
                doms = p.topology_assignment.domains
                shown = ", ".join(f"{'/'.join(d.values)}:{d.count}" for d in doms[:4])
                topo = shown + (f" (+{len(doms) - 4})" if len(doms) > 4 else "")
            adm.add_row(
                a.workload if i == 0 else "",
                a.cluster_queue if i == 0 else "",
                p.name,
                str(p.count),
                flavors,
                usage,
                topo,
            )
    console.print(adm)
    if plan.preemptions:
        pre = Table(title=f"Preempted ({len(plan.preemptions)})", title_justify="left")
        for col in ("workload", "preemptor", "reason"):
            pre.add_column(col)
        for victim in plan.preemptions:
            pre.add_row(victim.workload, victim.preemptor, victim.reason)
        console.print(pre)
    pen = Table(title=f"Pending ({len(plan.pending)})", title_justify="left")
    pen.add_column("workload")
    pen.add_column("reason")
    for waiting in plan.pending:
        pen.add_row(waiting.workload, waiting.reason)
    console.print(pen)
    return buf.getvalue()


def write(plan: Plan, fmt: str, out: str | None, stream: TextIO | None = None) -> None:
    """Render first, then write: nothing reaches ``out`` if rendering fails."""
    text = render(plan, fmt)
    if out and out != "-":
        Path(out).write_text(text)
    else:
        (stream or sys.stdout).write(text)
