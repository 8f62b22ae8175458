"""The command line's machinery: global flags anywhere, help, the status line."""

from __future__ import annotations

import argparse
import io
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from placewise.adapters.cli import status as status_module
from placewise.adapters.cli.main import verbosity_level
from placewise.adapters.cli.status import CLEAR, LogHandler, status
from placewise.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted(str(p) for p in (ROOT / "instances" / "demo").glob("*.yaml"))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize(
    ("argv", "count"),
    [
        (["solve", "x.yaml"], 0),
        (["-v", "solve", "x.yaml"], 1),
        (["solve", "x.yaml", "-v"], 1),
        (["solve", "-vv", "x.yaml"], 2),
        (["-v", "solve", "x.yaml", "--verbose"], 2),
        (["bound", "x.yaml", "-v"], 1),
        (["serve", "-v"], 1),
    ],
)
def test_verbose_works_before_and_after_the_subcommand(
    argv: list[str], count: int
) -> None:
    args = build_parser().parse_args(argv)
    assert args.verbose + args.verbose_after == count


def test_version_works_after_the_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--version"], ["solve", "--version"], ["emulate", "--version"]):
        with pytest.raises(SystemExit) as done:
            build_parser().parse_args(argv)
        assert done.value.code == 0
        assert capsys.readouterr().out.startswith("placewise ")


def test_verbosity_levels() -> None:
    assert [verbosity_level(n) for n in range(4)] == [
        logging.WARNING,
        logging.INFO,
        logging.DEBUG,
        logging.DEBUG,
    ]


def test_every_command_is_registered_once_in_help_order() -> None:
    assert list(_subcommands()) == [
        "solve",
        "validate",
        "bound",
        "generate",
        "bench",
        "simulate",
        "sweep",
        "emulate",
        "serve",
    ]
    assert len(COMMANDS) == 9


def test_every_option_has_help_and_shows_its_default() -> None:
    """``serve --help`` showed neither ``--debounce``'s default nor any help
    for the lease flags; no option of any command may do so again."""
    missing = []
    for name, parser in _subcommands().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            flag = f"{name} {'/'.join(action.option_strings) or action.dest}"
            if not action.help:
                missing.append(f"{flag}: no help")
                continue
            default = action.default
            shown = isinstance(
                action, argparse._StoreTrueAction | argparse._CountAction
            ) or default in (None, False, argparse.SUPPRESS)
            if action.option_strings and not shown and "default" not in action.help:
                missing.append(f"{flag}: default {default!r} not shown")
    assert missing == []


def test_adapters_never_import_the_benchmarks() -> None:
    """The bench command joins the program in the composition root only."""
    code = (
        "import sys\n"
        "import placewise.adapters.cli.main, placewise.adapters.cli.solve\n"
        "import placewise.adapters.cli.serve, placewise.adapters.cli.emulate\n"
        "assert not any(m.startswith('placewise.benchmarks') for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_verbose_solve_says_what_the_optimizer_is_doing() -> None:
    """``-v`` after the subcommand: stages in GPUs (not the model's internal
    objective values) on stderr."""
    argv = [sys.executable, "-m", "placewise", "solve", *DEMO]
    argv += ["--solver", "cpsat", "--time-limit", "2", "--workers", "1"]
    quiet = subprocess.run(
        argv, capture_output=True, text=True, cwd=ROOT, timeout=120, check=True
    )
    assert "INFO" not in quiet.stderr
    loud = subprocess.run(
        [*argv, "-v"], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True
    )

    def plan(stdout: str) -> list[str]:
        return [line for line in stdout.splitlines() if "Seconds" not in line]

    assert plan(loud.stdout) == plan(quiet.stdout)  # the plan, on stdout, only
    lines = loud.stderr.splitlines()
    tiers = [line for line in lines if line.startswith("INFO placewise.cpsat: tier ")]
    assert tiers and all(" GPUs admitted net of preemptions (" in t for t in tiers)
    assert not any("OPTIMAL" in line or "FEASIBLE" in line for line in lines)
    assert lines[-1].startswith("INFO placewise: cpsat: ")


class FakeTTY(io.StringIO):
    """A terminal as far as the status line can tell."""

    def isatty(self) -> bool:
        return True


def test_status_line_shows_the_latest_progress_and_clears(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(status_module, "TICK", 0.02)
    tty = FakeTTY()
    log = logging.getLogger("placewise.cpsat")
    level = logging.getLogger("placewise").level
    with status("solving with cpsat", stream=tty, delay=0.05):
        log.info("tier 10: FEASIBLE 8 (bound 12)")
        time.sleep(0.3)
        log.info("tier 10: OPTIMAL 12 (bound 12)")
        time.sleep(0.3)
    out = tty.getvalue()
    assert out.startswith(CLEAR)
    assert "solving with cpsat (0s): tier 10: FEASIBLE 8 (bound 12)" in out
    assert "solving with cpsat (0s): tier 10: OPTIMAL 12 (bound 12)" in out
    assert out.endswith(CLEAR)  # nothing left on the terminal
    assert logging.getLogger("placewise").level == level  # restored


def test_status_line_waits_for_its_delay_and_skips_pipes() -> None:
    tty = FakeTTY()
    with status("quick", stream=tty, delay=5.0):
        logging.getLogger("placewise").info("done at once")
    assert tty.getvalue() == ""
    pipe = io.StringIO()
    with status("piped", stream=pipe, delay=0.0):
        time.sleep(0.05)
    assert pipe.getvalue() == ""


def test_log_records_print_above_the_status_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``-v`` and the status line share stderr without garbling each other."""
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    handler = LogHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    record = logging.LogRecord("placewise", logging.WARNING, "", 0, "hello", (), None)
    with status("solving", delay=0.0):
        time.sleep(0.4)  # shown
        handler.emit(record)
    out = tty.getvalue()
    before, after = out.split("WARNING hello\n")
    assert before.endswith(CLEAR)  # the status line was erased first
    assert after.startswith("| solving") or after.startswith(
        tuple(c + " solving" for c in status_module.SPINNER)
    )
    assert out.endswith(CLEAR)
