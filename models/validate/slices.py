"""Elastic workload slices (Kueue's ElasticJobsViaWorkloadSlices, on by default).

A running job scales up through a new Workload that names the running one
it replaces.  Admitting it finishes the old slice: no preemption, and the
old slice's quota and capacity pass to the new admission (``Context``'s
``replaced``).  The pods the old slice placed keep running, so the new
admission must keep them where they are: the same flavor per resource (Kueue
refuses any other), at least the old count per pod set and, on a topology,
every old domain with at least its old pods.  A plan that admits such a
slice beside its old one would count the running pods twice; one that
replaces a workload the link does not name would free quota nobody frees.
"""

from __future__ import annotations

from placewise.models.validate.context import Admitted, Context, Violation
from placewise.models.workload import PodSetAssignment, Workload


def check(ctx: Context) -> list[Violation]:
    """Every admission of, or naming, a workload slice."""
    out: list[Violation] = []
    for adm in ctx.admitted:
        old = ctx.snap.replaced_slice(adm.workload)
        named = adm.entry.replaces
        if named is None:
            # An old slice evicted, or replaced by another slice, is gone: this
            # one is then a workload of its own (as in Kueue).
            if (
                old is not None
                and old.key not in ctx.victims
                and old.key not in ctx.replaced
            ):
                out.append(
                    Violation(
                        "slice.not-replaced",
                        adm.key,
                        f"scale-up slice of running {old.key} admitted without "
                        f"replacing it (replaces: {old.key}): the job's running "
                        "pods would hold quota twice",
                    )
                )
            continue
        if old is None or named != old.key:
            want = f"its running slice {old.key}" if old else "no running slice"
            out.append(
                Violation(
                    "slice.replaces",
                    adm.key,
                    f"replaces {named}, but the workload names {want} in its "
                    "ClusterQueue and namespace",
                )
            )
            continue
        if old.key in ctx.victims:
            out.append(
                Violation(
                    "slice.replaces",
                    adm.key,
                    f"replaces {old.key}, which the plan also preempts",
                )
            )
            continue
        taker = ctx.replaced.get(old.key)
        if taker is not None and taker[1] is not adm:
            out.append(
                Violation(
                    "slice.replaces",
                    adm.key,
                    f"replaces {old.key}, which {taker[1].key} already replaces",
                )
            )
            continue
        out += _keeps_pods(adm, old)
    return out


def _keeps_pods(adm: Admitted, old: Workload) -> list[Violation]:
    """The old slice's pods stay: flavors, counts and topology domains."""
    assert old.admission is not None
    before = {p.name: p for p in old.admission.pod_set_assignments}
    out: list[Violation] = []
    for _, psa in adm.pairs():
        prev = before.get(psa.name)
        if prev is None:
            continue
        for r, flavor in sorted(prev.flavors.items()):
            now = psa.flavors.get(r)
            if now is not None and now != flavor:
                out.append(
                    Violation(
                        "slice.flavor",
                        adm.key,
                        f"pod set {psa.name}: {r} on flavor {now}, but the slice "
                        f"it replaces ({old.key}) runs it on {flavor}",
                    )
                )
        if psa.count < prev.count:
            out.append(
                Violation(
                    "slice.pods-moved",
                    adm.key,
                    f"pod set {psa.name}: {psa.count} pods, fewer than the "
                    f"{prev.count} its replaced slice {old.key} runs",
                )
            )
            continue
        out += _domains(adm, old, psa, prev)
    return out


def _domains(
    adm: Admitted, old: Workload, psa: PodSetAssignment, prev: PodSetAssignment
) -> list[Violation]:
    """Every domain of the old topology assignment keeps its pods."""
    was = prev.topology_assignment
    if was is None:
        return []
    now = psa.topology_assignment
    if now is None or now.levels != was.levels:
        return [
            Violation(
                "slice.pods-moved",
                adm.key,
                f"pod set {psa.name}: no topology assignment on the levels of "
                f"its replaced slice {old.key} ({', '.join(was.levels)})",
            )
        ]
    have = now.as_counts()
    short = [
        f"{'/'.join(values)} ({have.get(values, 0)} of {n})"
        for values, n in sorted(was.as_counts().items())
        if have.get(values, 0) < n
    ]
    if not short:
        return []
    return [
        Violation(
            "slice.pods-moved",
            adm.key,
            f"pod set {psa.name}: the pods its replaced slice {old.key} placed "
            f"would move; short in {', '.join(short)}",
        )
    ]
