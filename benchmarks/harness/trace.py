"""The Alibaba GPU trace (openb, FGD protocol) inside the bench report.

The replay itself — Best-Fit and FGD reproduced against the published
simulator, placewise's windowed policy, the LP bound — belongs to
:mod:`benchmarks.fgd`; the bench only calls its entry point
(``benchmarks.fgd.cli.main(argv)``) in a worker process, keeps what it writes
under ``<out>/trace/``, and draws our allocation curve over the published
Best-Fit and FGD curves (``shared/data/fgd-sim-expected-results``).  When the
entry point is missing from the build or fails, the report says so and
still shows the published reference.
"""

from __future__ import annotations

import contextlib
import csv
import io
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REFERENCE_POLICIES = {"bestfit": "05-BestFit", "fgd": "06-FGD"}
"""Published curves drawn under ours (the best greedy and FGD), by the
replay's policy name and the simulator's label."""
QUICK_SEEDS = (42,)
FULL_SEEDS = tuple(range(42, 52))
"""The simulator's seeds (performance-anchors §1.2)."""

Curve = dict[int, float]
"""arrived GPU demand (% of capacity) -> GPU allocation (% of capacity)."""


def _mean(curves: list[Curve]) -> Curve:
    keys = set.intersection(*(set(c) for c in curves))
    return {k: statistics.fmean(c[k] for c in curves) for k in sorted(keys)}


def published_curves(trace: str) -> dict[str, Curve]:
    """The published Best-Fit and FGD curves of one trace, mean over seeds."""
    from benchmarks.fgd.published import load_published

    out: dict[str, Curve] = {}
    for policy, label in REFERENCE_POLICIES.items():
        try:
            per_seed = load_published(policy, trace)
        except OSError:
            return {}
        if per_seed:
            out[label] = _mean(list(per_seed.values()))
    return out


def read_curves(directory: Path) -> dict[str, Curve]:
    """Curves in any CSV the replay wrote in the published layout.

    A row needs a policy column (``sc_policy`` or ``policy``) and columns
    named by arrived percentage (``0`` .. ``130``); several seeds of one
    policy are averaged.
    """
    found: dict[str, list[Curve]] = defaultdict(list)
    for path in sorted(directory.rglob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            names = reader.fieldnames or []
            key = "sc_policy" if "sc_policy" in names else (
                "policy" if "policy" in names else None
            )
            if key is None or "100" not in names:
                continue
            for row in reader:
                try:
                    curve = {
                        int(k): float(v) for k, v in row.items()
                        if k is not None and k.isdigit() and v not in (None, "")
                    }
                except ValueError:
                    continue
                if curve:
                    found[str(row[key])].append(curve)
    return {policy: _mean(curves) for policy, curves in found.items()}


@dataclass(slots=True)
class TraceResult:
    trace: str
    ok: bool = True
    available: bool = True
    error: str | None = None
    seconds: float = 0.0
    out_dir: str = ""
    argv: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    """Files the replay wrote, relative to the report directory."""
    curves: dict[str, Curve] = field(default_factory=dict)
    published: dict[str, Curve] = field(default_factory=dict)
    log_tail: list[str] = field(default_factory=list)

    def markdown(self) -> list[str]:
        out: list[str] = []
        cmd = "python -m benchmarks.fgd.cli " + " ".join(self.argv)
        if not self.available:
            out.append(f"Not run: {self.error}.")
        elif not self.ok:
            out.append(f"**Failed** after {self.seconds:.0f} s (`{cmd}`): {self.error}")
        else:
            out.append(f"`{cmd}` — {self.seconds:.0f} s.")
        out.append("")
        rows = [(p, c, "published") for p, c in sorted(self.published.items())]
        rows += [(p, c, "this run") for p, c in sorted(self.curves.items())]
        if rows:
            out += [
                f"GPU allocation (% of capacity) on the `{self.trace}` trace when "
                "arrived GPU demand reaches 100 % and 130 % of capacity:",
                "",
                "| policy | source | at 100 % | at 130 % |",
                "|---|---|---|---|",
            ]
            for policy, curve, source in rows:
                out.append(
                    f"| {policy} | {source} | {_at(curve, 100)} | {_at(curve, 130)} |"
                )
        images = [a for a in self.artifacts if a.endswith(".png")]
        for a in images:
            out += ["", f"![{Path(a).stem}]({a})"]
        others = [a for a in self.artifacts if not a.endswith(".png")]
        if others:
            links = ", ".join(f"[{Path(a).name}]({a})" for a in others)
            out += ["", f"Replay outputs: {links}"]
        if self.log_tail:
            out += ["", "```", *self.log_tail, "```"]
        return out

    def plots(self, directory: Path) -> dict[str, Path]:
        if not self.published and not self.curves:
            return {}
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        styles = {"05-BestFit": "#4c72b0", "06-FGD": "#55a868"}
        for policy in REFERENCE_POLICIES.values():
            curve = self.published.get(policy)
            if curve:
                ax.plot(list(curve), list(curve.values()), linestyle="--",
                        color=styles[policy], label=f"{policy} (published)")
        for i, (policy, curve) in enumerate(sorted(self.curves.items())):
            ax.plot(list(curve), list(curve.values()), linewidth=1.6,
                    color=f"C{3 + i}", label=f"{policy} (this run)")
        ax.set_xlabel("arrived GPU demand (% of capacity)")
        ax.set_ylabel("GPU allocation (% of capacity)")
        ax.set_title(f"openb {self.trace} trace, FGD protocol")
        ax.set_xlim(60, 131)
        ax.set_ylim(55, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = directory / "trace-allocation.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return {"trace": path}


def _at(curve: Mapping[int, float], k: int) -> str:
    return f"{curve[k]:.2f}" if k in curve else "-"


@dataclass(frozen=True, slots=True)
class TraceJob:
    """The trace replay as a pool job (its own process, like every run)."""

    out_dir: str
    quick: bool
    trace: str = "default"

    @property
    def label(self) -> str:
        return f"trace {self.trace}"

    def argv(self) -> list[str]:
        seeds = QUICK_SEEDS if self.quick else FULL_SEEDS
        return [
            "--trace", self.trace,
            "--seeds", ",".join(map(str, seeds)),
            "--out", self.out_dir,
        ]

    def failed(self, why: str) -> TraceResult:
        return TraceResult(
            self.trace, ok=False, error=why, out_dir=self.out_dir, argv=self.argv(),
            published=published_curves(self.trace),
        )

    def execute(self) -> TraceResult:
        result = TraceResult(
            self.trace, out_dir=self.out_dir, argv=self.argv(),
            published=published_curves(self.trace),
        )
        try:
            from benchmarks.fgd import cli  # type: ignore[attr-defined, unused-ignore]
        except ImportError as exc:
            result.ok = result.available = False
            result.error = f"the trace replay entry point is not in this build ({exc})"
            return result
        out = Path(self.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        log = io.StringIO()
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                code = cli.main(self.argv())
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # reported, never dropped
            code = 1
            log.write(f"{type(exc).__name__}: {exc}\n")
        result.seconds = time.perf_counter() - start
        (out / "replay.log").write_text(log.getvalue(), encoding="utf-8")
        result.log_tail = log.getvalue().strip().splitlines()[-15:]
        if code not in (0, None):
            result.ok = False
            result.error = f"exit code {code} (see trace/replay.log)"
        report_dir = out.parent
        result.artifacts = sorted(
            str(p.relative_to(report_dir)) for p in out.rglob("*")
            if p.is_file() and p.suffix in (".png", ".csv", ".md", ".json")
        )
        result.curves = read_curves(out)
        return result
