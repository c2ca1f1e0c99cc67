"""``sampler.sums.sum4``: four interleaved running sums in a fixed order."""

import numpy as np
import pytest

from dolda.sampler.sums import sum4


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 8, 101])
def test_sum4_is_the_documented_order(n):
    rng = np.random.default_rng(n)
    values = rng.lognormal(0.0, 5.0, n + 3)  # spread magnitudes: the order shows in the bits
    s = [0.0, 0.0, 0.0, 0.0]
    n4 = n - n % 4
    for i in range(n4):
        s[i % 4] += values[i]
    for i in range(n4, n):
        s[0] += values[i]
    assert sum4(values, n) == (s[0] + s[1]) + (s[2] + s[3])  # bitwise; the tail beyond n unused
    assert sum4(values, n) == pytest.approx(values[:n].sum(), rel=1e-12)
