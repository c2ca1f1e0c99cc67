"""Rank-normalised split R-hat and bulk ESS of many quantities at once (Vehtari et al.
2021), vectorised over the trailing axes: the statistics under every convergence verdict
(:mod:`dolda.evaluate.convergence`), the report's table and the stability of reported signals.
"""

from __future__ import annotations

import numpy as np

#: Largest split R-hat taken as converged (1.01 is Vehtari et al.'s strict value for final
#: inference; short topic-model chains are judged at 1.05).  The bar of every verdict
#: (:mod:`dolda.evaluate.convergence`) and of the reported signals' figures
#: (:mod:`dolda.interpret.stability`).
RHAT_MAX = 1.05


def _split_chains(draws):
    """(C, S, ...) -> (2C, S//2, n) float64: every chain cut in two halves, quantities
    flattened (float32 draws are converted by the concatenation, the one copy made)."""
    x = np.asarray(draws)
    C, S = x.shape[:2]
    x = x.reshape(C, S, -1)
    half = S // 2
    return np.concatenate([x[:, :half], x[:, S - half:]], axis=0, dtype=np.float64)


def _z_scale(a):
    """Rank-normalise (M, N, n) over all draws of every quantity (Vehtari et al. 2021)."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    flat = a.reshape(-1, a.shape[-1])
    ranks = rankdata(flat, axis=0, method="average")
    return ndtri((ranks - 0.375) / (flat.shape[0] + 0.25)).reshape(a.shape)


def split_rhat(draws):
    """Rank-normalised split R-hat (Vehtari et al. 2021) of many quantities at once.

    The statistic of :func:`arviz.rhat` (``method="rank"``: the larger of the
    bulk and the folded split R-hat), vectorised over the trailing axes, which
    makes it usable on thousands of coefficients in a second.

    Parameters
    ----------
    draws : float (C, S, ...)
        Chains, draws, then any shape.

    Returns
    -------
    float array of shape ``draws.shape[2:]`` (NaN when fewer than 4 draws per
    chain, or for a constant quantity).
    """
    rest = np.shape(draws)[2:]
    if np.shape(draws)[1] < 4:
        return np.full(rest, np.nan)
    split = _split_chains(draws)

    def rhat(a):
        n = a.shape[1]
        means = a.mean(axis=1)
        within = a.var(axis=1, ddof=1).mean(axis=0)
        between = n * means.var(axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sqrt(((n - 1) / n * within + between / n) / within)

    flat = split.reshape(-1, split.shape[-1])
    bulk = rhat(_z_scale(split))
    folded = rhat(_z_scale(np.abs(split - np.median(flat, axis=0))))
    out = np.maximum(bulk, folded)
    out[np.ptp(flat, axis=0) == 0] = np.nan
    return out.reshape(rest)


def bulk_ess(draws):
    """Bulk effective sample size (rank-normalised split chains) of many quantities at once.

    Autocorrelations from the FFT of every split chain, combined over chains
    as in Vehtari et al. (2021, eq. 10); the sum of autocorrelations is
    truncated by Geyer's initial monotone sequence (pairs of lags, cut at the
    first negative pair sum, made non-increasing).  Agrees with
    ``arviz.ess(method="bulk")`` to a few percent.

    Parameters
    ----------
    draws : float (C, S, ...)

    Returns
    -------
    float array of shape ``draws.shape[2:]`` (NaN for fewer than 4 draws per
    chain or a constant quantity).
    """
    rest = np.shape(draws)[2:]
    if np.shape(draws)[1] < 4:
        return np.full(rest, np.nan)
    split = _split_chains(draws)
    flat = split.reshape(-1, split.shape[-1])
    constant = np.ptp(flat, axis=0) == 0
    z = _z_scale(split)
    M, N, _ = z.shape
    centred = z - z.mean(axis=1, keepdims=True)
    spectrum = np.fft.rfft(centred, n=2 * N, axis=1)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=2 * N, axis=1)[:, :N] / N  # (M, N, n)
    within = acov[:, 0].mean(axis=0) * N / (N - 1)
    var_plus = within * (N - 1) / N
    if M > 1:
        var_plus = var_plus + z.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (within - acov.mean(axis=0)) / var_plus  # (N, n)
    n_pairs = N // 2
    pairs = rho[:2 * n_pairs:2] + rho[1:2 * n_pairs:2]  # Gamma_m, (n_pairs, n)
    negative = pairs < 0
    negative[0] = False
    cut = np.where(negative.any(axis=0), negative.argmax(axis=0), n_pairs)
    monotone = np.minimum.accumulate(pairs, axis=0)
    keep = np.arange(n_pairs)[:, None] < cut[None, :]
    tau = -1.0 + 2.0 * np.where(keep, monotone, 0.0).sum(axis=0)
    # the positive even lag of the first negative pair still counts (Geyer; as in Stan)
    after = rho[np.minimum(2 * cut, N - 1), np.arange(rho.shape[1])]
    tau = tau + np.where((cut < n_pairs) & (after > 0), after, 0.0)
    total = M * N
    tau = np.maximum(tau, 1.0 / np.log10(total))
    ess = total / tau
    ess[constant] = np.nan
    return ess.reshape(rest)
