"""The report: ``summary.md`` for people, ``runs.csv`` for scripts, PNG plots.

The Markdown leads with the headline table (GPUs each solver adds per
family against the proven limit), then lists every failed run with its
reason — a failure is a finding, so it is never left out — then the
per-family detail, the scale sweep, the trace and the simulation.  Numbers
over several seeds are medians; the CSV keeps every run.
"""

from __future__ import annotations

import csv
import itertools
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placewise.benchmarks.harness import fairplot
from placewise.benchmarks.harness.matrix import LIMIT, SCALE_FAMILIES, SOLVERS
from placewise.benchmarks.harness.plots import COLORS as COLORS
from placewise.benchmarks.harness.plots import (
    Cell,
    plot_family,
    plot_priority,
    plot_scale,
    plot_shares,
)
from placewise.benchmarks.harness.runner import RunResult
from placewise.solver.metrics import Metrics, compare_tiers

CSV_FIELDS = (
    "family",
    "instance",
    "seed",
    "solver",
    "ok",
    "error",
    "hosts",
    "pending",
    "status",
    "wall_s",
    "peak_mib",
    "admitted_workloads",
    "admitted_gpus",
    "net_gpus",
    "gpus_after",
    "bound",
    "bound_method",
    "gap_gpus",
    "gap_pct",
    "tier_demand",
    "gpu_alloc_pct",
    "stranded_gpus",
    "topology_gangs",
    "gangs_in_domain",
    "domains_per_gang",
    "preemptions",
    "preempted_gpus",
    "partial_gangs",
    "partial_gpus",
    "n_violations",
    "objective",
    "solver_bound",
    "jain",
    "share_max_min",
    "shares",
)


@dataclass(slots=True)
class ReportInputs:
    """What the report is written from."""

    results: list[RunResult]
    command: str
    seconds: float
    settings: Mapping[str, Any]
    trace: Any = None
    """A :class:`~placewise.benchmarks.harness.trace.TraceResult` (None: skipped)."""
    simulation: Any = None
    """A :class:`placewise.benchmarks.harness.simulate.SimulationReport`, or None."""
    notes: list[str] = field(default_factory=list)


# -- lookups -------------------------------------------------------------------


def _bounds(results: Iterable[RunResult]) -> dict[tuple[str, int], RunResult]:
    return {(r.instance, r.seed): r for r in results if r.solver == LIMIT and r.ok}


def gap(result: RunResult, bounds: Mapping[tuple[str, int], RunResult]) -> float | None:
    """GPUs between the plan and the LP bound on GPUs after any plan."""
    b = bounds.get((result.instance, result.seed))
    if b is None or b.bound is None or result.metrics is None:
        return None
    return b.bound - result.metrics.gpus_after


def limit_net(b: RunResult) -> float | None:
    """The bound expressed as GPUs a plan could add (bound minus running)."""
    if b.bound is None or b.running_gpus is None:
        return None
    return b.bound - b.running_gpus


