"""The Phi step of the partially collapsed sampler (paper section 3.1): phi_k ~ Dir(beta + n_k),
one topic per parallel task, drawn straight into the word-major layout (V x K) the sweeps read.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import STEP_INIT, STEP_PHI, log_gamma_variate, mix64, stream
from .counts import _INIT_PHI_BLOCK, SparseCounts
from .gamma import _integer_inverse, gamma_small_row, gamma_span, log_gamma_small, span_constants
from .sums import sum4


#: The non-zero entries of a row draw from ``mix64(s0 ^ _NONZERO_TAG)``, ``s0`` the row's stream.
_NONZERO_TAG = np.uint64(0xD1B54A32D192ED03)


@njit(cache=True)
def draw_topic_row(k, ptr, words, counts, beta, n_int, state, row):
    """``phi_k ~ Dir(beta + n_{k,.})`` into ``row`` (V,) float64; returns the stream state.

    :func:`topic_row_unnormalised`, then ``row /= total``.
    """
    inv, state = topic_row_unnormalised(k, ptr, words, counts, beta, n_int, state, row)
    for w in range(len(row)):
        row[w] *= inv
    return state


@njit(cache=True)
def topic_row_unnormalised(k, ptr, words, counts, beta, n_int, state, row):
    """The variates of ``phi_k ~ Dir(beta + n_{k,.})`` into ``row`` (V,) float64, before
    normalisation; returns ``(1 / their total, stream state)``.

    ``n_{k,.}`` is given sparsely (:class:`SparseCounts` arrays).  A topic
    holding tokens is drawn in linear space (the ``Gamma(beta + n >= 1)``
    variates bound the total from below, so nothing relevant underflows): the
    zero-count entries by the vectorised :func:`gamma_small_row` on the row's
    stream ``state``, then the non-zero ones, ``Gamma(beta + n)``, from the
    stream ``mix64(state ^ _NONZERO_TAG)``.  An empty topic, all of whose
    variates may be ~exp(-1000), is drawn and normalised in log space, entry
    by entry from ``state``.
    """
    n_words = len(row)
    p, end = ptr[k], ptr[k + 1]
    if end > p and beta < 1.0:
        gamma_small_row(state, beta, n_int, row)
        state = mix64(state ^ _NONZERO_TAG)
        for q in range(p, end):
            g, state = log_gamma_variate(beta + counts[q], state)
            row[words[q]] = math.exp(g)
        total = sum4(row, n_words)  # four running sums: the additions need not wait
    else:
        next_w = words[p] if p < end else n_words
        top = -np.inf
        for w in range(n_words):
            if w == next_w:
                g, state = log_gamma_variate(beta + counts[p], state)
                p += 1
                next_w = words[p] if p < end else n_words
            elif beta < 1.0:
                g, state = log_gamma_small(beta, state)
            else:
                g, state = log_gamma_variate(beta, state)
            row[w] = g
            if g > top:
                top = g
        total = 0.0
        for w in range(n_words):
            e = math.exp(row[w] - top)
            row[w] = e
            total += e
    return 1.0 / total, state


@njit(cache=True, parallel=True)
def _draw_phi(ptr, words, counts, beta, n_int, seed, step, block_offset, phi):
    for k in prange(phi.shape[0]):
        state = stream(seed, step, block_offset + k)
        draw_topic_row(np.int64(k), ptr, words, counts, beta, n_int, state, phi[k])


def _phi_step(iteration):
    if iteration < 0:
        return STEP_INIT, _INIT_PHI_BLOCK
    return int(iteration) * 16 + STEP_PHI, 0


def draw_phi(nkw, beta, seed, iteration):
    """Draw ``phi_k ~ Dir(beta + n_{k,.})`` for every topic, parallel over topics.

    Each topic draws ``G_{k,w} ~ Gamma(beta + n_{k,w})`` and normalises
    (:func:`draw_topic_row`); an empty topic is drawn in log space, so the
    paper's ``beta = 0.01`` never underflows to a row of zeros.

    Parameters
    ----------
    nkw : int (K, V)
        Topic-word counts ``n_{k,w}``.
    beta : float
        Dirichlet prior of the topics.
    seed : int
        Chain seed.
    iteration : int
        Gibbs iteration ``t`` (streams ``t*16 + STEP_PHI``); ``-1`` draws the
        initial Phi from distinct streams.

    Returns
    -------
    phi : float64 (K, V)
        ``Phi``, rows sum to one.
    """
    nkw = np.asarray(nkw)
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(nkw.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nkw.shape[0]), out=ptr[1:])
    phi = np.empty(nkw.shape, np.float64)
    step, offset = _phi_step(iteration)
    _draw_phi(ptr, cols.astype(np.int32), nkw[rows, cols].astype(np.int32), float(beta),
              _integer_inverse(float(beta)), np.int64(seed), np.int64(step),
              np.int64(offset), phi)
    return phi


#: Entries (topics x words) of one tile of the word-major Phi draw: 32 768 float64 = 256 KB,
#: which stay in the cache between being drawn and being written out as whole rows.
_PHI_TILE_ENTRIES = 1 << 15
#: Entries of the float32 ``phi_wk`` below this are stored as 0 (no denormals).
_FLOAT32_TINY = 1e-37


@njit(cache=True)
def _phi_tiles(t_lo, t_hi, width, ptr, words, beta, n_int, s0, linear, floor, nz_values,
               phi_wk, partial):
    """Tiles ``t_lo .. t_hi-1`` of ``width`` words of the word-major draw, unnormalised:
    every topic's variates over the tile's words (the zero-count ones by
    :func:`dolda.sampler.gamma.gamma_span`, the non-zero ones from ``nz_values``),
    written out as whole rows of ``phi_wk``; ``partial[t, k]`` receives the tile's sum."""
    n_words, n_topics = phi_wk.shape
    constants = span_constants(beta, n_int)
    tile = np.zeros((n_topics, width))
    nxt = np.empty(n_topics, np.int64)  # each topic's next non-zero entry
    for k in range(n_topics):
        p, end = ptr[k], ptr[k + 1]
        nxt[k] = p + np.searchsorted(words[p:end], t_lo * width)
    for t in range(t_lo, t_hi):
        w0 = t * width
        n = min(width, n_words - w0)
        for k in range(n_topics):
            if not linear[k]:
                continue
            row = tile[k]
            gamma_span(s0[k], constants, row, w0, n)
            q, end = nxt[k], ptr[k + 1]
            while q < end and words[q] < w0 + n:
                row[words[q] - w0] = nz_values[q]
                q += 1
            nxt[k] = q
            partial[t, k] = sum4(row, n)
        for i in range(n):
            for k in range(n_topics):
                g = tile[k, i]
                phi_wk[w0 + i, k] = g if g >= floor[k] else 0.0


