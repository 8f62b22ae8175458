"""Free capacity per host and the placement of running pods and gangs.

The generator needs a cluster *history*: running work that already sits on
the hosts.  It plays the part of a past scheduler that was not careful —
single pods land on a random host that fits and gangs on a random domain
that fits — because that is what leaves the partially used, unevenly filled
hosts an optimizer is meant to do better on.  Every placement is checked
against free capacity, so the emitted usage never exceeds allocatable.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from placewise.adapters.generate.cluster import BoolArray, IntArray, Layout

PROBES = 24
"""Random hosts tried before scanning the whole cluster for a single pod."""
UNLIMITED_PODS = np.iinfo(np.int64).max // 4


class Capacity:
    """Free resources per host, consumed as running work is placed."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.free: IntArray = layout.allocatable.copy()

    def pods_that_fit(
        self, request: IntArray, mask: BoolArray | None = None
    ) -> IntArray:
        """How many pods of ``request`` each host can still take (0 off ``mask``)."""
        counts = np.full(self.layout.size, UNLIMITED_PODS, dtype=np.int64)
        for r, amount in enumerate(request):
            if amount > 0:
                np.minimum(counts, self.free[r] // int(amount), out=counts)
        np.maximum(counts, 0, out=counts)
        if mask is not None:
            counts[~mask] = 0
        return counts

    def take(self, host: int, request: IntArray, pods: int = 1) -> None:
        self.free[:, host] -= request * pods
        if (self.free[:, host] < 0).any():  # pragma: no cover - guarded by callers
            raise AssertionError(f"host {host} overcommitted")

    def place_pod(self, rng: np.random.Generator, request: IntArray) -> int | None:
        """A random host that fits one pod, or None when none does.

        Probing random hosts first keeps the common case O(1); the vector
        scan only runs when the cluster is nearly full.
        """
        n = self.layout.size
        for host in rng.integers(0, n, size=PROBES):
            if (self.free[:, host] >= request).all():
                self.take(int(host), request)
                return int(host)
        fits = np.flatnonzero((self.free >= request[:, None]).all(axis=0))
        if fits.size == 0:
            return None
        host = int(fits[rng.integers(0, fits.size)])
        self.take(host, request)
        return host

    def place_gang(
        self,
        rng: np.random.Generator,
        request: IntArray,
        count: int,
        mask: BoolArray,
        *,
        level: int | None,
        required: bool,
        slice_level: int,
        slice_size: int,
    ) -> list[tuple[int, int]] | None:
        """Place ``count`` pods as whole slices inside one domain of ``level``.

        ``level`` None (or a preferred level that nothing fits) spreads the
        slices over the whole cluster.  Returns ``(host, pods)`` pairs, or None
        (and changes nothing) when the gang does not fit.
        """
        layout = self.layout
        per_host = self.pods_that_fit(request, mask)
        slice_dom = layout.domains(slice_level)
        slices_in = (
            np.bincount(
                slice_dom, weights=per_host, minlength=layout.domain_count(slice_level)
            ).astype(np.int64)
            // slice_size
        )
        needed = count // slice_size
        if slices_in.sum() < needed:
            return None
        chosen = self._choose_domain(
            rng, slices_in, needed, level, required, slice_level
        )
        if chosen is None:
            return None
        # Fill the chosen domain's slice domains, fullest first (compact, as a
        # topology-aware scheduler would), then their hosts the same way.
        candidates = np.flatnonzero(chosen & (slices_in > 0))
        if level is None:  # unconstrained: wherever there is room, in no order
            candidates = candidates[rng.permutation(candidates.size)]
        else:
            candidates = candidates[np.argsort(-slices_in[candidates], kind="stable")]
        result: list[tuple[int, int]] = []
        left = needed
        for dom in candidates:
            if left == 0:
                break
            take = min(int(slices_in[dom]), left)
            left -= take
            hosts = np.flatnonzero((slice_dom == dom) & (per_host > 0))
            hosts = hosts[np.argsort(-per_host[hosts], kind="stable")]
            pods = take * slice_size
            for h in hosts:
                if pods == 0:
                    break
                k = min(int(per_host[h]), pods)
                result.append((int(h), k))
                pods -= k
        for host, pods in result:
            self.take(host, request, pods)
        return sorted(result)

    def _choose_domain(
        self,
        rng: np.random.Generator,
        slices_in: IntArray,
        needed: int,
        level: int | None,
        required: bool,
        slice_level: int,
    ) -> npt.NDArray[np.bool_] | None:
        """Mask over slice-level domains of the one domain the gang goes to."""
        layout = self.layout
        n_slice_doms = slices_in.size
        while level is not None:
            parent = _parent_of(layout, slice_level, level)
            per_parent = np.bincount(
                parent, weights=slices_in, minlength=layout.domain_count(level)
            )
            fits = np.flatnonzero(per_parent >= needed)
            if fits.size:
                pick = int(fits[rng.integers(0, fits.size)])
                mask: npt.NDArray[np.bool_] = parent == pick
                return mask
            if required:
                return None
            level = level - 1 if level > 0 else None
        return np.ones(n_slice_doms, dtype=bool)


def _parent_of(layout: Layout, child_level: int, parent_level: int) -> IntArray:
    """Parent domain (at ``parent_level``) of every domain at ``child_level``."""
    parent = np.zeros(layout.domain_count(child_level), dtype=np.int64)
    parent[layout.domains(child_level)] = layout.domains(parent_level)
    return parent