def _median(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _fmt(x: float | None, digits: int = 0) -> str:
    if x is None:
        return "-"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def tiers_text(tiers: Sequence[tuple[int, int]]) -> str:
    return " / ".join(f"{v:+d}@{p}" for p, v in tiers)


# -- CSV -----------------------------------------------------------------------


def write_csv(path: Path, results: Sequence[RunResult]) -> None:
    bounds = _bounds(results)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        order = sorted(results, key=lambda r: (r.family, r.instance, r.seed, r.solver))
        for r in order:
            m = r.metrics
            g = gap(r, bounds)
            b = bounds.get((r.instance, r.seed))
            row: dict[str, Any] = {
                "family": r.family,
                "instance": r.instance,
                "seed": r.seed,
                "solver": r.solver,
                "ok": r.ok,
                "error": r.error or "",
                "hosts": r.hosts,
                "pending": r.pending,
                "status": r.status,
                "wall_s": round(r.wall_s, 3),
                "peak_mib": round(r.peak_mib, 1),
                "bound": r.bound if r.solver == LIMIT else (b.bound if b else ""),
                "bound_method": r.bound_method or (b.bound_method if b else ""),
                "n_violations": r.n_violations,
                "objective": r.objective if r.objective is not None else "",
                "solver_bound": r.solver_bound if r.solver_bound is not None else "",
                "gap_gpus": g if g is not None else "",
                "gap_pct": (
                    round(100 * g / b.bound, 3)
                    if g is not None and b and b.bound
                    else ""
                ),
            }
            if m is not None:
                row.update(
                    {
                        "admitted_workloads": m.admitted_workloads,
                        "admitted_gpus": m.admitted_gpus,
                        "net_gpus": m.net_gpus,
                        "gpus_after": m.gpus_after,
                        "tier_demand": tiers_text(m.tier_demand),
                        "gpu_alloc_pct": round(m.gpu_alloc_pct, 3),
                        "stranded_gpus": m.stranded_gpus,
                        "topology_gangs": m.topology_gangs,
                        "gangs_in_domain": m.gangs_in_domain,
                        "domains_per_gang": (
                            round(m.domains_per_gang, 3)
                            if m.domains_per_gang is not None
                            else ""
                        ),
                        "preemptions": m.preemptions,
                        "preempted_gpus": m.preempted_gpus,
                        "partial_gangs": m.partial_gangs,
                        "partial_gpus": m.partial_gpus,
                    }
                )
                if m.fairness is not None:
                    row["jain"] = round(m.fairness.jain, 4)
                    row["share_max_min"] = round(m.fairness.max_min, 3)
                    row["shares"] = fairplot.shares_text(m.fairness)
            writer.writerow(row)


# -- aggregation ---------------------------------------------------------------


METRIC_GETTERS: dict[str, Callable[[Metrics], float | None]] = {
    "admitted_workloads": lambda m: m.admitted_workloads,
    "admitted_gpus": lambda m: m.admitted_gpus,
    "net_gpus": lambda m: m.net_gpus,
    "gpus_after": lambda m: m.gpus_after,
    "gpu_alloc_pct": lambda m: m.gpu_alloc_pct,
    "stranded_gpus": lambda m: m.stranded_gpus,
    "in_domain_pct": lambda m: (
        100.0 * m.gangs_in_domain / m.topology_gangs if m.topology_gangs else None
    ),
    "domains_per_gang": lambda m: m.domains_per_gang,
    "preemptions": lambda m: m.preemptions,
    "preempted_gpus": lambda m: m.preempted_gpus,
    "partial_gangs": lambda m: m.partial_gangs,
    "partial_gpus": lambda m: m.partial_gpus,
    "jain": lambda m: m.fairness.jain if m.fairness else None,
}


def aggregate(results: Sequence[RunResult]) -> dict[str, dict[str, Cell]]:
    """family -> solver -> medians (failed runs counted, not averaged in)."""
    bounds = _bounds(results)
    raw: dict[str, dict[str, list[RunResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        raw[r.family][r.solver].append(r)
    out: dict[str, dict[str, Cell]] = {}
    for family, by_solver in raw.items():
        out[family] = {}
        for solver, runs in by_solver.items():
            cell = Cell(runs=len(runs), failed=sum(not r.ok for r in runs))
            good = [r for r in runs if r.ok]
            cell.values["wall_s"] = _median([r.wall_s for r in good])
            cell.values["peak_mib"] = _median([r.peak_mib for r in good])
            if solver == LIMIT:
                cell.values["bound"] = _median([r.bound for r in good])
                cell.values["limit_net"] = _median([limit_net(r) for r in good])
            else:
                scored = [r for r in good if r.metrics is not None]
                for name, get in METRIC_GETTERS.items():
                    cell.values[name] = _median(
                        [get(r.metrics) for r in scored if r.metrics is not None]
                    )
                cell.values["gap_gpus"] = _median([gap(r, bounds) for r in scored])
                cell.tiers = {
                    r.seed: r.metrics.tier_demand for r in scored if r.metrics
                }
            out[family][solver] = cell
    return out


# -- Markdown ------------------------------------------------------------------


def _cell_text(cell: Cell | None, key: str, digits: int = 0) -> str:
    if cell is None:
        return "-"
    if cell.failed and cell.failed == cell.runs:
        return "FAILED"
    text = _fmt(cell.values.get(key), digits)
    return f"{text} ({cell.failed} failed)" if cell.failed else text


def headline_table(
    agg: Mapping[str, Mapping[str, Cell]],
    families: Sequence[str],
    solvers: Sequence[str],
    hosts: Mapping[str, int],
    pending: Mapping[str, int],
) -> list[str]:
    """GPUs added per family and solver, against the limit."""
    head = ["family", "hosts", "pending", *solvers, "limit", "by priority tiers"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for family in families:
        if family not in agg:
            continue
        row = [family, _fmt(hosts.get(family)), _fmt(pending.get(family))]
        cells = agg[family]
        if _gpu_free(cells):  # a CPU-only family: count admitted workloads
            for s in solvers:
                text = _cell_text(cells.get(s), "admitted_workloads")
                row.append(text if text in ("-", "FAILED") else f"{text} wl")
            row.append("-")
        else:
            for s in solvers:
                row.append(_cell_text(cells.get(s), "net_gpus"))
            row.append(_cell_text(cells.get(LIMIT), "limit_net"))
        row.append(tier_order(agg[family], solvers) or "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _gpu_free(cells: Mapping[str, Cell]) -> bool:
    """No plan and no bound involves a GPU (e.g. Kueue's CPU-only perf shape)."""
    values = [c.values.get("admitted_gpus") for s, c in cells.items() if s != LIMIT]
    lim = cells.get(LIMIT)
    bound = lim.values.get("bound") if lim is not None else None
    return not any(values) and not bound


def tier_order(cells: Mapping[str, Cell], solvers: Sequence[str]) -> str:
    """Solvers by their tier-demand vectors, best first (``=`` for ties).

    Only solvers whose every seed ran are ranked, seed by seed: a solver is
    ahead when its vector is lexicographically larger on a majority of seeds.
    """
    runs = {
        s: cells[s].tiers
        for s in solvers
        if s in cells and cells[s].tiers and not cells[s].failed
    }
    if len(runs) < 2:
        return ""

    def wins(a: str, b: str) -> int:
        score = sum(
            compare_tiers(runs[a][seed], runs[b][seed])
            for seed in runs[a].keys() & runs[b].keys()
        )
        return (score > 0) - (score < 0)

    names = sorted(runs, key=lambda s: sum(wins(s, o) for o in runs), reverse=True)
    out = names[0]
    for prev, cur in itertools.pairwise(names):
        out += (" = " if wins(prev, cur) == 0 else " > ") + cur
    return out


DETAIL_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("admitted_workloads", "admitted wl", 0),
    ("admitted_gpus", "admitted GPUs", 0),
    ("net_gpus", "net GPUs", 0),
    ("gpu_alloc_pct", "GPU alloc %", 1),
    ("stranded_gpus", "stranded GPUs", 0),
    ("in_domain_pct", "gangs in domain %", 0),
    ("domains_per_gang", "domains/gang", 2),
    ("preemptions", "preemptions", 0),
    ("partial_gangs", "partial gangs", 0),
    ("partial_gpus", "GPUs in partial gangs", 0),
    ("jain", "Jain (fair shares)", 3),
    ("gap_gpus", "gap to limit (GPUs)", 0),
    ("wall_s", "wall s", 2),
    ("peak_mib", "peak MiB", 0),
)


def family_table(cells: Mapping[str, Cell], solvers: Sequence[str]) -> list[str]:
    head = ["solver", *[c[1] for c in DETAIL_COLUMNS], "tier demand (GPUs@priority)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in solvers:
        cell = cells.get(s)
        if cell is None:
            continue
        row = [s] + [_cell_text(cell, key, d) for key, _, d in DETAIL_COLUMNS]
        row.append(
            tiers_text(next(iter(cell.tiers.values())))
            if len(cell.tiers) == 1
            else (f"{len(cell.tiers)} seeds, see runs.csv" if cell.tiers else "-")
        )
        lines.append("| " + " | ".join(row) + " |")
    lim = cells.get(LIMIT)
    if lim is not None:
        lines.append(
            f"\nLimit: at most {_cell_text(lim, 'bound')} GPUs running after any "
            f"plan, i.e. {_cell_text(lim, 'limit_net')} added "
            f"(bound computed in {_cell_text(lim, 'wall_s', 2)} s)."
        )
    return lines


def write_markdown(path: Path, inputs: ReportInputs, plots: Mapping[str, str]) -> None:
    results = inputs.results
    agg = aggregate(results)
    solvers = [s for s in SOLVERS if any(r.solver == s for r in results)]
    families = sorted(agg, key=lambda f: (_first(results, f, "hosts"), f))
    hosts = {f: _first(results, f, "hosts") for f in families}
    pending = {f: _first(results, f, "pending") for f in families}
    seeds = sorted({r.seed for r in results})
    out: list[str] = ["# placewise bench", ""]
    out.append(f"Command: `{inputs.command}`  ")
    out.append(
        f"Runtime: {inputs.seconds:.0f} s; seeds: {', '.join(map(str, seeds))}; "
        + "; ".join(f"{k}: {v}" for k, v in inputs.settings.items())
    )
    out.append("")
    out.append("## Headline: GPUs added per plan (admitted - preempted)")
    out.append("")
    out.append(
        "Median over seeds. `limit` is the LP upper bound on GPUs running after "
        "any valid plan minus the GPUs running before it. CPU-only families "
        "(kueue-tas-perf) count admitted workloads (`wl`) instead. The last "
        "column ranks the plans by their priority-tier vectors (GPUs per "
        "priority, highest first, compared lexicographically): what the "
        "optimizer maximises first, so fewer GPUs can be the better plan."
    )
    out.append("")
    out += headline_table(agg, families, solvers, hosts, pending)
    out.append("")
    failed = [r for r in results if not r.ok]
    out.append(f"## Failed runs ({len(failed)})")
    out.append("")
    if not failed:
        out.append("None: every plan passed the validator.")
    for r in sorted(failed, key=lambda r: (r.family, r.seed, r.solver)):
        out.append(f"- **{r.instance}** seed {r.seed}, `{r.solver}`: {r.error}")
        for v in r.violations[1:4]:
            out.append(f"  - {v}")
    out.append("")
    out.append("## Per family")
    for family in families:
        out.append("")
        out.append(
            f"### {family} ({hosts[family]:,} hosts, {pending[family]:,} pending)"
        )
        out.append("")
        out += family_table(agg[family], solvers)
        rank = tier_order(agg[family], solvers)
        if rank:
            out += ["", f"By priority tiers (lexicographic, best first): {rank}"]
        if family in plots:
            out += ["", f"![{family}]({plots[family]})"]
        if f"{family}:priority" in plots:
            out += ["", f"![{family} by priority]({plots[f'{family}:priority']})"]
        if fairplot.has_fairness(results, family):
            out += ["", "Fair sharing (weighted shares after each plan):", ""]
            out += fairplot.fair_table(results, family)
            if f"{family}-shares" in plots:
                out += ["", f"![{family} shares]({plots[f'{family}-shares']})"]
    scale = [f for f in SCALE_FAMILIES if f in agg]
    if scale:
        out += ["", "## Scale sweep: wall time (s) against hosts", ""]
        head = ["family", "hosts", "pending", *solvers, LIMIT]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for f in scale:
            row = [f, _fmt(hosts[f]), _fmt(pending[f])]
            row += [_cell_text(agg[f].get(s), "wall_s", 2) for s in [*solvers, LIMIT]]
            out.append("| " + " | ".join(row) + " |")
        if "scale" in plots:
            out += ["", f"![wall time vs hosts]({plots['scale']})"]
    if inputs.trace is not None:
        out += ["", "## Alibaba GPU trace (FGD protocol)", ""]
        out += inputs.trace.markdown()
        if "trace" in plots:
            out += ["", f"![GPU allocation vs arrived load]({plots['trace']})"]
    if inputs.simulation is not None:
        out += ["", "## Time simulation", ""]
        out += inputs.simulation.markdown()
        for key in ("sim-util", "sim-delay"):
            if key in plots:
                out += ["", f"![{key}]({plots[key]})"]
    if inputs.notes:
        out += ["", "## Notes", ""]
        out += [f"- {n}" for n in inputs.notes]
    out += ["", "## Metric definitions", "", *DEFINITIONS]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _first(results: Sequence[RunResult], family: str, attr: str) -> int:
    for r in results:
        if r.family == family and getattr(r, attr):
            return int(getattr(r, attr))
    return 0


DEFINITIONS = [
    "- **net GPUs**: GPUs of the plan's admissions minus GPUs of the running "
    "workloads it preempts (GPUs = `nvidia.com/gpu`, `amd.com/gpu`, "
    "`google.com/tpu`).",
    "- **limit**: `placewise bound` (LP relaxation of any validator-feasible "
    "plan, or the capacity/quota ceiling when smaller) minus GPUs running "
    "before; **gap to limit** is that bound minus the plan's GPUs running after.",
    "- **tier demand**: per priority value (highest first) GPUs admitted minus "
    "GPUs preempted; solvers are ranked by comparing these vectors "
    "lexicographically, which is the optimizer's first objective.",
    "- **GPU alloc %**: GPUs bound after the plan (plain pods, running "
    "workloads that stay, admissions, and pods of partial gangs) over the "
    "allocatable GPUs of Ready, schedulable nodes.",
    "- **stranded GPUs**: free GPUs on usable nodes that fit no pod shape of "
    "the instance's pending GPU workloads (every resource, `pods`, selector, "
    "affinity and taints checked).",
    "- **gangs in domain %**: admitted multi-pod pod sets with a required or "
    "preferred level that sit in one domain of it; **domains/gang**: mean "
    "domains an admitted multi-pod TAS pod set spans at that level (or the "
    "level above hosts when it asks for none).",
    "- **partial gangs** (kube-default only): quota-admitted workloads whose "
    "pods only partly bound; the plan leaves them pending, their bound pods "
    "still hold **GPUs in partial gangs**.",
    "- **Jain (fair shares)**, fair-sharing families only: Jain's index over "
    "the competing queues' weighted dominant resource shares after the plan "
    "(1 = all equal); the table under the family lists each plan's shares.",
    "- **wall s**: the solve call alone; **peak MiB**: peak RSS of the run's "
    "own process (getrusage), interpreter and libraries (~80 MiB) included.",
    "- Every plan is checked by `placewise.models.validate`; a plan with a "
    "violation is a failed run and listed above with its first violations.",
]


def write_report(out_dir: Path, inputs: ReportInputs) -> dict[str, Path]:
    """Write summary.md, runs.csv and the plots; returns what was written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(exist_ok=True)
    results = inputs.results
    agg = aggregate(results)
    solvers = [s for s in SOLVERS if any(r.solver == s for r in results)]
    hosts = {f: _first(results, f, "hosts") for f in agg}
    plots: dict[str, str] = {}
    written: dict[str, Path] = {}
    for family, cells in agg.items():
        p = plots_dir / f"{family}.png"
        plot_family(p, family, cells, solvers)
        plots[family] = f"plots/{p.name}"
        written[f"plot:{family}"] = p
        p = plots_dir / f"{family}-priority.png"
        if plot_priority(p, family, cells, solvers, tier_order(cells, solvers)):
            plots[f"{family}:priority"] = f"plots/{p.name}"
            written[f"plot:{family}:priority"] = p
        p = plots_dir / f"{family}-shares.png"
        if plot_shares(p, results, family, COLORS):
            plots[f"{family}-shares"] = f"plots/{p.name}"
            written[f"plot:{family}-shares"] = p
    p = plots_dir / "scale.png"
    if plot_scale(p, agg, hosts, solvers):
        plots["scale"] = "plots/scale.png"
        written["plot:scale"] = p
    if inputs.trace is not None:
        for key, fig in inputs.trace.plots(plots_dir).items():
            plots[key] = f"plots/{fig.name}"
            written[f"plot:{key}"] = fig
    if inputs.simulation is not None:
        for key, fig in inputs.simulation.plots(plots_dir).items():
            plots[key] = f"plots/{fig.name}"
            written[f"plot:{key}"] = fig
    csv_path = out_dir / "runs.csv"
    write_csv(csv_path, results)
    written["csv"] = csv_path
    md = out_dir / "summary.md"
    write_markdown(md, inputs, plots)
    written["markdown"] = md
    return written
