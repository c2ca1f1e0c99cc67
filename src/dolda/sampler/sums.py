"""A float sum the compiler can overlap: four running sums in a fixed order.

One running sum makes every addition wait for the one before; four independent ones
(combined as ``(s0 + s1) + (s2 + s3)``) let them overlap, and the fixed order keeps the
result the same on every run and thread count.  Used by the Phi draw (a topic's row
total); the z-sweeps sum their weights by blocks (:func:`dolda.sampler.sweeps.block_totals`),
which their search reuses.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def sum4(values, n):
    """``values[0] + ... + values[n-1]`` as four interleaved running sums."""
    s0 = s1 = s2 = s3 = 0.0
    n4 = n - n % 4
    for i in range(0, n4, 4):
        s0 += values[i]
        s1 += values[i + 1]
        s2 += values[i + 2]
        s3 += values[i + 3]
    for i in range(n4, n):
        s0 += values[i]
    return (s0 + s1) + (s2 + s3)
