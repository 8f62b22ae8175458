"""Elastic workload slices: a scale-up slice replaces its running slice.

``flat.yaml``'s queue ``cq`` has 10 cpu on flavor ``f`` (and on ``g``); the
running slice ``old`` holds 6 one-cpu pods there and its scale-up ``new``
asks for 9: it fits only when ``old``'s quota passes to it.
"""

from __future__ import annotations

from typing import Any

from placewise.models.plan import plan_from_dict
from tests.models.validate_builders import (
    admission,
    check,
    load,
    plan,
    pod_set,
    psa,
    rules,
    running,
    workload,
)

LINK = "kueue.x-k8s.io/workload-slice-replacement-for"


def slice_of(old: str, key: str, pods: int, **kw: Any) -> dict[str, Any]:
    """A pending scale-up slice of ``old`` with ``pods`` one-cpu pods."""
    obj = workload(key, kw.pop("queue", "lq"), [pod_set(count=pods)], **kw)
    obj["metadata"]["annotations"] = {LINK: old}
    return obj


def old_slice(pods: int = 6) -> dict[str, Any]:
    return workload(
        "default/old",
        "lq",
        [pod_set(count=pods)],
        running_in="cq",
        assignments=[psa(flavors={"cpu": "f"}, usage={"cpu": str(pods)}, count=pods)],
    )


def grow(pods: int = 9, flavor: str = "f", **kw: Any) -> dict[str, Any]:
    entry = admission(
        "default/new",
        "cq",
        psa(flavors={"cpu": flavor}, usage={"cpu": str(pods)}, count=pods),
    )
    return entry | kw


def test_replacing_passes_the_old_slices_quota_on() -> None:
    """6 running + 9 would be 15 of 10; replaced, only the 9 hold quota."""
    snap = load("flat.yaml", old_slice(), slice_of("default/old", "default/new", 9))
    assert check(snap, plan([grow(replaces="default/old")])) == []
    assert rules(check(snap, plan([grow()]))) == ["quota.nominal", "slice.not-replaced"]


def test_replaces_must_name_the_linked_running_slice() -> None:
    snap = load(
        "flat.yaml",
        old_slice(),
        running("default/other", "cq", 1),
        slice_of("default/old", "default/new", 9),
    )
    found = rules(check(snap, plan([grow(replaces="default/other")])))
    assert "slice.replaces" in found


def test_a_replaced_slice_is_no_victim() -> None:
    snap = load("flat.yaml", old_slice(), slice_of("default/old", "default/new", 9))
    evict = [("default/old", "default/new", "InClusterQueue")]
    found = rules(check(snap, plan([grow(replaces="default/old")], preemptions=evict)))
    assert "slice.replaces" in found


def test_a_preempted_old_slice_leaves_nothing_to_replace() -> None:
    """Evicted by someone else, the old slice's link no longer binds."""
    snap = load("flat.yaml", old_slice(), slice_of("default/old", "default/new", 9))
    evict = [("default/old", "default/new", "InClusterQueue")]
    assert "slice.not-replaced" not in rules(
        check(snap, plan([grow()], preemptions=evict))
    )


def test_the_old_slices_flavor_is_kept() -> None:
    snap = load("flat.yaml", old_slice(), slice_of("default/old", "default/new", 9))
    assert rules(check(snap, plan([grow(flavor="g", replaces="default/old")]))) == [
        "slice.flavor"
    ]


def test_the_old_slices_pods_are_kept() -> None:
    snap = load("flat.yaml", old_slice(), slice_of("default/old", "default/new", 4))
    found = rules(check(snap, plan([grow(pods=4, replaces="default/old")])))
    assert found == ["slice.pods-moved"]


def tas_old() -> dict[str, Any]:
    return workload(
        "default/old",
        "lq",
        [pod_set(count=2)],
        running_in="tas-cq",
        assignments=[
            psa("main", {"cpu": "tas"}, {"cpu": "2"}, 2, domains=[(["h1"], 2)])
        ],
    )


def tas_grow(domains: list[tuple[list[str], int]]) -> dict[str, Any]:
    entry = admission(
        "default/new",
        "tas-cq",
        psa("main", {"cpu": "tas"}, {"cpu": "3"}, 3, domains=domains),
    )
    return entry | {"replaces": "default/old"}


def test_placed_pods_stay_in_their_domains() -> None:
    """On a topology the old slice's 2 pods on h1 stay there; the new one
    may add the third anywhere, and h1's capacity passes on with them."""
    snap = load("tas.yaml", tas_old(), slice_of("default/old", "default/new", 3))
    assert check(snap, plan([tas_grow([(["h1"], 2), (["h2"], 1)])])) == []
    assert check(snap, plan([tas_grow([(["h1"], 3)])])) == []
    moved = check(snap, plan([tas_grow([(["h2"], 3)])]))
    assert rules(moved) == ["slice.pods-moved"]
    assert "short in h1 (0 of 2)" in moved[0].message


def test_plans_carry_replaces_both_ways() -> None:
    """``replaces`` is optional: old plans read as before, new ones round-trip."""
    p = plan([grow(replaces="default/old")])
    assert p.admissions[0].replaces == "default/old"
    assert plan_from_dict(p.to_dict()) == p
    assert "replaces" not in plan([grow()]).to_dict()["admissions"][0]
