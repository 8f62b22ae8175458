"""Bit-exact emulation of Go's ``math/rand`` (v1) global generator.

The FGD simulator draws every random decision that shapes a run (pod shuffle,
workload inflation, node-name prefixes that break score ties) from Go's global
``math/rand`` after ``rand.Seed(seed)``.  Reproducing the published per-seed
numbers exactly therefore needs the same stream of numbers, which this module
produces.  It is written from the published algorithm (an additive lagged
Fibonacci generator, Mitchell & Reeds, seeded through a Park-Miller LCG), not
from Go source text.

Go XORs every seed into a fixed 607-word table ("cooked" values): the state of
the same generator, seeded with 1, after 7.8e12 steps.  Rather than embed that
table, :func:`cooked_table` recomputes it by jumping the linear recurrence
ahead with polynomial arithmetic modulo ``x^607 - x^334 - 1`` over Z/2^64,
which takes well under a second.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["GoRand", "cooked_table"]

_LEN = 607  # lag of the additive generator
_TAP = 273  # short lag
_MASK63 = (1 << 63) - 1
_MASK64 = (1 << 64) - 1
_INT32_MAX = (1 << 31) - 1  # modulus of the seeding LCG
_COOKED_STEPS = 7_800_000_000_000  # how far Go advanced its table generator


def _seedrand(x: int) -> int:
    """One Park-Miller step, x <- 48271 x mod (2^31 - 1), as Go's seeder does."""
    return (48271 * x) % _INT32_MAX


def _seed_words(seed: int, shifts: tuple[int, int]) -> list[int]:
    """The 607 words an LCG seeding loop produces; Go burns 20 draws first."""
    seed %= _INT32_MAX
    if seed == 0:
        seed = 89482311
    x = seed
    out: list[int] = []
    for i in range(-20, _LEN):
        x = _seedrand(x)
        if i >= 0:
            u = x << shifts[0]
            x = _seedrand(x)
            u ^= x << shifts[1]
            x = _seedrand(x)
            u ^= x
            out.append(u & _MASK64)
    return out


