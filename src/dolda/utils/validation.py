"""Input checks shared by the estimators, with messages that name the problem."""

from __future__ import annotations

import numbers

import numpy as np


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int, or raise naming ``name`` when it is not an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive_float(value, name: str) -> float:
    """Return ``value`` as float, or raise naming ``name`` when it is not finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_alpha(value, n_topics: int, name: str = "alpha", auto=()):
    """The Dirichlet prior of theta: a float > 0, one finite value > 0 per topic, or one
    of the strings ``auto``; returns the float, a float64 array (K,) or the string."""
    if isinstance(value, str):
        if value in auto:
            return value
        allowed = ", ".join(repr(a) for a in auto)
        raise ValueError(f"{name} must be a number > 0, {n_topics} numbers > 0 (one per "
                         f"topic){' or one of ' + allowed if auto else ''}; got {value!r}")
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return check_positive_float(value, name)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or an array of {n_topics} numbers, "
                        f"got {value!r}") from None
    if arr.ndim == 0:
        return check_positive_float(float(arr), name)
    if arr.shape != (int(n_topics),):
        raise ValueError(f"{name} must have one value per topic ({n_topics}), got shape "
                         f"{arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        bad = int(np.flatnonzero(~(np.isfinite(arr) & (arr > 0)))[0])
        raise ValueError(f"{name} must be finite and > 0 for every topic, got {arr[bad]} "
                         f"for topic {bad}")
    return arr


def check_doc_ptr(doc_ptr, n_tokens: int, name: str = "doc_ptr") -> np.ndarray:
    """``doc_ptr`` (D + 1,) as contiguous int64, checked against ``n_tokens`` tokens.

    The kernels read document ``d`` as ``tokens[doc_ptr[d]:doc_ptr[d + 1]]`` without
    bounds checks, so ``doc_ptr`` must be 1-d, start at 0, be non-decreasing and end
    at ``n_tokens``; otherwise a one-line ValueError names the first offending entry.
    """
    doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
    if doc_ptr.ndim != 1 or len(doc_ptr) == 0:
        raise ValueError(f"{name} must be a 1-d array of D + 1 >= 1 document offsets, got "
                         f"shape {doc_ptr.shape}")
    if doc_ptr[0] != 0:
        raise ValueError(f"{name} must start at 0, got {name}[0] = {doc_ptr[0]}")
    down = np.flatnonzero(doc_ptr[1:] < doc_ptr[:-1])
    if len(down):
        d = int(down[0])
        raise ValueError(f"{name} must be non-decreasing: {name}[{d + 1}] = {doc_ptr[d + 1]} "
                         f"< {name}[{d}] = {doc_ptr[d]} (document {d} would have a negative "
                         "length)")
    if doc_ptr[-1] != n_tokens:
        raise ValueError(f"{name} must end at len(tokens) = {n_tokens}, got {name}[-1] = "
                         f"{doc_ptr[-1]}")
    return doc_ptr


#: At most this many entries of Phi (topics x words) are gathered at once by
#: :func:`check_phi_columns` (a bounded temporary, as the prediction's own copy).
PHI_CHECK_ENTRIES = 1 << 22


def check_phi_columns(phi, tokens, name: str = "phi") -> None:
    """Refuse token ids outside ``[0, V)`` and, among the words of ``tokens``, a column
    of ``phi`` (K, V) that is not finite, has a negative value or is zero in every topic.

    The prediction sweeps draw ``z`` from ``p(z = k) ∝ phi_{k,w} (n_{d,k} + alpha_k)``,
    which for a zero column is 0/0.  A fitted model's Phi is a posterior mean, positive
    everywhere, so such a column is corrupt or hand-made input; only the words the
    documents use are checked (their columns are the only ones the sweeps read, and the
    check costs O(K x distinct words), as the sweeps' own set-up, not O(K x V)).
    Raises a one-line ValueError naming the first offending word id.
    """
    tokens = np.asarray(tokens)
    n_words = phi.shape[1]
    if tokens.size and (tokens.min() < 0 or tokens.max() >= n_words):
        raise ValueError(f"token ids must lie in [0, {n_words}), got {tokens.min()} .. "
                         f"{tokens.max()}")
    words = np.unique(tokens)
    step = max(1, PHI_CHECK_ENTRIES // max(1, phi.shape[0]))
    zero = []
    for lo in range(0, len(words), step):
        some = words[lo:lo + step]
        cols = np.asarray(phi[:, some])
        for bad, what in ((~np.isfinite(cols).all(axis=0), "NaN or infinite"),
                          ((cols < 0).any(axis=0), "negative")):
            if bad.any():
                raise ValueError(f"{name} has {what} values in the column of word "
                                 f"{some[np.argmax(bad)]}")
        zero.extend(some[~(cols > 0).any(axis=0)].tolist())
    if zero:
        more = f" ({len(zero)} such words)" if len(zero) > 1 else ""
        raise ValueError(f"{name}'s column of word {zero[0]} is zero in every topic{more}: no "
                         "topic emits the word, so a document using it has no topic posterior "
                         f"(a fitted Phi is positive everywhere: is {name} corrupt or "
                         "hand-made?)")


def check_choice(value, name: str, choices) -> str:
    """Raise naming ``name`` and the allowed values when ``value`` is not one of ``choices``."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_burn_in(burn_in, n_iter: int) -> int:
    """Resolve ``burn_in`` (None means half of ``n_iter``) and check ``0 <= burn_in < n_iter``."""
    if burn_in is None:
        return n_iter // 2
    burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
    if burn_in >= n_iter:
        raise ValueError(
            f"burn_in ({burn_in}) must be smaller than n_iter ({n_iter}): "
            "no draws would be kept"
        )
    return burn_in


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (``taskset``, a container's
    cpuset), not the machine's count; ``os.cpu_count()`` where there is no mask."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity API (macOS, Windows)
        return os.cpu_count() or 1


def check_n_jobs(n_jobs) -> int:
    """Number of threads for the parallel kernels: None or -1 means every CPU this process
    may use (:func:`available_cpus`); more than that is capped to it."""
    n_cpu = available_cpus()
    if n_jobs is None or n_jobs == -1:
        return n_cpu
    n_jobs = check_positive_int(n_jobs, "n_jobs")
    return min(n_jobs, n_cpu)


#: Covariate values beyond this magnitude are refused: the sampler squares and
#: sums them (``U^T U``), which overflows or loses every significant digit of
#: the topic columns (proportions in [0, 1]) long before float64's 1.8e308.
MAX_COVARIATE_ABS = 1e12
#: Beyond this magnitude a covariate is legal but suspicious: a warning asks to rescale it.
WARN_COVARIATE_ABS = 1e6


def check_covariate_scale(values, name) -> None:
    """Refuse a covariate column of absurd scale, warn on a merely large one.

    Parameters
    ----------
    values : ndarray (D,) or (D, P), or scipy.sparse matrix (D, P)
        Finite numeric values (one column, or a matrix whose columns are named by ``name``).
    name : str, sequence of str or None
        The column name (or the names of the P columns; None: ``x0, x1, ...``),
        used in the message.

    Raises
    ------
    ValueError
        When some ``|value| > MAX_COVARIATE_ABS`` (one line naming the column).
    """
    import warnings

    import scipy.sparse as sp

    if sp.issparse(values):
        if values.shape[0] == 0 or values.shape[1] == 0:
            return
        peak = np.asarray(abs(values).max(axis=0).todense(), dtype=np.float64).ravel()
        n_cols = values.shape[1]
    else:
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return
        if values.ndim == 1:
            values = values[:, None]
        n_cols = values.shape[1]
        with np.errstate(invalid="ignore"):
            peak = np.nanmax(np.abs(values), axis=0)
    if name is None:
        names = [f"x{j}" for j in range(n_cols)]
    elif isinstance(name, str):
        names = [name] * n_cols
    else:
        names = [str(n) for n in name]
    for j in np.flatnonzero(peak > MAX_COVARIATE_ABS):
        raise ValueError(
            f"covariate column {names[j]!r} has values up to {peak[j]:.3g} in magnitude; "
            f"beyond {MAX_COVARIATE_ABS:.0e} the sampler's sums overflow or lose all precision: "
            "rescale it (e.g. log, or divide by a unit such as 1e6)")
    big = [names[j] for j in np.flatnonzero(peak > WARN_COVARIATE_ABS)]
    if big:
        warnings.warn(f"covariate column(s) {big[:5]} have values beyond "
                      f"{WARN_COVARIATE_ABS:.0e} in magnitude; the coefficient priors assume "
                      "roughly unit scale: consider rescaling (log, standardise)",
                      UserWarning, stacklevel=3)


def check_frame_columns(frame, columns=None) -> None:
    """Refuse duplicated column names (in ``frame`` among ``columns``, or in ``columns``).

    A duplicated header would make ``frame[name]`` a DataFrame (pandas then fails
    with an unrelated message) or silently use the first copy.
    """
    seen, dup = set(), []
    for c in (list(frame.columns) if columns is None else list(columns)):
        if c in seen and c not in dup:
            dup.append(c)
        seen.add(c)
    if dup:
        raise ValueError(f"duplicated covariate name(s) {dup}: every column needs its own name")
    counts = frame.columns.value_counts()
    twice = [c for c in (frame.columns if columns is None else columns)
             if c in counts.index and counts[c] > 1]
    if twice:
        raise ValueError(f"column name(s) {sorted(set(map(str, twice)))} appear more than "
                         "once in the table; rename the copies")


def check_labels(classes, y_index) -> None:
    """Labels a model can be saved with, and classes with enough documents.

    Raises a ValueError at ``fit`` (not at ``save``, after the work) for labels
    that cannot be stored without pickle; warns when classes have a single
    document, and when there are about as many classes as documents (the
    label column is then likely an identifier).
    """
    import warnings

    from ..io.codec import encode_labels

    try:
        encode_labels(classes)
    except TypeError as exc:
        raise ValueError(f"y: {exc}") from None
    counts = np.bincount(np.asarray(y_index), minlength=len(classes))
    n_docs, n_classes = int(counts.sum()), len(classes)
    if n_classes > max(2, n_docs // 2):
        warnings.warn(f"{n_classes} classes for {n_docs} documents: most classes have a "
                      "single document, nothing can be learnt about them (is y an "
                      "identifier?)", UserWarning, stacklevel=3)
    elif (counts < 2).any():
        single = [classes[i] for i in np.flatnonzero(counts < 2)[:5]]
        warnings.warn(f"{int((counts < 2).sum())} class(es) have a single document "
                      f"(e.g. {single}); their coefficients rest on the prior alone",
                      UserWarning, stacklevel=3)


def _available_memory() -> int:
    """Bytes a new allocation can get: Linux's MemAvailable (free memory plus
    reclaimable caches), else the physical memory, else 1 TiB (no check)."""
    import os

    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 1 << 40


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_model_size(n_topics: int, n_words: int, n_docs: int, n_tokens: int,
                     n_classes: int = 0, n_columns: int = 0, n_draws: int = 0,
                     available: int | None = None, n_word_columns: int = 0,
                     dense_words: bool = False) -> None:
    """Refuse, before allocating, a model that cannot fit in memory; warn on too many topics.

    Parameters
    ----------
    n_topics, n_words, n_docs, n_tokens : int
        ``K``, ``V``, ``D``, ``N``.
    n_classes, n_columns, n_draws : int
        ``L``, ``P`` (intercept + covariates + K) and the kept draws ``S``
        (0 for LDA alone).
    n_word_columns : int
        Of the ``P`` columns, the word covariates: their kept draws are float16 and their
        lambda summarised (:mod:`dolda.models.dolda.kept`), and unless ``dense_words``
        (``eta_sampler="cholesky"``) the eta-step forms no matrix over them.
    available : int or None
        Bytes of memory available (None: read from the system).

    Raises
    ------
    ValueError
        When the estimate exceeds the available memory; names the size and
        the parameter to change.
    """
    import warnings

    K, V, D, P, L, S = n_topics, n_words, n_docs, n_columns, n_classes, n_draws
    W = int(n_word_columns)
    B = P if dense_words else P - W  # the columns of the eta-step's dense matrices
    terms = {  # bytes, and the parameter that drives the term
        "n_topics (topics x words: Phi, its running sum and alias tables)": 32.0 * K * V,
        "n_topics (documents x topics: counts and proportions)": 16.0 * D * K,
        "n_topics (the eta-step's (K + covariates)^2 matrices per class)": 8.0 * B * B * (L + 2),
        # float32 eta and lambda draws of the other columns, float16 eta of the words
        "n_iter, burn_in or thin (kept draws of eta and lambda)":
            8.0 * S * L * (P - W) + 2.0 * S * L * W + 16.0 * L * W,
    }
    total = sum(terms.values())
    available = _available_memory() if available is None else available
    if total > available:
        culprit = max(terms, key=terms.get)
        classes = f" and {L} classes" if L else ""
        raise ValueError(
            f"n_topics={K} with {V} words, {D} documents{classes} needs about "
            f"{_gib(total)} of memory, more than the {_gib(available)} available; the "
            f"largest part is {culprit}: lower {culprit.split(' ')[0]}")
    if K > max(n_tokens / 10, 2):
        warnings.warn(f"n_topics={K} for {n_tokens} tokens: fewer than 10 tokens per topic, "
                      "most topics will stay empty; lower n_topics", UserWarning, stacklevel=3)


def check_fit_sizes(classes, y_index, n_topics, corpus, n_columns, params,
                    n_word_columns: int = 0) -> None:
    """The checks of :func:`check_labels` and :func:`check_model_size` for a DOLDA fit
    (``params``: the checked parameters, with ``n_iter``, ``burn_in``, ``thin``,
    ``n_chains``, ``eta_sampler``; ``n_word_columns``: the word covariates among the
    ``n_columns``)."""
    check_labels(classes, y_index)
    n_draws = params.get("n_chains", 1) * len(range(params["burn_in"], params["n_iter"],
                                                    params.get("thin", 1)))
    check_model_size(n_topics, corpus.n_words, corpus.n_docs, corpus.n_tokens, len(classes),
                     n_columns, n_draws, n_word_columns=n_word_columns,
                     dense_words=params.get("eta_sampler") == "cholesky")


def check_checkpoint_fits(arrays, n_docs: int, n_tokens: int, n_classes: int,
                          n_columns: int, n_topics: int) -> None:
    """Refuse to resume from a checkpoint whose chain state has other dimensions.

    ``arrays`` are the arrays of a DOLDA chain checkpoint (already checked by
    the model-file schema); the data and options of the resumed fit must give
    the same documents, tokens, classes, regression columns and topics.
    """
    want = {"z": (n_tokens,), "ndk": (n_docs, n_topics), "eta": (n_classes, n_columns)}
    for name, shape in want.items():
        if name in arrays and tuple(arrays[name].shape) != shape:
            raise ValueError(
                f"the checkpoint was written for other data or options: its {name!r} has shape "
                f"{tuple(arrays[name].shape)}, this fit needs {shape} ({n_docs} documents, "
                f"{n_tokens} tokens, {n_classes} classes, {n_columns} columns, {n_topics} "
                "topics)")


def one_line_errors(func, *args, **kwargs):
    """``func(*args, **kwargs)`` with a ValueError/TypeError message folded onto one line
    (scikit-learn's input checks write several lines, e.g. for NaN)."""
    try:
        return func(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        if len(lines) <= 1:
            raise
        # every line kept (scikit-learn's advice, e.g. "Reshape your data ...", is on a
        # later line and its own checks look for it), each cut to 200 characters
        folded = type(exc)(" ".join(line[:200] for line in lines))
        raise folded from None
