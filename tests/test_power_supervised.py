"""The supervised z-sweep with coefficients so large that the cached products overflow.

``sweep_supervised`` keeps ``exp(S_jk / N_d^2)`` products only when the bound
``3 max_k S_kk / N_d`` is at most ``CACHE_MAX_SHIFT``; otherwise it works in log
space.  ``test_supervised_z.py`` checks |eta| ~ 30, where the products are
still finite; here |eta| ~ 300 (``exp(S/N^2)`` is ``inf`` in a one-token
document), so a broken bound (a mutant computed ``max S_kk`` as 0: every
document cached) gives NaN.  Every recorded conditional must still be the
brute-force one.  Small and fast.
"""

import numpy as np

from dolda.sampler.supervised import sweep_supervised
from test_supervised_z import brute_force_conditional, tiny_problem


def test_huge_coefficients_take_the_log_space_path_and_stay_exact():
    p = tiny_problem(seed=5)
    p["eta_t"] = p["eta_t"] * 100.0
    gram = p["eta_t"].T @ p["eta_t"]
    assert gram.diagonal().max() > 710  # exp(S_kk) overflows: the cached products would
    z, ndk = p["z"].copy(), p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    record = np.zeros((len(z), p["phi"].shape[0]))
    before = z.copy()
    sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, np.ascontiguousarray(p["phi"].T),
                     p["alpha"], p["eta_t"], base, gram, 11, 0, record)
    assert np.isfinite(record).all()
    assert z.min() >= 0 and z.max() < p["phi"].shape[0]
    for d in range(len(p["doc_ptr"]) - 1):
        for i in range(p["doc_ptr"][d], p["doc_ptr"][d + 1]):
            state = np.concatenate([z[:i], before[i:]])
            np.testing.assert_allclose(record[i], brute_force_conditional(p, d, i, state),
                                       rtol=1e-9, atol=1e-12)
