"""Fault injection: the failures a real cluster produces that adapters must survive.

Rules are armed from tests (``emulator.faults.fail(500, count=2)``), matched
against each request and consumed. Watch faults are consumed when a watch
starts (forced 410, drop after N events) or act on the streams already open
(``drop_active_watches``). Every request is also logged, so tests can assert
what a client actually sent.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from placewise.adapters.emulator import errors


@dataclass
class _Rule:
    kind: str
    method: str | None = None
    path: re.Pattern[str] | None = None
    resource: str | None = None
    remaining: int | None = 1
    skip: int = 0
    status: int = 500
    seconds: float = 0.0
    message: str = ""
    as_http: bool = False
    after_events: int = 0

    def matches(
        self, method: str | None, path: str | None, resource: str | None
    ) -> bool:
        if self.method and method and self.method.upper() != method.upper():
            return False
        if self.path and (path is None or not self.path.search(path)):
            return False
        return not (self.resource and resource != self.resource)


@dataclass(frozen=True)
class WatchFault:
    """What a starting watch must do: fail with 410 and/or stop after N events."""

    expire: bool = False
    expire_as_http: bool = False
    drop_after: int | None = None


class Faults:
    """Thread-safe rule set consulted by the HTTP layer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._drop_generation: dict[str | None, int] = {}
        self.requests: deque[tuple[str, str]] = deque(maxlen=10000)
        self.agents: deque[tuple[str, str, str]] = deque(maxlen=10000)
        """(User-Agent, method, path) of every request: who sent what."""
        self.wake: Callable[[], None] = lambda: None

    def _add(self, rule: _Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    # -- arming ----------------------------------------------------------------------

    def fail(
        self,
        status: int = 500,
        count: int | None = 1,
        method: str | None = None,
        path: str | None = None,
        resource: str | None = None,
        message: str = "injected fault",
    ) -> None:
        """Answer matching requests with ``status`` (500 InternalError, 503, 429)."""
        self._add(
            _Rule(
                "fail",
                method,
                re.compile(path) if path else None,
                resource,
                count,
                status=status,
                message=message,
            )
        )

    def delay(
        self,
        seconds: float,
        count: int | None = None,
        method: str | None = None,
        path: str | None = None,
        resource: str | None = None,
    ) -> None:
        """Hold matching requests ``seconds`` before serving (client timeouts)."""
        self._add(
            _Rule(
                "delay",
                method,
                re.compile(path) if path else None,
                resource,
                count,
                seconds=seconds,
            )
        )

    def hold_reply(
        self,
        seconds: float,
        count: int | None = 1,
        method: str | None = None,
        path: str | None = None,
        resource: str | None = None,
    ) -> None:
        """Serve matching requests at once but hold the reply ``seconds``: the
        write is applied while its client has not heard so (a client paused
        or a slow network between them)."""
        self._add(
            _Rule(
                "hold",
                method,
                re.compile(path) if path else None,
                resource,
                count,
                seconds=seconds,
            )
        )

    def pending(self, kind: str) -> int:
        """How many rules of ``kind`` ("fail", "delay", "hold", ...) are armed."""
        with self._lock:
            return sum(1 for r in self._rules if r.kind == kind)

    def conflict_on_write(
        self, nth: int = 1, count: int = 1, resource: str | None = None
    ) -> None:
        """The ``nth`` matching write from now (and ``count - 1`` more) gets a 409."""
        self._add(_Rule("conflict", resource=resource, remaining=count, skip=nth - 1))

    def expire_next_watch(
        self, count: int = 1, resource: str | None = None, as_http: bool = False
    ) -> None:
        """The next watches fail with 410 Expired: an ERROR event or HTTP status."""
        self._add(_Rule("expire", resource=resource, remaining=count, as_http=as_http))

    def drop_watches(
        self, after_events: int = 0, count: int = 1, resource: str | None = None
    ) -> None:
        """The next watches are cut (no chunk terminator) after ``after_events``."""
        self._add(
            _Rule("drop", resource=resource, remaining=count, after_events=after_events)
        )

    def drop_active_watches(self, resource: str | None = None) -> None:
        """Cut every watch stream open now (optionally only one resource's)."""
        with self._lock:
            self._drop_generation[resource] = self._drop_generation.get(resource, 0) + 1
        self.wake()

    # -- consulted by the server -------------------------------------------------------

    def _take(
        self, kind: str, method: str | None, path: str | None, resource: str | None
    ) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.kind != kind or not rule.matches(method, path, resource):
                    continue
                if rule.skip > 0:
                    rule.skip -= 1
                    return None
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                return rule
        return None

    def before_request(
        self, method: str, path: str, resource: str | None, agent: str = ""
    ) -> tuple[float, float, errors.ApiError | None]:
        """Delay before serving, hold before replying and error to answer
        with, for any request."""
        self.requests.append((method, path))
        self.agents.append((agent, method, path))
        delay = self._take("delay", method, path, resource)
        hold = self._take("hold", method, path, resource)
        fail = self._take("fail", method, path, resource)
        error = None
        if fail is not None:
            error = _failure(fail.status, fail.message)
        return (
            (delay.seconds if delay else 0.0),
            (hold.seconds if hold else 0.0),
            error,
        )

    def on_write(self, resource: str, group: str, name: str) -> errors.ApiError | None:
        rule = self._take("conflict", None, None, resource)
        return errors.stale(resource, group, name) if rule else None

    def on_watch_start(self, resource: str) -> WatchFault:
        expire = self._take("expire", None, None, resource)
        drop = self._take("drop", None, None, resource)
        return WatchFault(
            expire=expire is not None,
            expire_as_http=bool(expire and expire.as_http),
            drop_after=drop.after_events if drop else None,
        )

    def drop_generation(self, resource: str) -> int:
        with self._lock:
            return self._drop_generation.get(None, 0) + self._drop_generation.get(
                resource, 0
            )


def _failure(status: int, message: str) -> errors.ApiError:
    if status == 500:
        return errors.internal(message)
    if status == 503:
        return errors.service_unavailable(message)
    if status == 429:
        return errors.ApiError(
            429,
            "TooManyRequests",
            message,
            {"retryAfterSeconds": 1},
            {"Retry-After": "1"},
        )
    if status == 504:
        return errors.timeout(message)
    return errors.unknown(status, message)