def _polymulmod(a: NDArray[np.uint64], b: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Product of two residues modulo x^607 - x^334 - 1 with Z/2^64 coefficients.

    numpy's uint64 arithmetic wraps modulo 2^64, which is exactly the ring the
    generator lives in.
    """
    prod = np.convolve(a, b)
    # Fold the high powers down: x^k = x^(k-273) + x^(k-607) for k >= 607.
    # Descending order lets a folded term be folded again if it is still high.
    for k in range(len(prod) - 1, _LEN - 1, -1):
        c = prod[k]
        if c:
            prod[k - _TAP] += c
            prod[k - _LEN] += c
    return prod[:_LEN].copy()


def _advance(register: list[int], n_steps: int) -> list[int]:
    """The register after ``n_steps`` generator steps, by polynomial jump-ahead.

    Let z_s be the value the generator writes at its s-th step, with the
    starting register as z_{-606..0}; then z_s = z_{s-607} + z_{s-273}, and
    position p of the register always holds the latest z_s with
    s = 334 - p (mod 607).  x^t modulo the characteristic polynomial expresses
    z at time t as a combination of the starting words, so the state after
    n steps costs ~2 log2(n) polynomial products instead of n additions.
    """
    feed0 = _LEN - _TAP

    def last_write(p: int, upto: int) -> int:
        # the latest s <= upto with s = feed0 - p (mod 607)
        return upto - ((upto - (feed0 - p)) % _LEN)

    with np.errstate(over="ignore"):
        w = np.zeros(_LEN, dtype=np.uint64)  # w_t = z_{t-606}
        for p in range(_LEN):
            w[last_write(p, 0) + _LEN - 1] = register[p]
        base = np.zeros(_LEN, dtype=np.uint64)
        base[1] = 1
        res = np.zeros(_LEN, dtype=np.uint64)
        res[0] = 1
        e = n_steps  # w_{n} = z_{n-606}, the oldest value still in the register
        while e:
            if e & 1:
                res = _polymulmod(res, base)
            e >>= 1
            if e:
                base = _polymulmod(base, base)
        rows = np.empty((_LEN, _LEN), dtype=np.uint64)
        cur = res
        for i in range(_LEN):  # x^(n+i) for i = 0..606, one shift at a time
            rows[i] = cur
            nxt = np.zeros(_LEN, dtype=np.uint64)
            nxt[1:] = cur[:-1]
            nxt[_LEN - _TAP] += cur[-1]  # x^607 = x^334 + 1
            nxt[0] += cur[-1]
            cur = nxt
        vals = rows @ w  # vals[i] = z_{n-606+i}
    return [
        int(vals[last_write(p, n_steps) - (n_steps - _LEN + 1)]) for p in range(_LEN)
    ]


@functools.cache
def cooked_table() -> tuple[int, ...]:
    """Go's 607 cooked words (low 63 bits): seed 1, shifts 20/10, 7.8e12 steps."""
    register = _advance(_seed_words(1, (20, 10)), _COOKED_STEPS)
    return tuple(v & _MASK63 for v in register)


class GoRand:
    """Go ``math/rand.Rand`` over its default source, seeded like ``rand.Seed``.

    Only the methods the FGD protocol consumes are provided, each drawing
    exactly as many source values as Go does, because every later decision
    depends on the stream position.
    """

    def __init__(self, seed: int) -> None:
        words = _seed_words(seed, (40, 20))
        cooked = cooked_table()
        self._vec = [(w ^ c) & _MASK63 for w, c in zip(words, cooked, strict=True)]
        self._tap = 0
        self._feed = _LEN - _TAP

    def int63(self) -> int:
        """Next value of the lagged Fibonacci source, in [0, 2^63)."""
        self._tap -= 1
        if self._tap < 0:
            self._tap += _LEN
        self._feed -= 1
        if self._feed < 0:
            self._feed += _LEN
        x = (self._vec[self._feed] + self._vec[self._tap]) & _MASK63
        self._vec[self._feed] = x
        return x

    def int_(self) -> int:
        """``rand.Int`` on a 64-bit platform: a plain Int63."""
        return self.int63()

    def int31(self) -> int:
        return self.int63() >> 32

    def uint32(self) -> int:
        return self.int63() >> 31

    def int31n(self, n: int) -> int:
        """Public ``Int31n``: rejection sampling, then modulo."""
        if n <= 0:
            raise ValueError("n <= 0 not understood")
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        limit = (1 << 31) - 1 - ((1 << 31) % n)
        v = self.int31()
        while v > limit:
            v = self.int31()
        return v % n

    def intn(self, n: int) -> int:
        """``Intn`` for n < 2^31, which Go routes through public ``Int31n``."""
        if n <= 0 or n > _INT32_MAX:
            raise ValueError("n outside (0, 2^31) not supported")
        return self.int31n(n)

    def _int31n_lemire(self, n: int) -> int:
        """Go's private ``int31n`` (Lemire's multiply-shift), used by Shuffle."""
        v = self.uint32()
        prod = v * n
        low = prod & 0xFFFFFFFF
        if low < n:
            thresh = ((1 << 32) - n) % n
            while low < thresh:
                v = self.uint32()
                prod = v * n
                low = prod & 0xFFFFFFFF
        return prod >> 32

    def float64(self) -> float:
        """``Float64``: Int63 / 2^63, redrawn in the (rare) case it rounds to 1."""
        while True:
            f = float(self.int63()) / float(1 << 63)
            if f != 1.0:
                return f

    def shuffle(self, n: int, swap: Callable[[int, int], None]) -> None:
        """Fisher-Yates from the top, as ``Rand.Shuffle`` for n < 2^31."""
        if n < 0:
            raise ValueError("n < 0 not understood")
        for i in range(n - 1, 0, -1):
            j = self._int31n_lemire(i + 1)
            swap(i, j)

    def perm(self, n: int) -> list[int]:
        """``Perm``: the inside-out shuffle Go uses, drawing with ``Intn``."""
        m = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            m[i] = m[j]
            m[j] = i
        return m
