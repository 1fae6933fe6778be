"""backend.admission: slots taken in arrival order, a wait past the bound refused at once with
the seconds to wait before retrying, and the running mean of seconds per call that sizes it."""

from __future__ import annotations

import threading
import time

import pytest

from backend.admission import AdmissionGate, BusyError


def test_calls_beyond_the_slots_wait_and_are_served_in_arrival_order():
    gate = AdmissionGate("questions", slots=2, max_wait_s=60, first_estimate_s=0.01)
    order: list[int] = []
    release = threading.Event()
    inside = threading.Semaphore(0)

    def call(i: int) -> None:
        with gate.admit():
            inside.release()
            order.append(i)
            release.wait(5)

    threads = []
    for i in range(6):
        t = threading.Thread(target=call, args=(i,))
        t.start()
        threads.append(t)
        time.sleep(0.05)  # arrive one after the other
    assert inside.acquire(timeout=2) and inside.acquire(timeout=2)
    assert gate.state() == (2, 4), "two run, four wait"
    release.set()
    for t in threads:
        t.join(5)
    assert order == list(range(6))
    assert gate.state() == (0, 0) and gate.admitted == 6 and gate.refused == 0


def test_a_call_that_would_wait_past_the_bound_is_refused_at_once_with_the_retry_time():
    gate = AdmissionGate("questions", slots=1, max_wait_s=5, first_estimate_s=4.0)
    release = threading.Event()

    def hold() -> None:
        with gate.admit():
            release.wait(5)

    first = threading.Thread(target=hold)
    first.start()
    time.sleep(0.1)
    second = threading.Thread(target=hold)  # waits about 4 s: under the bound
    second.start()
    time.sleep(0.1)
    started = time.monotonic()
    with pytest.raises(BusyError, match=r"The server is busy: 2 questions are ahead .* Retry in 8 s") as err:
        with gate.admit():
            pass
    assert time.monotonic() - started < 0.5, "refused at once, not after a wait"
    assert err.value.retry_after_s == 8 and gate.refused == 1
    release.set()
    first.join(5)
    second.join(5)


def test_the_estimate_follows_the_measured_seconds_per_call():
    now = [0.0]
    gate = AdmissionGate("uploads", slots=1, max_wait_s=60, first_estimate_s=10.0, clock=lambda: now[0])
    for _ in range(30):
        with gate.admit():
            now[0] += 2.0
    assert gate.mean_s == pytest.approx(2.0, abs=0.05)
    assert gate.expected_wait_s(ahead=3) == pytest.approx(6.0, abs=0.2)
    with pytest.raises(ValueError, match="at least one slot"):
        AdmissionGate("x", slots=0, max_wait_s=1, first_estimate_s=1)
