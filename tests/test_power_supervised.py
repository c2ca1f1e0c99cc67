"""The supervised z-sweep with coefficients so large that the cached products overflow.

``sweep_supervised`` keeps ``exp(S_jk / N_d^2)`` products only when the bound
``3 max_k S_kk / N_d`` is at most ``CACHE_MAX_SHIFT``; otherwise it works in log
space.  ``test_supervised_z.py`` checks |eta| ~ 30, where the products are
still finite; here |eta| ~ 300 (``exp(S/N^2)`` is ``inf`` in a one-token
document), so a broken bound (a mutant computed ``max S_kk`` as 0: every
document cached) gives NaN.  Every recorded conditional must still be the
brute-force one.  Small and fast.
"""

from test_supervised_z import sweep_with_scaled_coefficients


def test_huge_coefficients_take_the_log_space_path_and_stay_exact():
    p, gram, z = sweep_with_scaled_coefficients(100.0)
    assert gram.diagonal().max() > 710  # exp(S_kk) overflows: cached products would be inf
    assert z.min() >= 0 and z.max() < p["phi"].shape[0]
