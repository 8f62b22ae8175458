"""Go math/rand emulation against values Go itself prints."""

from __future__ import annotations

from placewise.benchmarks.fgd import gorand


def test_cooked_table_matches_go_constants() -> None:
    # first, second and last entries of Go's rngCooked (low 63 bits)
    table = gorand.cooked_table()
    assert len(table) == 607
    assert table[0] == 5041579894721019882
    assert table[1] == 4646389086726545243
    assert table[-1] == 4152330101494654406


def test_jump_ahead_equals_stepping() -> None:
    start = gorand._seed_words(7, (20, 10))

    def step(reg: list[int], n: int) -> list[int]:
        v, tap, feed = list(reg), 0, 607 - 273
        for _ in range(n):
            tap, feed = (tap - 1) % 607, (feed - 1) % 607
            v[feed] = (v[feed] + v[tap]) & ((1 << 64) - 1)
        return v

    for n in (0, 1, 606, 607, 608, 3001):
        assert gorand._advance(start, n) == step(start, n)


def test_seed_one_sequences_are_gos() -> None:
    # rand.Seed(1): the well-known outputs of Go's default source
    r = gorand.GoRand(1)
    assert r.int63() == 5577006791947779410
    r = gorand.GoRand(1)
    assert [r.intn(100) for _ in range(10)] == [81, 87, 47, 59, 81, 18, 25, 40, 56, 0]
    r = gorand.GoRand(1)
    assert r.float64() == 0.6046602879796196
    assert r.float64() == 0.9405090880450124


def test_perm_and_shuffle_are_permutations() -> None:
    r = gorand.GoRand(42)
    perm = r.perm(1213)
    assert sorted(perm) == list(range(1213))
    items = list(range(50))

    def swap(i: int, j: int) -> None:
        items[i], items[j] = items[j], items[i]

    r.shuffle(50, swap)
    assert sorted(items) == list(range(50)) and items != list(range(50))
