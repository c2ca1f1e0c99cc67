"""Give memory that Python and numpy have freed back to the operating system.

Tokenising a corpus creates and frees millions of small objects; glibc keeps the freed
heap pages mapped, so the process's resident size stays at its tokenising peak for the
rest of a fit (about 0.08 GB on 20 Newsgroups).  ``malloc_trim(0)`` returns them.  On a
C library without it (macOS, musl, Windows) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

#: Below this many tokens a corpus frees too little to be worth a trim (it costs ~1 ms).
TRIM_MIN_TOKENS = 200_000
#: The trim inside every iteration (one, before the Phi draw) runs only from this many Phi
#: entries (V x K) on: the pages it returns are faulted in again by the next iteration (6%
#: of a K = 100 iteration on 20 Newsgroups, V x K = 8.3 M), which pays only where memory is
#: the limit.
ITERATION_TRIM_MIN_ENTRIES = 1 << 25


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_heap(n_tokens: int | None = None) -> bool:
    """``malloc_trim(0)`` when available (and ``n_tokens`` is None or large); True if done."""
    if n_tokens is not None and n_tokens < TRIM_MIN_TOKENS:
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def release_in_iteration(n_words: int, n_topics: int) -> bool:
    """:func:`release_free_heap` inside a chain's iteration, for large ``V x K`` only."""
    if int(n_words) * int(n_topics) < ITERATION_TRIM_MIN_ENTRIES:
        return False
    return release_free_heap()
