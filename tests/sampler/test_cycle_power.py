"""The cycle-MH z-kernel (``dolda.sampler.cycle``) draws what its docstrings say, exactly.

Small and fast (< 1 s without numba): the first tests of the mutation run over
``cycle.py`` (docs/MUTATION.md).  Its law is checked against the enumerated posterior in
``tests/sampler/test_supervised_z.py`` (40,000 sweeps a case); these check its draws.
"""

import numpy as np
import pytest

from test_supervised_z import tiny_problem

pytestmark = pytest.mark.power


def _cycle_replay(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha, eta_t,
                  base, seed, iteration, doc_offset, n_cycles, scan_rare):
    """The cycle-MH sweep written again from :mod:`dolda.sampler.cycle`'s docstrings, token by
    token in plain Python: the residual ``r^{-i}`` recomputed from the counts for every step
    (the kernel keeps it incrementally), ``g_k = eta_{.,k} . r^{-i} / N_d - S_kk / (2 N_d^2)``,
    the proposals from one uniform each (the word's alias table, else the linear scan of
    ``alpha_k phi_{k,w}`` or, without ``scan_rare``, ``q(k) ∝ alpha_k``; the other tokens'
    topics or alpha), one more uniform only when the ratio is below 1, and the uniforms of a
    token's first step pair drawn ``AHEAD`` tokens early from the document's stream."""
    from dolda.sampler.prefetch import AHEAD
    from dolda.sampler.rng import STEP_Z, stream, uniform as _uniform

    def uniform(state):  # the compiled stream returns a Python int: keep it uint64
        u, state = _uniform(np.uint64(state))
        return u, np.uint64(state)

    z, ndk = z.copy(), ndk.copy()
    n_topics = ndk.shape[1]
    cum = np.cumsum(alpha)
    alpha_sum = cum[-1]
    symmetric = bool(np.all(alpha == alpha[0]))
    sq = (eta_t ** 2).sum(axis=0)

    def alpha_draw(t):  # t uniform on [0, sum(alpha))
        if symmetric:
            return min(int(t / alpha[0]), n_topics - 1)
        return min(int(np.searchsorted(cum, t, side="right")), n_topics - 1)

    def g(k, d, n_d):  # ndk[d] holds n^{-i}
        r_minus = base[d] - eta_t @ ndk[d] / n_d
        return eta_t[:, k] @ r_minus / n_d - sq[k] / (2.0 * n_d * n_d)

    for d in range(len(doc_ptr) - 1):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = int(stop - start)
        if n_d == 0:
            continue
        state = np.uint64(stream(seed, iteration * 16 + STEP_Z, doc_offset + d))
        pairs = {}
        for p in range(min(AHEAD, n_d)):
            uw, state = uniform(state)
            ud, state = uniform(state)
            pairs[p] = (uw, ud)
        for p in range(n_d):
            i = start + p
            w = tokens[i]
            uw, ud = pairs.pop(p)
            if p + AHEAD < n_d:
                a, state = uniform(state)
                b, state = uniform(state)
                pairs[p + AHEAD] = (a, b)
            k = z[i]
            ndk[d, k] -= 1
            for c in range(n_cycles):
                if c > 0:
                    uw, state = uniform(state)
                row = table_row[w]
                by_word = scan_rare or row >= 0
                if row >= 0:
                    x = uw * n_topics
                    kk = min(int(x), n_topics - 1)
                    k1 = kk if x - kk < prob[row, kk] else alias[row, kk]
                elif scan_rare:
                    acc = np.cumsum(alpha * phi_wk[w].astype(np.float64))
                    k1 = min(int(np.searchsorted(acc, uw * mass[w], side="right")), n_topics - 1)
                else:
                    k1 = alpha_draw(uw * alpha_sum)
                if k1 != k:
                    ratio = ((ndk[d, k1] + alpha[k1]) / alpha[k1]
                             / ((ndk[d, k] + alpha[k]) / alpha[k])
                             * np.exp(g(k1, d, n_d) - g(k, d, n_d)))
                    if not by_word:
                        ratio = (ratio * phi_wk[w, k1] / phi_wk[w, k] if phi_wk[w, k] > 0
                                 else np.inf)
                    ok = True
                    if ratio < 1.0:
                        u, state = uniform(state)
                        ok = u < ratio
                    if ok:
                        k = k1
                if c > 0:
                    ud, state = uniform(state)
                t = ud * (n_d - 1 + alpha_sum)
                if t < n_d - 1:
                    j = min(int(t), n_d - 2)
                    k1 = z[start + j + (j >= p)]
                else:
                    k1 = alpha_draw(t - (n_d - 1))
                if k1 != k:
                    ok = True
                    if phi_wk[w, k] > 0:
                        ratio = phi_wk[w, k1] / phi_wk[w, k] * np.exp(g(k1, d, n_d) - g(k, d, n_d))
                        if ratio < 1.0:
                            u, state = uniform(state)
                            ok = u < ratio
                    if ok:
                        k = k1
            z[i] = k
            ndk[d, k] += 1
    return z, ndk


