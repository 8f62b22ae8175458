"""Moves: running workloads evicted and admitted again in the same plan.

A moved workload's new placement is its entry in ``admissions``; the
context (:class:`~placewise.models.validate.context.Context`) takes its old
placement out of the final state and checks the new one with every other
admission, so capacity, quota, flavors and topology need no rule here.
This family checks what only a move has:

``moves.not-running`` / ``moves.duplicate`` / ``moves.preempted`` /
``moves.no-admission``
    a move names a running workload once, is no preemption as well, and the
    plan admits it again;
``moves.cluster-queue``
    it stays in its ClusterQueue;
``moves.not-movable``
    the policy lets it move (the opt-in label, or the policy's priority and
    queue rules; never a workload the caller marked not preemptible);
``moves.hosts`` / ``moves.lost-work``
    ``from``/``to`` are its hosts before and after, ``lostGpuHours`` its GPUs
    times how long it has run (0 when checkpointed);
``moves.budget``
    the count and lost GPU-hours stay within the policy's budget;
``moves.unneeded``
    every move makes room, directly or through other moves, for a pending
    workload the plan admits: put it back where it was and some admission
    on a leaf it frees lacks room.  A move that lets nothing new in is never
    part of a plan.  Need is judged on room (the leaves it frees); a move
    that frees only quota (a flavor change) is no move any solver makes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from placewise.models.moves import (
    MoveRules,
    gpu_hours,
    hosts,
    lost_gpu_seconds,
    movable,
    running_hosts,
)
from placewise.models.validate.capacity import (
    LeafKey,
    admitted_leaves,
    leaf_base,
    running_leaves,
)
from placewise.models.validate.context import Context, Violation

Usage = dict[str, int]
LOST_TOLERANCE = 0.0005
"""``lostGpuHours`` is written with three decimals."""


def check(ctx: Context) -> list[Violation]:
    if not ctx.plan.moves:
        return []
    out = _structure(ctx)
    out += _each(ctx)
    out += _budget(ctx)
    out += _unneeded(ctx)
    return out


def _structure(ctx: Context) -> list[Violation]:
    out: list[Violation] = []
    running = {w.key for w in ctx.snap.running}
    preempted = {p.workload for p in ctx.plan.preemptions}
    admitted = Counter(a.workload for a in ctx.plan.admissions)
    moved = Counter(m.workload for m in ctx.plan.moves)
    for key in sorted(moved):
        if key not in running:
            what = "no such Workload" if key not in ctx.snap.workloads else "it"
            out.append(
                Violation(
                    "moves.not-running",
                    key,
                    f"moved but only a running workload can move, and {what} "
                    "is not running",
                )
            )
            continue
        if moved[key] > 1 or admitted[key] > 1:
            out.append(
                Violation(
                    "moves.duplicate",
                    key,
                    f"moved {moved[key]} time(s) and admitted {admitted[key]} "
                    "time(s); a move is listed once with one admission",
                )
            )
        if key in preempted:
            out.append(
                Violation(
                    "moves.preempted",
                    key,
                    "both moved and preempted; a moved workload is not a preemption",
                )
            )
        elif admitted[key] == 0:
            out.append(
                Violation(
                    "moves.no-admission",
                    key,
                    "moved but not in admissions: its new placement is missing",
                )
            )
    return out


def _each(ctx: Context) -> list[Violation]:
    out: list[Violation] = []
    rules = ctx.rules or MoveRules()
    new = {a.key: a for a in ctx.admitted if a.key in ctx.moved}
    for key, (w, move) in sorted(ctx.moved.items()):
        assert w.admission is not None
        adm = new[key]
        old_cq = w.admission.cluster_queue
        if adm.entry.cluster_queue != old_cq:
            out.append(
                Violation(
                    "moves.cluster-queue",
                    key,
                    f"runs in ClusterQueue {old_cq} but is admitted again to "
                    f"{adm.entry.cluster_queue}; a move stays in its queue",
                )
            )
        if not movable(w, rules):
            out.append(
                Violation(
                    "moves.not-movable",
                    key,
                    "moved but the policy does not let it move (no "
                    'placewise.io/movable: "true" label, no priority or queue '
                    "rule covering it, or marked not preemptible)",
                )
            )
        before, after = running_hosts(w), hosts(adm.entry.pod_set_assignments)
        if tuple(sorted(move.from_hosts)) != before or (
            tuple(sorted(move.to_hosts)) != after
        ):
            out.append(
                Violation(
                    "moves.hosts",
                    key,
                    f"from {list(move.from_hosts)} to {list(move.to_hosts)}, but it "
                    f"runs on {list(before)} and is admitted on {list(after)}",
                )
            )
        if ctx.rules is not None:
            lost = gpu_hours(lost_gpu_seconds(ctx.snap, w, rules.accelerators))
            if abs(lost - move.lost_gpu_hours) > LOST_TOLERANCE:
                out.append(
                    Violation(
                        "moves.lost-work",
                        key,
                        f"lostGpuHours {move.lost_gpu_hours} but moving it loses "
                        f"{lost} GPU-hours",
                    )
                )
    return out


def _budget(ctx: Context) -> list[Violation]:
    rules = ctx.rules
    if rules is None:
        return []
    out: list[Violation] = []
    count = len(ctx.plan.moves)
    limit = rules.count if rules.enabled else 0
    if limit is not None and count > limit:
        out.append(
            Violation(
                "moves.budget",
                "",
                f"{count} move(s), over the budget of {limit}",
            )
        )
    budget = rules.lost_budget_seconds
    if budget is not None:
        lost = sum(
            lost_gpu_seconds(ctx.snap, w, rules.accelerators)
            for w, _ in ctx.moved.values()
        )
        if lost > budget:
            out.append(
                Violation(
                    "moves.budget",
                    "",
                    f"the moves lose {gpu_hours(lost)} GPU-hours, over the budget "
                    f"of {rules.lost_gpu_hours}",
                )
            )
    return out


def _unneeded(ctx: Context) -> list[Violation]:
    """Moves not leading, through moves that need them, to a pending admission."""
    if not ctx.moved:
        return []
    placed = admitted_leaves(ctx)
    load: dict[LeafKey, Usage] = {}
    cap: dict[LeafKey, Usage] = {}
    on_leaf: dict[LeafKey, list[str]] = {}

    def slot(key: LeafKey) -> Usage:
        if key not in load:
            alloc, pods = leaf_base(ctx, key)
            cap[key], load[key] = alloc, dict(pods)
        return load[key]

    for w in ctx.remaining:
        for key, use in running_leaves(ctx, w).items():
            _add(slot(key), use)
    for key_w, leaves in placed.items():
        for key, use in leaves.items():
            _add(slot(key), use)
            on_leaf.setdefault(key, []).append(key_w)
    # needs[x]: the moves whose return would crowd admission x out.
    needs: dict[str, set[str]] = {}
    for key_m, (w, _) in ctx.moved.items():
        mine = placed.get(key_m, {})
        for leaf, back in running_leaves(ctx, w).items():
            slot(leaf)
            after = dict(load[leaf])
            _add(after, mine.get(leaf, {}), sign=-1)
            _add(after, back)
            for other in on_leaf.get(leaf, []):
                if other != key_m and _short(
                    placed[other][leaf], back, after, cap[leaf]
                ):
                    needs.setdefault(other, set()).add(key_m)
    useful: set[str] = set()
    frontier = [k for k in needs if k not in ctx.moved]
    while frontier:
        for m in needs.get(frontier.pop(), ()):
            if m not in useful:
                useful.add(m)
                frontier.append(m)
    return [
        Violation(
            "moves.unneeded",
            key,
            "moved, but with it back where it ran no workload the plan admits "
            "lacks room (directly or through other moves): the move lets "
            "nothing new in",
        )
        for key in sorted(ctx.moved)
        if key not in useful
    ]


def _short(
    uses: Mapping[str, int],
    back: Mapping[str, int],
    after: Mapping[str, int],
    cap: Mapping[str, int],
) -> bool:
    """A resource both use would be over allocatable on the leaf."""
    return any(
        v > 0 and uses.get(r, 0) > 0 and after.get(r, 0) > cap.get(r, 0)
        for r, v in back.items()
    )


def _add(acc: Usage, use: Mapping[str, int], sign: int = 1) -> None:
    for r, v in use.items():
        acc[r] = acc.get(r, 0) + sign * v
