"""Pod sets: the admission mirrors the workload's spec, as Kueue writes it.

Kueue's ``status.admission`` has one assignment per ``spec.podSets`` entry,
in order, with the admitted count and the quota it holds; the quota rules
trust ``resourceUsage``, so it must be exactly requests x count here.
"""

from __future__ import annotations

from placewise.models.validate.context import Admitted, Context, Violation, qty


def check(ctx: Context) -> list[Violation]:
    """Names and order, counts within [minCount, count], resourceUsage."""
    out: list[Violation] = []
    for adm in ctx.admitted:
        out += _names(adm)
        out += _counts(adm)
        out += _usage(ctx, adm)
    return out


def _names(adm: Admitted) -> list[Violation]:
    want = [ps.name for ps in adm.workload.pod_sets]
    got = [psa.name for psa in adm.entry.pod_set_assignments]
    if got == want:
        return []
    problems = []
    missing = [n for n in want if n not in got]
    extra = sorted({n for n in got if n not in want})
    dupes = sorted({n for n in got if got.count(n) > 1})
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    if extra:
        problems.append(f"unknown {', '.join(extra)}")
    if dupes:
        problems.append(f"repeated {', '.join(dupes)}")
    if not problems:
        problems.append(f"order {', '.join(got)} differs from spec")
    return [
        Violation(
            "podsets.names",
            adm.key,
            f"podSetAssignments must be exactly the spec pod sets "
            f"[{', '.join(want)}] in order: {'; '.join(problems)}",
        )
    ]


def _counts(adm: Admitted) -> list[Violation]:
    out = []
    for ps, psa in adm.pairs():
        low = ps.count if ps.min_count is None else ps.min_count
        if low <= psa.count <= ps.count:
            continue
        if psa.count > ps.count:
            why = f"above the spec count {ps.count}"
        elif ps.min_count is None:
            why = f"below the spec count {ps.count} and the pod set has no minCount"
        else:
            why = f"below minCount {ps.min_count}"
        out.append(
            Violation(
                "podsets.count",
                adm.key,
                f"pod set {ps.name} admitted with count {psa.count}, {why}",
            )
        )
    return out


def _usage(ctx: Context, adm: Admitted) -> list[Violation]:
    cq = adm.cluster_queue
    if cq is None:
        return []
    out = []
    for ps, psa in adm.pairs():
        want = ctx.expected_usage(cq, ps, psa.count)
        got = {r: v for r, v in psa.resource_usage.items() if v != 0}
        diffs = []
        for r in sorted(set(want) | set(got)):
            w, g = want.get(r, 0), got.get(r, 0)
            if w != g:
                diffs.append(f"{r} is {qty(r, g)}, expected {qty(r, w)}")
        if diffs:
            basis = f"per-pod requests x count {psa.count}"
            if ctx.covers(cq, "pods"):
                basis += " (plus pods, covered by the ClusterQueue)"
            out.append(
                Violation(
                    "podsets.resource-usage",
                    adm.key,
                    f"pod set {ps.name} resourceUsage must be {basis}: "
                    + "; ".join(diffs),
                )
            )
    return out
