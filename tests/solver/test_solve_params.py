"""SolveParams.of: one mapping from settings (CLI arguments, the sidecar's
configuration) to a solve's parameters."""

from __future__ import annotations

from argparse import Namespace

from placewise.solver.policy import Policy
from placewise.solver.solve import SolveParams


def test_every_field_the_settings_name_is_taken_and_given_ones_win() -> None:
    args = Namespace(
        solver="greedy",
        cycles=3,
        time_limit=2.5,
        workers=1,
        seed=7,
        deterministic_time=4.0,
        listen=("127.0.0.1", 1),  # not a solve parameter: ignored
    )
    pol = Policy(objective="gpus")
    got = SolveParams.of(args, solver="cpsat", policy=pol)
    assert got == SolveParams(
        solver="cpsat",
        cycles=3,
        time_limit=2.5,
        workers=1,
        seed=7,
        deterministic_time=4.0,
        policy=pol,
    )


def test_fields_the_settings_lack_keep_their_defaults() -> None:
    got = SolveParams.of(Namespace(time_limit=1.0, workers=2))
    assert got == SolveParams(time_limit=1.0, workers=2)
    assert got.seed == 0 and got.solver == "auto"
