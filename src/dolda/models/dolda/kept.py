"""What one DOLDA chain keeps of its state: the kept draws, with the word block compact.

The chain runs in float64; what it keeps (:mod:`dolda.utils.draws`):

* eta: every kept draw, the word columns in float16 (``eta_word_draws``), the other
  columns (intercept, covariates, topics) in float32 (``eta_draws``);
* the global scales tau: every kept draw, float32 (``tau_draws``);
* the local scales lambda: every kept draw of the non-word columns, float32
  (``lambda_draws``); of the word columns only their sums over the iterations ``phi_``
  is averaged over (the last ``phi_draws``: every iteration from ``phi_from``),
  ``lambda_word_sums`` (2, L, n_words) float64, ``[sum lambda, sum lambda^2]``, and, for
  the training rows that hold a word column no other row holds (a *singleton* column,
  whose coefficient only that row informs), ``sum_j u_dj^2 lambda_lj^2`` over those
  columns at every kept draw (``lambda_word_rows`` (S, D_s, L) float32,
  ``lambda_word_row_ids`` (D_s,)): what the calibration map's leave-one-out pass needs
  of the word columns' lambda (:func:`dolda.posterior.calibration.loo_draws`), as from
  every draw of them up to float32 rounding of the sums.

The sums run over the same window as the running mean of Phi, so a chain extended
(:mod:`dolda.models.dolda.extend`, whose window always lies after the old end) or
resumed continues them exactly: the sums of a resumed chain are those of an
uninterrupted one, bit for bit.  Without word columns the layout is the one before
(``eta_draws``, ``lambda_draws`` over every column).
"""

from __future__ import annotations

import numpy as np

from ...utils.draws import BlockDraws, as_draws, as_word_draws, new_draws, split_columns


