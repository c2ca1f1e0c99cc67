"""Kept posterior draws: stored in float32, summarised in float64.

The chains run in float64: their state (eta, the Horseshoe scales, the latent
utilities, ...) and hence checkpoints, resumes and the chain a seed gives are
exact.  What a fit keeps of that state -- the draws of eta (S, L, P), of the
local scales lambda (S, L, P) and of the global scales tau (S, L) -- is stored
rounded to float32: half the memory and disk of the largest arrays of a fit
(0.48 GB of draws become 0.24 GB at the defaults on 20 Newsgroups with K = 1000).
Seven significant digits are far below the Monte Carlo error of any summary of a
few hundred draws.

Summaries read the draws in float64: means accumulate in float64, quantiles and
linear predictors convert one slice of draws at a time, never all of them at once.
Model files written before the draws were float32 keep their float64 draws as saved
(every reader accepts both).

The word block.  With word covariates the draws of the word columns'
coefficients are most of the draws (S x L x 83,488 on 20 Newsgroups with every kept word:
1.67 GB in float32), so a DOLDA fit keeps them in float16 (:data:`WORD_DRAW_DTYPE`,
relative rounding at most 2**-11) beside the other columns in float32, as one
:class:`BlockDraws`; the word columns' local scales are not kept per draw at all, only
as per-column summaries and per-row sums (``dolda.models.dolda.kept``).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

#: dtype of the kept draws of eta, lambda and tau.
DRAW_DTYPE = np.dtype(np.float32)


def new_draws(shape):
    """Zeroed storage for ``shape`` kept draws (zero also marks draws not made yet)."""
    return np.zeros(shape, dtype=DRAW_DTYPE)


def as_draws(draws):
    """``draws`` in :data:`DRAW_DTYPE` (None stays None; float32 input is not copied)."""
    return None if draws is None else np.asarray(draws, dtype=DRAW_DTYPE)


def draw_mean(draws, axis=0):
    """Mean over the draw axis, accumulated in float64 (no float64 copy of ``draws``; block
    draws (:class:`BlockDraws`) averaged block by block)."""
    if isinstance(draws, BlockDraws) and axis == 0:
        rest = np.mean(draws.rest, axis=0, dtype=np.float64)
        words = np.mean(draws.words, axis=0, dtype=np.float64)
        return np.concatenate([rest[:, :draws.start], words, rest[:, draws.start:]], axis=1)
    return np.mean(draws, axis=axis, dtype=np.float64)


def draw_quantiles(draws, q):
    """``np.quantile(draws, q, axis=0)`` in float64, one slice of axis 1 at a time.

    Parameters
    ----------
    draws : (S, L, ...) float32 or float64
    q : sequence of float in [0, 1]

    Returns
    -------
    float64 ndarray (len(q), L, ...)
    """
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    if not isinstance(draws, BlockDraws):  # block draws: assembled one class at a time
        draws = np.asarray(draws)
    out = np.empty((len(q),) + draws.shape[1:])
    for j in range(draws.shape[1]):
        out[:, j] = np.quantile(np.asarray(draws[:, j], dtype=np.float64), q, axis=0)
    return out


# ------------------------------------------------------------------ the word block
#: dtype of the kept draws of the word covariates' coefficients: 2 bytes.
WORD_DRAW_DTYPE = np.dtype(np.float16)

#: Largest magnitude a float16 word draw holds (beyond it, stored at this bound).
WORD_DRAW_MAX = float(np.finfo(np.float16).max)


def as_word_draws(values):
    """``values`` (float64 chain state or float32 draws) as stored word draws: rounded to
    float32 first, then to float16, so that float32 draws of older files and checkpoints
    convert to exactly what a new chain stores; clipped to +-:data:`WORD_DRAW_MAX`.

    float16 keeps 11 significant bits: a relative error of at most 2**-11 (4.9e-4) per
    coefficient, absolute below 3e-8 for coefficients under 6e-5 (subnormals).
    """
    x = np.asarray(values, dtype=np.float32)
    return np.clip(x, -WORD_DRAW_MAX, WORD_DRAW_MAX).astype(WORD_DRAW_DTYPE)


def _dense(value):
    """``value`` with every :class:`BlockDraws` in it (also inside lists, tuples and
    dicts, as numpy functions take them) materialised as an ndarray."""
    if isinstance(value, BlockDraws):
        return value[:]
    if isinstance(value, (list, tuple)):
        return type(value)(_dense(v) for v in value)
    if isinstance(value, dict):
        return {k: _dense(v) for k, v in value.items()}
    return value


class BlockDraws(NDArrayOperatorsMixin):
    """Kept draws (S, L, P) of eta stored as two blocks: the word columns ``[start, stop)``
    in float16 (:data:`WORD_DRAW_DTYPE`), every other column (intercept, covariates,
    topics) in float32 (:data:`DRAW_DTYPE`).

    Reads like a read-only float32 ndarray of shape (S, L, P): ``len``, ``shape``,
    ``ndim``, ``nbytes`` (what is stored), and indexing, which assembles only what is asked
    for (``draws[s0:s1]``, ``draws[:, l]``, ``draws[..., cols]``; an index per axis, applied
    axis by axis).  ``np.asarray(draws)`` builds the whole float32 (S, L, P) array: what
    the block layout avoids, so the library's own readers index slices instead.

    Under numpy's idioms it stands for that array: ufuncs and arithmetic
    (``draws * 2``, ``np.exp(draws)``), numpy functions (``np.mean(draws, axis=0)``,
    ``np.quantile``, ``np.concatenate``), iteration over the draws and the reductions
    ``sum``, ``mean``, ``std``, ``var``, ``min``, ``max`` materialise it and answer as
    the dense array does; only ``mean(axis=0)`` (:func:`draw_mean`) works block by
    block, in float64.  It is read-only: in-place operations are refused.
    """

    __array_priority__ = 0  # numpy converts it through __array__ when a function needs it

    def __init__(self, rest, words, start):
        rest = np.asarray(rest)
        words = np.asarray(words)
        if rest.ndim != 3 or words.ndim != 3 or rest.shape[:2] != words.shape[:2]:
            raise ValueError(f"word draws {words.shape} and other draws {rest.shape} must be "
                             "(S, L, .) arrays of the same S and L")
        if not 0 <= int(start) <= rest.shape[2]:
            raise ValueError(f"word block start {start} outside 0..{rest.shape[2]}")
        self.rest, self.words, self.start = rest, words, int(start)

    # ------------------------------------------------------------ ndarray-like
    @property
    def stop(self):
        return self.start + self.words.shape[2]

    @property
    def shape(self):
        return self.rest.shape[:2] + (self.rest.shape[2] + self.words.shape[2],)

    ndim = 3

    @property
    def dtype(self):
        return np.result_type(self.rest.dtype, np.float32)

    @property
    def nbytes(self):
        return self.rest.nbytes + self.words.nbytes

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __len__(self):
        return self.rest.shape[0]

    def __repr__(self):
        return (f"BlockDraws(shape={self.shape}, words=[{self.start}, {self.stop}) "
                f"{self.words.dtype}, other columns {self.rest.dtype})")

    def __array__(self, dtype=None, copy=None):
        if copy is False:  # numpy 2: the caller asked for no copy, which cannot be had
            raise ValueError("BlockDraws are stored as two blocks: an array of them is "
                             "always a copy (use copy=None or True)")
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if any(isinstance(o, BlockDraws) for o in kwargs.get("out", ())):
            raise TypeError("BlockDraws are read-only: write the result to an array "
                            "(np.asarray(draws) first)")
        return getattr(ufunc, method)(*_dense(inputs), **_dense(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return func(*_dense(args), **_dense(kwargs))

    def __iter__(self):
        for s in range(len(self)):
            yield self[s]

    def __bool__(self):
        raise ValueError("the truth value of BlockDraws (an array) is ambiguous; use "
                         "np.asarray(draws).any() or .all()")

    def tolist(self):
        return self[:].tolist()

    def _rest_columns(self, cols):
        return np.where(cols < self.start, cols, cols - self.words.shape[2])

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if any(k is Ellipsis for k in key):
            i = next(i for i, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (3 - len(key) + 1) + key[i + 1:]
        if len(key) > 3:
            raise IndexError(f"too many indices for draws of shape {self.shape}")
        key = key + (slice(None),) * (3 - len(key))
        rows = key[:2]
        rest, words = self.rest[rows], self.words[rows]
        col = key[2]
        if isinstance(col, slice) and col == slice(None):
            return np.concatenate([rest[..., :self.start],
                                   words.astype(self.dtype),
                                   rest[..., self.start:]], axis=-1)
        scalar = isinstance(col, (int, np.integer))
        cols = np.arange(self.shape[2])[col]
        cols = np.atleast_1d(cols)
        out = np.empty(rest.shape[:-1] + (len(cols),), dtype=self.dtype)
        in_words = (cols >= self.start) & (cols < self.stop)
        out[..., in_words] = words[..., cols[in_words] - self.start]
        out[..., ~in_words] = rest[..., self._rest_columns(cols[~in_words])]
        return out[..., 0] if scalar else out

    def astype(self, dtype, copy=True):
        """The whole (S, L, P) array in ``dtype`` (as ``np.asarray(draws, dtype)``)."""
        del copy
        return np.asarray(self[:], dtype=dtype)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        """As ``ndarray.mean``; over the draws (``axis=0``, no other argument) block by
        block in float64 (:func:`draw_mean`), without the whole array."""
        if axis == 0 and dtype is None and out is None and not keepdims:
            return draw_mean(self)
        return self[:].mean(axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return self[:].sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return self[:].std(axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return self[:].var(axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return self[:].min(axis=axis, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return self[:].max(axis=axis, out=out, keepdims=keepdims)

    # ------------------------------------------------------------ storage
    def take_draws(self, index):
        """The draws ``index`` (axis 0) in the same block layout."""
        return BlockDraws(self.rest[index], self.words[index], self.start)

    @staticmethod
    def concatenate(parts):
        """Draws of several chains, one after the other, in the block layout."""
        return BlockDraws(np.concatenate([p.rest for p in parts]),
                          np.concatenate([p.words for p in parts]), parts[0].start)


def split_columns(draws, start, stop):
    """``(rest, words)`` of full (S, L, P) ``draws``: the columns outside ``[start, stop)``
    as :data:`DRAW_DTYPE` and those inside as :func:`as_word_draws`."""
    draws = np.asarray(draws)
    rest = np.concatenate([draws[:, :, :start], draws[:, :, stop:]], axis=2)
    return as_draws(rest), as_word_draws(draws[:, :, start:stop])
