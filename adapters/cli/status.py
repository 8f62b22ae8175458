"""A live status line on a terminal while a solve or bound runs.

A cpsat run can take its whole budget; without a sign of life people press
Ctrl-C.  While a step runs longer than :data:`DELAY` seconds, one line on
stderr is rewritten in place with the step, the solver's latest progress
message (the ``INFO`` records of the ``placewise`` loggers: stages,
incumbents, bounds) and the elapsed time; it is cleared when the step ends.
Only on a terminal: piped or redirected stderr (CI, log files, tests) gets
nothing but the log records ``-v`` asks for.  Log records printed while the
line is shown go above it (:class:`LogHandler`), so ``-v`` and the status
line never garble each other.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

DELAY = 1.0
"""Seconds a step runs before its status line appears."""
TICK = 0.25
"""Seconds between redraws (the spinner and the elapsed time)."""
CLEAR = "\r\x1b[K"
"""Carriage return and erase-to-end-of-line: the line is rewritten in place."""
SPINNER = "|/-\\"
LOGGER = "placewise"


class StatusLine:
    """One rewritable line on ``stream``; every write holds :attr:`lock`."""

    def __init__(self, stream: TextIO, message: str, delay: float = DELAY) -> None:
        self.stream = stream
        self.message = message
        self.latest = ""
        self.delay = delay
        self.start = time.monotonic()
        self.shown = False
        self.lock = threading.Lock()
        self._ticks = 0

    def text(self) -> str:
        elapsed = time.monotonic() - self.start
        spin = SPINNER[self._ticks % len(SPINNER)]
        detail = f": {self.latest}" if self.latest else ""
        line = f"{spin} {self.message} ({elapsed:.0f}s){detail}"
        # A wrapped line cannot be erased with a carriage return; the end
        # (the message) goes first, the elapsed time stays.
        width = max(shutil.get_terminal_size((80, 24)).columns - 1, 20)
        return line if len(line) <= width else line[: width - 3] + "..."

    def draw(self) -> None:
        """Redraw, once the step has run past the delay."""
        with self.lock:
            if time.monotonic() - self.start < self.delay:
                return
            self._ticks += 1
            self.stream.write(CLEAR + self.text())
            self.stream.flush()
            self.shown = True

    def write_above(self, text: str) -> None:
        """Print ``text`` (whole lines) where the status line is, then redraw it."""
        with self.lock:
            if self.shown:
                self.stream.write(CLEAR)
            self.stream.write(text)
            if self.shown:
                self.stream.write(self.text())
            self.stream.flush()

    def clear(self) -> None:
        with self.lock:
            if self.shown:
                self.stream.write(CLEAR)
                self.stream.flush()
                self.shown = False


_active: StatusLine | None = None
"""The status line on screen, if any (one step runs at a time)."""


class LogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The command line's stderr handler.

    It writes to the ``sys.stderr`` of the moment (so pytest's capture and
    redirections see it), and above the status line while one is shown.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """The stream is always the current ``sys.stderr``."""

    def emit(self, record: logging.LogRecord) -> None:
        line = _active
        if line is None or line.stream is not sys.stderr:
            super().emit(record)
            return
        try:
            line.write_above(self.format(record) + "\n")
        except Exception:  # pragma: no cover - logging must never raise
            self.handleError(record)


class _Progress(logging.Handler):
    """Feeds the ``placewise`` loggers' messages to the status line."""

    def __init__(self, line: StatusLine) -> None:
        super().__init__(logging.INFO)
        self.line = line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.line.latest = " ".join(record.getMessage().split())
        except Exception:  # pragma: no cover - a bad format string
            self.handleError(record)


@contextlib.contextmanager
def status(
    message: str, stream: TextIO | None = None, delay: float = DELAY
) -> Iterator[None]:
    """Show ``message`` and the latest progress while the block runs > ``delay``."""
    global _active
    out = sys.stderr if stream is None else stream
    if _active is not None or not out.isatty():
        yield
        return
    line = StatusLine(out, message, delay)
    logger = logging.getLogger(LOGGER)
    level = logger.level
    # The progress messages are INFO records: make them, shown or not.
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    handler = _Progress(line)
    logger.addHandler(handler)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(TICK):
            line.draw()

    ticker = threading.Thread(target=tick, name="placewise-status", daemon=True)
    _active = line
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        _active = None
        line.clear()
        logger.removeHandler(handler)
        logger.setLevel(level)