class KeptDraws:
    """The kept draws of one chain (see the module doc).

    ``start``/``stop``: the word columns ``[start, stop)`` of eta (``stop == start``:
    none); ``window_from``: the first iteration of the lambda window (``phi_from``).
    """

    def __init__(self, eta, eta_words, tau, lam, lam_word_sums, start, window_from):
        self.eta, self.eta_words, self.tau, self.lam = eta, eta_words, tau, lam
        self.lam_word_sums = lam_word_sums
        self.start = int(start)
        self.n_words = 0 if eta_words is None else eta_words.shape[2]
        self.window_from = int(window_from)
        self.singles = None  # SingletonRows of the word block (with_singles)
        self.row_var = None  # (S, D_s, L) float32: sum_j u_dj^2 lambda_lj^2

    def with_singles(self, singles, row_var=None):
        """Attach the singleton word rows ``singles`` (:class:`SingletonRows`, or None) and
        their kept values ``row_var`` (zeros when None)."""
        self.singles = singles
        if singles is not None and self.lam is not None:
            self.row_var = (row_var if row_var is not None else
                            np.zeros((len(self.eta), len(singles.rows), self.eta.shape[1]),
                                     dtype=np.float32))
        return self

    # ------------------------------------------------------------ construction
    @classmethod
    def empty(cls, n_keep, n_classes, n_cols, tau_shape, horseshoe, start, n_words,
              window_from):
        """Zeroed storage for ``n_keep`` draws of (n_classes, n_cols) coefficients."""
        n_rest = n_cols - n_words
        words = (np.zeros((n_keep, n_classes, n_words), dtype=as_word_draws(0.0).dtype)
                 if n_words else None)
        return cls(new_draws((n_keep, n_classes, n_rest)), words,
                   new_draws((n_keep,) + tuple(tau_shape)) if horseshoe else None,
                   new_draws((n_keep, n_classes, n_rest)) if horseshoe else None,
                   np.zeros((2, n_classes, n_words)) if horseshoe and n_words else None,
                   start, window_from)

    @classmethod
    def from_checkpoint(cls, arr, start, n_words, window_from, next_iteration):
        """The draws of a checkpoint's arrays ``arr``, in either layout.

        A checkpoint written before the word block was compact (full ``eta_draws`` and
        ``lambda_draws`` over every column) is split as the chain would have stored it
        (float32 draws rounded to float16 give exactly what a new chain keeps); its word
        columns' lambda sums cannot be rebuilt once the window has begun, so such a
        checkpoint is refused then.
        """
        stop = start + n_words
        tau = as_draws(arr.get("tau_draws"))
        if not n_words or "eta_word_draws" in arr:
            words = arr.get("eta_word_draws")
            return cls(as_draws(arr["eta_draws"]),
                       None if words is None else as_word_draws(words), tau,
                       as_draws(arr.get("lambda_draws")),
                       (None if arr.get("lambda_word_sums") is None
                        else np.array(arr["lambda_word_sums"], dtype=np.float64)),
                       start, window_from)
        # the layout without a word block: every column in eta_draws / lambda_draws
        eta, words = split_columns(arr["eta_draws"], start, stop)
        lam = arr.get("lambda_draws")
        sums = None
        if lam is not None:
            full_lam = lam
            if next_iteration > window_from:
                raise ValueError(
                    "the checkpoint was written by an older dolda that kept every draw of the "
                    "word columns' local scales; it can be resumed only before iteration "
                    f"{window_from} (it stopped at {next_iteration}): refit")
            lam = split_columns(lam, start, stop)[0]
            sums = np.zeros((2,) + eta.shape[1:2] + (n_words,))
        out = cls(eta, words, tau, lam, sums, start, window_from)
        out.old_lambda = None if lam is None else full_lam[:, :, start:stop]
        return out

    def attach_singles(self, arr, singles):
        """After :meth:`from_checkpoint`: the singleton rows' kept values from the checkpoint
        (``lambda_word_rows``), or computed from an older checkpoint's word lambda draws."""
        old = getattr(self, "old_lambda", None)
        if singles is None or self.lam is None:
            return self.with_singles(singles)
        if old is not None:  # every draw of every word lambda: the rows' sums from them
            lam2 = np.asarray(old, dtype=np.float64)[:, :, singles.cols] ** 2
            rv = np.stack([singles.values(l2) for l2 in lam2]).astype(np.float32)
            self.old_lambda = None
            return self.with_singles(singles, rv)
        rv = arr.get("lambda_word_rows")
        ids = arr.get("lambda_word_row_ids")
        if rv is None or ids is None or not np.array_equal(ids, singles.rows):
            raise ValueError("the checkpoint's singleton word rows (lambda_word_rows) do not "
                             "match this fit's data: resume with the data it was written for")
        return self.with_singles(singles, np.array(rv, dtype=np.float32))

    def relayout(self, index, n_keep):
        """The draws ``index`` of these as the first of ``n_keep`` (a longer schedule,
        :func:`dolda.models.dolda.extend.extend_draws`); the lambda sums start empty (the
        longer run's window lies after this run's end)."""
        def move(draws):
            if draws is None:
                return None
            out = np.zeros((n_keep,) + draws.shape[1:], dtype=draws.dtype)
            out[:len(index)] = draws[index]
            return out

        sums = None if self.lam_word_sums is None else np.zeros_like(self.lam_word_sums)
        out = KeptDraws(move(self.eta), move(self.eta_words), move(self.tau), move(self.lam),
                        sums, self.start, self.window_from)
        return out.with_singles(self.singles, move(self.row_var))

    # ------------------------------------------------------------ the chain's updates
    def _rest(self, values):
        """The non-word columns of (L, P) ``values``."""
        if not self.n_words:
            return values
        return np.concatenate([values[:, :self.start], values[:, self.start + self.n_words:]],
                              axis=1)

    def keep(self, slot, probit):
        """Store the probit state ``probit`` (eta, tau2, lam2) as kept draw ``slot``."""
        stop = self.start + self.n_words
        self.eta[slot] = self._rest(probit.eta)
        if self.n_words:
            self.eta_words[slot] = as_word_draws(probit.eta[:, self.start:stop])
        if self.tau is not None:
            self.tau[slot] = np.sqrt(probit.tau2)
            self.lam[slot] = np.sqrt(self._rest(probit.lam2))
            if self.row_var is not None:
                self.row_var[slot] = self.singles.values(
                    probit.lam2[:, self.start + self.singles.cols])

    def add_window(self, it, probit):
        """Add iteration ``it``'s word-column local scales to the sums (in the window)."""
        if self.lam_word_sums is None or it < self.window_from:
            return
        lam2 = probit.lam2[:, self.start:self.start + self.n_words]
        self.lam_word_sums[0] += np.sqrt(lam2)
        self.lam_word_sums[1] += lam2

    # ------------------------------------------------------------ output
    def to_arrays(self):
        """The checkpoint's arrays of the kept draws (absent ones None)."""
        return {"eta_draws": self.eta, "eta_word_draws": self.eta_words,
                "tau_draws": self.tau, "lambda_draws": self.lam,
                "lambda_word_sums": self.lam_word_sums,
                "lambda_word_rows": self.row_var,
                "lambda_word_row_ids": None if self.row_var is None else self.singles.rows}

    def eta_draws(self):
        """eta's kept draws: a :class:`dolda.utils.draws.BlockDraws` with word columns, else
        the float32 array."""
        if not self.n_words:
            return self.eta
        return BlockDraws(self.eta, self.eta_words, self.start)


def word_stats(sums, n_window):
    """``[mean lambda, root mean square lambda]`` (2, L, n_words) from summed windows of
    ``n_window`` iterations in all; None without sums."""
    if sums is None:
        return None
    return np.stack([sums[0] / n_window, np.sqrt(sums[1] / n_window)])


class SingletonRows:
    """The word columns only one training row holds, and those rows (see the module doc).

    ``cols`` (n,) word-block indices of the singleton columns, ``rows`` (D_s,) int64 the
    training rows holding at least one, ``squares`` CSR (D_s, n) their ``u_dj^2``.
    """

    def __init__(self, X, start, n_words):
        import scipy.sparse as sp

        words = sp.csc_matrix(X[:, start:start + n_words])
        words.eliminate_zeros()
        self.cols = np.flatnonzero(np.diff(words.indptr) == 1)
        own = sp.csr_matrix(words[:, self.cols])
        self.rows = np.flatnonzero(np.diff(own.indptr)).astype(np.int64)
        self.squares = own[self.rows].power(2).tocsr()

    @classmethod
    def of(cls, X, start, n_words):
        """None without word columns or without a singleton among them."""
        if not n_words:
            return None
        out = cls(X, start, n_words)
        return out if len(out.cols) else None

    def values(self, lam2):
        """``sum_j u_dj^2 lambda_lj^2`` (D_s, L) float32 for ``lam2`` (L, n) of the columns."""
        return np.asarray(self.squares @ np.asarray(lam2, dtype=np.float64).T,
                          dtype=np.float32)
