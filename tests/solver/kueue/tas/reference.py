"""A deliberately naive, line-by-line port of Kueue's placement algorithm.

Mutable domain objects, recursive sums and full sorts, exactly as
``tas_flavor_snapshot.go`` does it. The property tests compare the
vectorised placer against it on random trees, so every shortcut taken for
speed (sort-free level choice, prefix selection, cumulative-sum walks,
skipped empty domains, the fit-count cache) must give identical answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placewise.solver.kueue.tas.request import Params
from placewise.solver.kueue.tas.tree import FlavorTree

INT32_MAX = 2**31 - 1


@dataclass(eq=False)
class Dom:
    values: tuple[str, ...]
    parent: Dom | None = None
    children: list[Dom] = field(default_factory=list)
    pc: int = 0
    pcwl: int = 0
    sc: int = 0
    scwl: int = 0
    lc: int = 0


def count_in(free: Mapping[str, int], req: Mapping[str, int]) -> int:
    out = INT32_MAX
    for r, v in req.items():
        if v > 0:
            out = min(out, max(0, min(free.get(r, 0) // v, INT32_MAX)))
    return out


def place(
    tree: FlavorTree,
    free: list[dict[str, int]],
    usable: list[bool],
    workers: Mapping[str, int],
    leader: Mapping[str, int] | None,
    p: Params,
) -> tuple[list[tuple[tuple[str, ...], int]], list[tuple[tuple[str, ...], int]]] | None:
    """(worker leaves, leader leaves) as (full path, count), or None on failure.

    ``workers``/``leader`` include ``pods: 1``.
    """
    depth = tree.depth
    levels: list[dict[tuple[str, ...], Dom]] = [{} for _ in range(depth)]
    for path in tree.leaf_paths:
        for lvl in range(depth):
            key = path[: lvl + 1]
            if key not in levels[lvl]:
                dom = Dom(key)
                levels[lvl][key] = dom
                if lvl:
                    dom.parent = levels[lvl - 1][path[:lvl]]
                    dom.parent.children.append(dom)
    lfc = p.unconstrained
    bestfit = not lfc
    ss = p.slice_size

    # Phase 1.
    for i, path in enumerate(tree.leaf_paths):
        leaf = levels[-1][path]
        if not usable[i]:
            continue
        rem = dict(free[i])
        leaf.pc = count_in(rem, workers)
        if leader is not None and count_in(rem, leader) > 0:
            leaf.lc = 1
            for r, v in leader.items():
                rem[r] = rem.get(r, 0) - v
        leaf.pcwl = count_in(rem, workers)

    def fill(d: Dom, lvl: int) -> None:
        if not d.children:
            if lvl == p.slice_level:
                d.sc, d.scwl = d.pc // ss, d.pcwl // ss
            return
        pods = slices = 0
        contributor = False
        min_pod_diff = min_slice_diff = INT32_MAX
        inner = p.inner_sizes.get(lvl + 1)
        for c in d.children:
            fill(c, lvl + 1)
            cpc, cpcwl = c.pc, c.pcwl
            if inner:
                cpc, cpcwl = cpc // inner * inner, cpcwl // inner * inner
            pods += cpc
            slices += c.sc
            if leader is None or c.lc > 0:
                contributor = True
                min_pod_diff = min(min_pod_diff, cpc - cpcwl)
                min_slice_diff = min(min_slice_diff, c.sc - c.scwl)
            d.lc = max(d.lc, c.lc)
        d.pc = pods
        scwl = 0
        if contributor:
            d.pcwl = pods - min_pod_diff
            scwl = slices - min_slice_diff
        if lvl == p.slice_level:
            slices, scwl = d.pc // ss, d.pcwl // ss
        d.sc, d.scwl = slices, scwl

    for root in levels[0].values():
        fill(root, 0)

    def sorted_plain(ds: list[Dom]) -> list[Dom]:
        return sorted(ds, key=lambda d: (d.sc if lfc else -d.sc, d.pc, d.values))

    def sorted_leader(ds: list[Dom]) -> list[Dom]:
        return sorted(
            ds, key=lambda d: (-d.lc, d.scwl if lfc else -d.scwl, d.pcwl, d.values)
        )

    def best_by(ds: list[Dom], needed: int, cnt: str, leaders: int) -> Dom:
        best, best_count, found = ds[0], INT32_MAX, False
        for d in ds:
            if d.lc < leaders:
                continue
            c = getattr(d, cnt)
            if c >= needed and c < best_count:
                best, best_count, found = d, c, True
        return best if found else ds[0]

    def best_slices(ds: list[Dom], needed: int, leaders: int) -> Dom:
        return best_by(ds, needed, "scwl" if leaders > 0 else "sc", leaders)

    def best_pods(ds: list[Dom], needed: int, leaders: int) -> Dom:
        return best_by(ds, needed, "pcwl" if leaders > 0 else "pc", leaders)

    def prioritize(
        ds: list[Dom], count: int, leaders: int, sz: int, sl: bool
    ) -> list[Dom]:
        if leaders == 0 or len(ds) < 2:
            return ds
        required = count // sz if sl else count
        available = sum(d.sc if sl else d.pc for d in ds)
        for i, d in enumerate(ds):
            if d.lc < leaders:
                continue
            penalty = (d.sc - d.scwl) if sl else (d.pc - d.pcwl)
            if available - penalty < required:
                continue
            return [d, *ds[:i], *ds[i + 1 :]]
        return ds

    def update(
        ds: list[Dom], count: int, leaders: int, sz: int, sl: bool
    ) -> list[Dom] | None:
        ds = prioritize(ds, count, leaders, sz, sl)
        result: list[Dom] = []
        remaining = count // sz if sl else count
        rem_leaders = leaders
        for i, dom in enumerate(ds):
            if rem_leaders > 0:
                wl_f, pr_f = ("scwl", "sc") if sl else ("pcwl", "pc")
                unit = sz if sl else 1
                d = dom
                if bestfit and getattr(d, wl_f) >= remaining and d.lc >= rem_leaders:
                    if sl:
                        d = best_slices(ds[i:], remaining, rem_leaders)
                    else:
                        d = best_pods(ds[i:], remaining, rem_leaders)
                if getattr(d, wl_f) >= remaining and d.lc >= rem_leaders:
                    setattr(d, pr_f, remaining)
                    d.lc = rem_leaders
                    d.pc = remaining * unit
                    result.append(d)
                    return result
                if getattr(d, wl_f) > remaining:
                    setattr(d, wl_f, remaining)
                if d.lc > rem_leaders:
                    d.lc = rem_leaders
                w = getattr(d, wl_f)
                setattr(d, pr_f, w)
                d.pc = w * unit
                rem_leaders -= d.lc
                remaining -= w
                result.append(d)
                continue
            if sl:
                if bestfit and dom.sc >= remaining:
                    dom = best_slices(ds[i:], remaining, 0)
                dom.lc = 0
                if dom.sc >= remaining:
                    dom.pc, dom.sc = remaining * sz, remaining
                    result.append(dom)
                    return result
                dom.pc = dom.sc * sz
                remaining -= dom.sc
                result.append(dom)
                continue
            if bestfit and dom.pc >= remaining:
                dom = best_pods(ds[i:], remaining, 0)
            dom.lc = 0
            if dom.pc >= remaining:
                dom.pc = remaining
                result.append(dom)
                return result
            remaining -= dom.pc
            result.append(dom)
        return None

    def find_level(lvl: int) -> tuple[int, list[Dom]] | None:
        ds = list(levels[lvl].values())
        if not ds:
            return None
        srt = sorted_leader(ds)
        top = srt[0]
        slices = p.count // ss
        if bestfit and top.scwl >= slices and top.lc >= p.leader_count:
            top = best_slices(srt, slices, p.leader_count)
        if lfc:
            for cand in srt:
                cap = cand.sc
                if p.leader_count > 0:
                    if cand.lc < p.leader_count:
                        continue
                    cap = cand.scwl
                if cap >= slices:
                    return lvl, [cand]
            if p.required:
                return None
        if top.scwl < slices or top.lc < p.leader_count:
            if p.required:
                return None
            if lvl > 0 and not p.unconstrained:
                return find_level(lvl - 1)
            results: list[Dom] = []
            remaining, rem_leaders = slices, p.leader_count
            srt = prioritize(srt, p.count, p.leader_count, ss, True)
            idx = 0
            while rem_leaders > 0 and idx < len(srt) and srt[idx].lc > 0:
                d = srt[idx]
                if bestfit and d.scwl >= remaining:
                    d = best_slices(srt[idx:], remaining, rem_leaders)
                results.append(d)
                rem_leaders -= d.lc
                remaining -= d.scwl
                idx += 1
            if rem_leaders > 0:
                return None
            rest = sorted_plain(srt[idx:])
            j = 0
            while remaining > 0 and j < len(rest):
                d = rest[j]
                if bestfit and d.sc >= remaining:
                    d = best_slices(rest[j:], remaining, 0)
                results.append(d)
                remaining -= d.sc
                j += 1
            if remaining > 0:
                return None
            return lvl, results
        return lvl, [top]

    found = find_level(p.requested_level)
    if found is None:
        return None
    lvl, cur = found
    out = update(cur, p.count, p.leader_count, ss, True)
    if out is None:
        return None
    cur = out
    while lvl < min(depth - 1, p.slice_level):
        lower = sorted_plain([c for d in cur for c in d.children])
        out = update(lower, p.count, p.leader_count, ss, True)
        if out is None:
            return None
        cur = out
        lvl += 1
    while lvl < depth - 1:
        size = p.inner_sizes.get(lvl + 1, 1)
        nxt: list[Dom] = []
        for d in cur:
            kids = sorted_plain(d.children)
            if size > 1:
                for k in kids:
                    k.sc, k.scwl = k.pc // size, k.pcwl // size
            part = update(kids, d.pc, d.lc, size, size > 1)
            if part is None:
                return None
            nxt += part
        cur = nxt
        lvl += 1
    leaders = sorted((d.values, d.lc) for d in cur if d.lc > 0)
    workers_out = sorted((d.values, d.pc) for d in cur if d.pc > 0)
    return workers_out, leaders
