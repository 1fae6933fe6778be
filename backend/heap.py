"""Handing memory that Python has freed back to the system.

CPython frees the objects of a finished corpus load or parse, but glibc keeps their pages in its
heap (the arena cannot shrink below its highest live block), so a long-lived process stays at the
size of its largest moment. `malloc_trim` returns the free pages: after a corpus load, the rows
read from SQLite and the per-row vectors stacked into the layer matrices; it takes milliseconds.
`python bench/corpus_memory.py` shows what a load holds before and after."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 (glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def trim() -> bool:
    """Return glibc's free heap to the system; False where the C library is not glibc."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