#: Phases of :func:`_phi_parts`, the word-major draw's one parallel kernel.
_PHASE_NONZERO, _PHASE_TILES, _PHASE_SCALE = 0, 1, 2
#: Parallel tasks of a phase of :func:`_phi_parts` (at most).
_PHI_PARTS = 64


@njit(cache=True)
def _nonzero_variates(k, ptr, counts, beta, seed, step, block_offset, s0, linear, floor,
                      nz_values):
    """Topic ``k``'s stream ``s0[k]`` and, for a topic holding tokens (``beta < 1``), its
    non-zero variates ``Gamma(beta + n)`` from the stream ``mix64(s0 ^ _NONZERO_TAG)`` in
    word order; their sum bounds the row's total from below, so ``floor[k]``, ``1e-37`` of
    it, is under what normalisation leaves non-zero."""
    state = stream(seed, step, block_offset + k)
    s0[k] = state
    p, end = ptr[k], ptr[k + 1]
    if end > p and beta < 1.0:
        linear[k] = True
        state = mix64(state ^ _NONZERO_TAG)
        acc = 0.0
        for q in range(p, end):
            g, state = log_gamma_variate(beta + counts[q], state)
            g = math.exp(g)
            nz_values[q] = g
            acc += g
        floor[k] = _FLOAT32_TINY * acc


