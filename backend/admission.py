"""Admission of calls to a CPU-bound service: a few slots, a first-come-first-served line, and a
bound on the wait.

A server with more callers than cores serves them best one slot per core: more threads only
interleave the same CPU-seconds and every answer comes later. Callers beyond the slots wait in
line and are served in arrival order. A caller that would wait longer than `max_wait_s` (its
place in the line x the measured seconds per call / slots) is refused at once with a message
that says how long to wait before retrying, instead of being left to time out in its client.

It does not run anything itself and knows nothing of questions or files: the API wraps each call
in `admit()`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from backend.errors import StrataError

log = logging.getLogger(__name__)

MEAN_WEIGHT = 0.2  # weight of the newest call in the running mean of seconds per call
LOG_EVERY = 25  # calls between two INFO lines of what the gate served (bench/load.py reads the last one)


class BusyError(StrataError):
    """The line is too long: the call is refused at once; retry after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AdmissionGate:
    """`slots` calls at once, the rest in arrival order; refuses a call whose expected wait is
    over `max_wait_s`. Thread-safe. `what` names the calls in messages ("questions")."""

    def __init__(self, what: str, slots: int, max_wait_s: float, first_estimate_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if slots < 1:
            raise ValueError(f"An admission gate needs at least one slot, not {slots}.")
        self.what = what
        self.slots = slots
        self.max_wait_s = max_wait_s
        self.mean_s = first_estimate_s  # running mean of seconds per call (wall time inside a slot)
        self._clock = clock
        self._cond = threading.Condition()
        self._running = 0
        self._line: deque[object] = deque()
        self.admitted = 0
        self.refused = 0
        self.served = 0
        self.cpu_s = 0.0  # CPU-seconds of the serving threads inside their slots, all calls
        self.wall_s = 0.0

    def expected_wait_s(self, ahead: int) -> float:
        """Seconds a call with `ahead` calls running or waiting before it waits for a slot."""
        return max(0, ahead - self.slots + 1) * self.mean_s / self.slots

    def state(self) -> tuple[int, int]:
        """(running, waiting) now."""
        with self._cond:
            return self._running, len(self._line)

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Wait for a slot in arrival order and hold it for the `with` body; raises BusyError at
        once when the expected wait is over max_wait_s."""
        ticket = object()
        with self._cond:
            ahead = self._running + len(self._line)
            wait_s = self.expected_wait_s(ahead)
            if ahead >= self.slots and wait_s > self.max_wait_s:
                self.refused += 1
                retry = math.ceil(wait_s)
                raise BusyError(
                    f"The server is busy: {ahead} {self.what} are ahead of this one, about {self.mean_s:.1f} s each on "
                    f"{self.slots} slot(s), so it would wait about {retry} s, longer than its {self.max_wait_s:g} s limit "
                    f"(STRATA_SERVING__MAX_WAIT_S). Retry in {retry} s.", retry)
            self._line.append(ticket)
            while self._running >= self.slots or self._line[0] is not ticket:
                self._cond.wait()
            self._line.popleft()
            self._running += 1
            self.admitted += 1
            self._cond.notify_all()  # the next in line may take another free slot
        started, cpu_started = self._clock(), time.thread_time()
        try:
            yield
        finally:
            self._release(self._clock() - started, time.thread_time() - cpu_started)

    def _release(self, seconds: float, cpu_s: float) -> None:
        with self._cond:
            self._running -= 1
            self.mean_s += MEAN_WEIGHT * (seconds - self.mean_s)
            self.served += 1
            self.cpu_s += cpu_s
            self.wall_s += seconds
            served, refused, waiting = self.served, self.refused, len(self._line)
            self._cond.notify_all()
        if served % LOG_EVERY == 0:
            log.info("%s: %d served, %d refused, %d waiting; %.2f s and %.3f CPU-s per call in its slot", self.what, served,
                     refused, waiting, self.wall_s / served, self.cpu_s / served)