@pytest.mark.parametrize("n_cycles", [1, 2])
@pytest.mark.parametrize("tables", ["all", "partial-scan", "partial-prior"])
@pytest.mark.parametrize("alpha", [0.3, (0.1, 0.6, 1.7, 0.05)], ids=["symmetric", "asymmetric"])
def test_cycle_sweep_replays_its_documented_steps(alpha, tables, n_cycles):
    """``_sweep_supervised_cycle`` draws exactly what :func:`_cycle_replay` (its docstrings
    in plain Python) draws, sweep after sweep (z and n_dk compared exactly; a decision could
    differ only for a uniform within rounding of its ratio): documents of 0-8 tokens (longer
    than the look-ahead), K = 4, a word with a zero in Phi, ``doc_offset`` 3.  The
    exact-posterior tests above check the law; this one checks the documented draws."""
    from dolda.sampler.alias import build_alias_tables
    from dolda.sampler.alpha import as_alpha
    from dolda.sampler.cycle import _sweep_supervised_cycle

    p = tiny_problem(seed=5, n_docs=7, n_topics=4, n_classes=3, n_words=9)
    phi = p["phi"].copy()
    phi[1, 4] = 0.0  # word 4 cannot come from topic 1
    phi /= phi.sum(axis=1, keepdims=True)
    phi_wk = np.ascontiguousarray(phi.T, dtype=np.float32)
    alpha = as_alpha(np.asarray(alpha) if isinstance(alpha, tuple) else alpha, 4)
    rows = (np.array([0, -1, 1, -1, 2, -1, 3, 4, -1], np.int32) if tables != "all"
            else np.arange(9, dtype=np.int32))
    t = build_alias_tables(phi_wk, rows, alpha=alpha)
    scan_rare = tables != "partial-prior"
    base = p["a"] - p["X"] @ p["eta_x"].T
    z, ndk = p["z"].copy(), p["ndk"].copy()
    assert np.diff(p["doc_ptr"]).max() > 4 and np.diff(p["doc_ptr"]).min() == 0
    moved = 0
    for it in range(6):
        want_z, want_ndk = _cycle_replay(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, t.prob,
                                         t.alias, t.mass, rows, alpha, p["eta_t"], base, 11,
                                         it, 3, n_cycles, scan_rare)
        before = z.copy()
        _sweep_supervised_cycle(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, t.prob, t.alias,
                                t.mass, rows, alpha, p["eta_t"], base, 11, it, 3, n_cycles,
                                scan_rare)
        np.testing.assert_array_equal(z, want_z)
        np.testing.assert_array_equal(ndk, want_ndk)
        moved += int((z != before).sum())
    assert moved > 10  # the chain moves: the test compares draws, not a frozen state


def test_cycle_wrapper_derives_the_word_bucket_tables_from_the_plain_ones():
    """``sweep_supervised_cycle`` takes the plain tables of ``phi_{.,w}``: with a symmetric
    alpha it keeps them and scales ``mass`` by alpha, otherwise it builds the word-bucket
    tables of ``alpha_k phi_{k,w}``; either way it draws what the kernel draws from the
    word-bucket tables (the replay), and it updates ``z`` and ``n_dk`` in place."""
    from dolda.sampler.alias import build_alias_tables
    from dolda.sampler.alpha import as_alpha
    from dolda.sampler.cycle import sweep_supervised_cycle

    p = tiny_problem(seed=6, n_docs=6, n_topics=4, n_classes=2, n_words=9)
    phi_wk = np.ascontiguousarray(p["phi"].T, dtype=np.float32)
    rows = np.array([0, -1, 1, 2, -1, 3, 4, 5, -1], np.int32)
    plain = build_alias_tables(phi_wk, rows)
    base = p["a"] - p["X"] @ p["eta_x"].T
    for alpha in (0.7, np.array([0.1, 0.6, 1.7, 0.05])):
        full = as_alpha(alpha, 4)
        bucket = build_alias_tables(phi_wk, rows, alpha=full)
        z, ndk = p["z"].copy(), p["ndk"].copy()
        for it in range(4):
            want_z, want_ndk = _cycle_replay(p["tokens"], p["doc_ptr"], z, ndk, phi_wk,
                                             bucket.prob, bucket.alias, bucket.mass, rows, full,
                                             p["eta_t"], base, 2, it, 0, 1, True)
            sweep_supervised_cycle(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, plain.prob,
                                   plain.alias, plain.mass.copy(), rows, alpha, p["eta_t"],
                                   base, 2, it)
            np.testing.assert_array_equal(z, want_z)
            np.testing.assert_array_equal(ndk, want_ndk)