@njit(cache=True)
def _scale_words(w_lo, w_hi, inv, phi_wk):
    """Rows ``w_lo .. w_hi-1`` of ``phi_wk`` times ``inv`` (per topic), entries below
    ``1e-37`` stored as 0."""
    for w in range(w_lo, w_hi):
        for k in range(phi_wk.shape[1]):
            v = phi_wk[w, k] * inv[k]
            phi_wk[w, k] = v if v >= _FLOAT32_TINY else 0.0


@njit(cache=True, parallel=True)
def _phi_parts(phase, n_parts, ptr, words, counts, beta, n_int, seed, step, block_offset,
               s0, linear, floor, nz_values, width, partial, inv, phi_wk):
    """One phase of the word-major draw (:func:`draw_phi_word_major`), ``n_parts`` parallel
    tasks, each a contiguous share of the phase's units: topics (``_PHASE_NONZERO``),
    tiles of ``width`` words (``_PHASE_TILES``) or words (``_PHASE_SCALE``).  The three
    phases are one kernel so that numba builds one parallel region, not three (each costs
    seconds of the first run's compile); the result does not depend on ``n_parts``."""
    n_words, n_topics = phi_wk.shape
    n_tiles = partial.shape[0]
    for part_ in prange(n_parts):
        part = np.int64(part_)  # the parallel body's index is unsigned: one signature
        if phase == _PHASE_NONZERO:
            for k in range(part * n_topics // n_parts, (part + 1) * n_topics // n_parts):
                _nonzero_variates(np.int64(k), ptr, counts, beta, seed, step, block_offset,
                                  s0, linear, floor, nz_values)
        elif phase == _PHASE_TILES:
            _phi_tiles(part * n_tiles // n_parts, (part + 1) * n_tiles // n_parts, width, ptr,
                       words, beta, n_int, s0, linear, floor, nz_values, phi_wk, partial)
        else:
            _scale_words(part * n_words // n_parts, (part + 1) * n_words // n_parts, inv,
                         phi_wk)


def _draw_phi_wk(ptr, words, counts, beta, n_int, seed, step, block_offset, phi_wk):
    """The word-major draw (:func:`draw_phi_word_major`), in four passes:

    1. per topic: its stream ``s0`` and its non-zero variates (:func:`_nonzero_variates`);
    2. per tile of words: every topic's variates over the tile (the same values as
       :func:`topic_row_unnormalised`, since each zero-count entry reads only its own
       counters), written as whole rows of ``phi_wk`` (:func:`_phi_tiles`);
    3. per topic: the total, as the tiles' sums in tile order (the same for any number
       of threads); an empty topic (or ``beta >= 1``) is drawn in log space by
       :func:`draw_topic_row` into its column instead; that kernel is compiled only when
       a draw first needs it;
    4. per word: the row times ``1 / total``, entries below ``1e-37`` stored as 0.

    Passes 1, 2 and 4 run in parallel (:func:`_phi_parts`).
    """
    n_words, n_topics = phi_wk.shape
    s0 = np.empty(n_topics, np.uint64)
    linear = np.zeros(n_topics, np.bool_)
    floor = np.zeros(n_topics)
    nz_values = np.empty(len(counts))
    width = max(128, _PHI_TILE_ENTRIES // n_topics)
    n_tiles = (n_words + width - 1) // width
    partial = np.zeros((n_tiles, n_topics))
    inv = np.ones(n_topics)
    args = (ptr, words, counts, beta, n_int, seed, step, block_offset, s0, linear, floor,
            nz_values, np.int64(width), partial, inv, phi_wk)
    _phi_parts(_PHASE_NONZERO, np.int64(min(n_topics, _PHI_PARTS)), *args)
    _phi_parts(_PHASE_TILES, np.int64(min(n_tiles, _PHI_PARTS)), *args)
    totals = np.cumsum(partial, axis=0)[-1]  # the tiles' sums added in tile order
    inv[linear] = 1.0 / totals[linear]
    for k in np.flatnonzero(~linear):
        row = np.empty(n_words)
        draw_topic_row(np.int64(k), ptr, words, counts, beta, n_int, s0[k], row)
        phi_wk[:, k] = np.where(row >= _FLOAT32_TINY, row, 0.0)
    _phi_parts(_PHASE_SCALE, np.int64(min(n_words, _PHI_PARTS)), *args)


def draw_phi_word_major(counts: "SparseCounts", beta, seed, iteration, out):
    """The Phi draw of :func:`draw_phi` written straight into word-major float32.

    Same streams and the same variates as :func:`draw_phi` (so the values agree
    to within one float32 ulp: the unnormalised variate is rounded to float32, then
    scaled; entries below 1e-37 are stored as 0, which keeps denormals out of the
    z-sweeps), but from :class:`SparseCounts` and without a K x V float64
    intermediate: the words are drawn in tiles, every topic's variates over a tile
    kept in the cache and written out as whole rows (:func:`_draw_phi_wk`), so the
    parallel tasks are tiles of words, not topics, and any K keeps both cores busy.
    The result does not depend on the number of threads.

    Parameters
    ----------
    counts : SparseCounts
        ``n_{k,w}``.
    beta : float
    seed, iteration : int
        As :func:`draw_phi`.
    out : float32 (V, K)
        Receives ``phi_wk = Phi^T``.
    """
    step, offset = _phi_step(iteration)
    _draw_phi_wk(counts.ptr, counts.words, counts.counts, float(beta),
                 _integer_inverse(float(beta)), np.int64(seed), np.int64(step),
                 np.int64(offset), out)
    return out


class PhiRecipe(NamedTuple):
    """A Phi draw given by what it was drawn from, to be repeated elsewhere.

    :func:`draw_phi_word_major` is a function of ``(counts, beta, seed, iteration)``
    alone: every topic reads its own stream, fixed by the seed and the iteration,
    whatever the number of threads. So :meth:`draw` on a Dask worker gives the
    driver's float32 Phi bit for bit. The recipe holds one ``(word, count)`` pair
    per non-zero ``n_{k,w}`` (at most one per token), where Phi itself is V x K
    floats.

    Attributes
    ----------
    counts : SparseCounts   ``n_{k,w}`` that Phi was drawn from.
    beta : float
    seed, iteration : int   as :func:`draw_phi`.
    n_words : int           ``V``.
    """

    counts: SparseCounts
    beta: float
    seed: int
    iteration: int
    n_words: int

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what travels, besides four numbers)."""
        return int(sum(a.nbytes for a in self.counts))

    def draw(self):
        """The float32 word-major Phi (V, K) this recipe was drawn as."""
        out = np.empty((self.n_words, len(self.counts.ptr) - 1), np.float32)
        return draw_phi_word_major(self.counts, self.beta, self.seed, self.iteration, out)


@njit(cache=True, parallel=True)
def _transpose(phi, out):
    n_topics, n_words = phi.shape
    block = 64
    n_blocks = (n_words + block - 1) // block
    for b in prange(n_blocks):
        lo = b * block
        hi = min(lo + block, n_words)
        for k in range(n_topics):
            for w in range(lo, hi):
                out[w, k] = phi[k, w]


def word_major(phi):
    """``phi_wk = Phi^T``, float64 (V, K) contiguous: the layout the z-sweeps read."""
    out = np.empty((phi.shape[1], phi.shape[0]), np.float64)
    _transpose(np.ascontiguousarray(phi, dtype=np.float64), out)
    return out


# --------------------------------------------------------------- alias tables
