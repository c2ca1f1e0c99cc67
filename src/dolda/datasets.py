"""Data for dolda: a simulator of the DOLDA generative model and loaders.

:func:`simulate` draws a labelled corpus with known topics ``Phi`` and
coefficients ``eta`` (for recovery tests and examples).
:func:`load_20newsgroups` and :func:`load_films` read local copies of the
20 Newsgroups (bydate) corpus and the IMDb films data of the DOLDA paper.
The loaders never download anything.

Data directory: the ``data_dir`` argument, else the ``DOLDA_DATA``
environment variable.  It holds ``20newsgroups_bydate/{train,test}.jsonl.gz``
and ``imdb_films/{films.csv, films-imdb-141.csv, plots_118.jsonl.gz}``.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .sampler.probit_blocks import do_probabilities

__all__ = ["SimulatedCorpus", "SimulatedLabels", "load_20newsgroups", "load_films",
           "simulate", "simulate_labels", "strip_footer", "strip_header", "strip_message",
           "strip_quotes"]

DATA_ENV = "DOLDA_DATA"
NEWSGROUPS_DIR = "20newsgroups_bydate"
FILMS_DIR = "imdb_films"


# ================================================================ simulator
@dataclass
class SimulatedCorpus:
    """A corpus drawn from the DOLDA generative model, with the truth.

    Attributes
    ----------
    texts : list of str (D,)
        Documents as space-separated word tokens (``"w0042"``).
    y : ndarray of str (D,)
        Labels ``"class0"``, ``"class1"``, ... (zero-padded, so sorting them
        gives the row order of ``eta``).
    X : pandas.DataFrame (D, 2) or None
        Covariates ``x_num`` (float) and ``x_cat`` (categorical, levels a, b, c).
    phi : ndarray (K, V)
        True topics ``Phi``; rows sum to 1.
    theta : ndarray (D, K)
        True document-topic proportions ``theta_d``.
    z : ndarray of int (N,)
        True topic of every token, documents concatenated.
    words : ndarray of int (N,)
        Word id of every token (index into ``vocabulary``).
    doc_ptr : ndarray of int (D + 1,)
        Tokens of document d are ``words[doc_ptr[d]:doc_ptr[d + 1]]``.
    zbar : ndarray (D, K)
        Empirical topic proportions ``zbar_d = n_{d,.} / N_d``.
    eta : ndarray (L, P)
        True coefficients, columns named by ``feature_names``.
    feature_names : list of str (P,)
        ``"intercept"``, then ``"x_num"``, ``"x_cat=a"``, ``"x_cat=b"``,
        ``"x_cat=c"`` (with covariates; level a has effect 0), then ``"topic_k"``.
    U : ndarray (D, P)
        Regressors ``u_d = [1, covariates, zbar_d]`` matching ``eta``'s columns.
    proba : ndarray (D, L)
        Exact DO class probabilities from which ``y`` was drawn.
    signal : ndarray of bool (L, P)
        Non-zero coefficients, intercept excluded.
    classes : ndarray of str (L,)
    vocabulary : ndarray of str (V,)
    topic_of_word : ndarray of int (V,)
        The topic whose block holds each word (``argmax_k phi_{k,v}`` when
        topics are not disjoint).
    rare_topic : int or None
        Index of the topic made rare by ``rare_topic=True``.
    """

    texts: list
    y: np.ndarray
    X: pd.DataFrame | None
    phi: np.ndarray
    theta: np.ndarray
    z: np.ndarray
    words: np.ndarray
    doc_ptr: np.ndarray
    zbar: np.ndarray
    eta: np.ndarray
    feature_names: list
    U: np.ndarray
    proba: np.ndarray
    signal: np.ndarray
    classes: np.ndarray
    vocabulary: np.ndarray
    topic_of_word: np.ndarray
    rare_topic: int | None = None
    params: dict = field(default_factory=dict)

    @property
    def eta_frame(self) -> pd.DataFrame:
        """``eta`` as a DataFrame, classes by feature names."""
        return pd.DataFrame(self.eta, index=self.classes, columns=self.feature_names)

    @property
    def topic_share(self) -> np.ndarray:
        """Fraction of all tokens assigned to each topic, shape (K,)."""
        return np.bincount(self.z, minlength=self.phi.shape[0]) / len(self.z)


def _topics(rng, n_topics, vocab_size, beta, disjoint):
    phi = np.zeros((n_topics, vocab_size))
    if disjoint:
        block = np.arange(vocab_size) % n_topics
        for k in range(n_topics):
            words = np.flatnonzero(block == k)
            phi[k, words] = rng.dirichlet(np.full(len(words), beta))
        return phi, block
    phi[:] = rng.dirichlet(np.full(vocab_size, beta), size=n_topics)
    return phi, phi.argmax(axis=0)


def simulate(n_docs=500, n_topics=10, n_classes=3, vocab_size=1000, doc_length=100,
             n_signal=2, covariates=False, alpha=0.5, beta=0.1, effect=6.0,
             intercept=-1.0, disjoint_topics=True, rare_topic=False,
             rare_topic_weight=0.1, rare_effect=20.0, rare_intercept=-3.0,
             random_state=None):
    """Draw a labelled corpus from the DOLDA generative model (paper section 2).

    Topics ``phi_k ~ Dir(beta)`` (on a disjoint block of words when
    ``disjoint_topics``, so topics are identifiable), ``theta_d ~ Dir(alpha)``,
    ``z_{d,n} ~ Cat(theta_d)``, ``w_{d,n} ~ Cat(phi_{z_{d,n}})``.  With
    ``u_d = [1, covariates, zbar_d]`` and ``mu_{d,l} = u_d . eta_l``, the label
    is drawn from the exact DO probabilities
    ``P(y_d = l) ∝ F(mu_l) prod_{j != l} F(-mu_j)``.

    Class ``l`` is driven by ``n_signal`` topics (classes take consecutive
    topics, wrapping around) with coefficients ``+effect, -effect, +effect, ...``;
    every other topic coefficient is 0.  With covariates, ``x_num`` has
    coefficient +1 for class 0 and level ``x_cat=c`` has +1.5 for class
    ``1 % L``.

    Parameters
    ----------
    n_docs : int, default=500
        ``D``.
    n_topics : int, default=10
        ``K``.
    n_classes : int, default=3
        ``L``.
    vocab_size : int, default=1000
        ``V`` (at least ``K`` when ``disjoint_topics``).
    doc_length : int or array-like of int, default=100
        Mean document length (``N_d ~ max(1, Poisson(doc_length))``), or the
        ``D`` lengths themselves.
    n_signal : int, default=2
        Signal topics per class.
    covariates : bool, default=False
        Add a numeric and a categorical covariate with known effects.
    alpha : float or array-like (K,), default=0.5
        Dirichlet parameter of ``theta_d``.
    beta : float, default=0.1
        Dirichlet parameter of ``phi_k``.
    effect : float, default=6.0
        Magnitude of a signal topic coefficient (``zbar`` lies in [0, 1], so
        effects must be several units to matter).
    intercept : float, default=-1.0
        Intercept of every class.
    disjoint_topics : bool, default=True
        Give each topic its own block of ``V / K`` words.
    rare_topic : bool, default=False
        Make the last topic rare (Dirichlet weight ``alpha * rare_topic_weight``)
        and let the last class depend on it alone, with coefficient
        ``rare_effect`` and intercept ``rare_intercept`` (so that the class is
        chosen mostly where the rare topic is present); the other classes draw their signal topics from the
        remaining ones.  A two-step fit (LDA, then regression) tends to miss
        such a topic; DOLDA's supervised z-step can find it.
    rare_topic_weight : float, default=0.1
        With the defaults the rare topic carries about 1% of the tokens.
    rare_effect : float, default=20.0
    rare_intercept : float, default=-3.0
    random_state : int, numpy Generator or None, default=None

    Returns
    -------
    SimulatedCorpus
    """
    rng = np.random.default_rng(random_state)
    D, K, L, V = int(n_docs), int(n_topics), int(n_classes), int(vocab_size)
    if D < 1 or K < 1 or L < 2 or V < 1:
        raise ValueError(f"need n_docs >= 1, n_topics >= 1, n_classes >= 2, vocab_size >= 1; "
                         f"got {D}, {K}, {L}, {V}")
    if disjoint_topics and V < K:
        raise ValueError(f"disjoint topics need vocab_size >= n_topics, got {V} < {K}")
    if rare_topic and K < 2:
        raise ValueError("rare_topic needs at least 2 topics")
    if not 0 <= n_signal <= K:
        raise ValueError(f"n_signal must be in [0, n_topics], got {n_signal}")

    phi, topic_of_word = _topics(rng, K, V, beta, disjoint_topics)
    alpha_vec = np.broadcast_to(np.asarray(alpha, dtype=float), (K,)).copy()
    rare = K - 1 if rare_topic else None
    if rare is not None:
        alpha_vec[rare] *= rare_topic_weight
    theta = rng.dirichlet(alpha_vec, size=D)

    if np.ndim(doc_length) == 0:
        lengths = np.maximum(1, rng.poisson(doc_length, size=D))
    else:
        lengths = np.asarray(doc_length, dtype=np.int64)
        if lengths.shape != (D,) or lengths.min() < 1:
            raise ValueError("doc_length must be a number or n_docs positive lengths")
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    counts = rng.multinomial(lengths, theta)                     # n_{d,k}
    doc_of_token = np.repeat(np.arange(D), lengths)
    z = np.repeat(np.tile(np.arange(K), D), counts.ravel())      # grouped by doc, sorted by k
    z = z[np.lexsort((rng.random(len(z)), doc_of_token))]        # random order within doc
    words = np.empty(len(z), dtype=np.int64)
    for k in range(K):
        at = np.flatnonzero(z == k)
        words[at] = rng.choice(V, size=len(at), p=phi[k])
    zbar = counts / lengths[:, None]

    # regressors and coefficients
    names, columns = ["intercept"], [np.ones(D)]
    frame = None
    if covariates:
        x_num = rng.normal(size=D)
        x_cat = rng.choice(np.array(["a", "b", "c"]), size=D)
        frame = pd.DataFrame({"x_num": x_num,
                              "x_cat": pd.Categorical(x_cat, categories=["a", "b", "c"])})
        names += ["x_num", "x_cat=a", "x_cat=b", "x_cat=c"]
        columns += [x_num] + [(x_cat == level).astype(float) for level in "abc"]
    n_cov = len(names)
    names += [f"topic_{k}" for k in range(K)]
    U = np.column_stack(columns + [zbar])
    eta = np.zeros((L, len(names)))
    eta[:, 0] = intercept
    if covariates:
        eta[0, 1] = 1.0
        eta[1 % L, 4] = 1.5
    pool = [k for k in range(K) if k != rare]
    next_topic = 0
    for l in range(L):
        if rare is not None and l == L - 1:
            eta[l, 0] = rare_intercept
            eta[l, n_cov + rare] = rare_effect
            continue
        for j in range(min(n_signal, len(pool))):
            k = pool[next_topic % len(pool)]
            next_topic += 1
            eta[l, n_cov + k] = effect if j % 2 == 0 else -effect
    signal = eta != 0
    signal[:, 0] = False

    proba = do_probabilities(U @ eta.T)
    y_index = (rng.random(D)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1)
    y_index = np.minimum(y_index, L - 1)  # guard against cumsum rounding below 1
    width = len(str(L - 1))
    classes = np.array([f"class{l:0{width}d}" for l in range(L)])
    vocabulary = np.array([f"w{v:0{max(4, len(str(V - 1)))}d}" for v in range(V)])
    tokens = vocabulary[words]
    texts = [" ".join(tokens[doc_ptr[d]:doc_ptr[d + 1]]) for d in range(D)]
    params = dict(n_docs=D, n_topics=K, n_classes=L, vocab_size=V, doc_length=doc_length,
                  n_signal=n_signal, covariates=covariates, alpha=alpha, beta=beta,
                  effect=effect, intercept=intercept, disjoint_topics=disjoint_topics,
                  rare_topic=rare_topic, rare_topic_weight=rare_topic_weight,
                  rare_effect=rare_effect, rare_intercept=rare_intercept)
    return SimulatedCorpus(
        texts=texts, y=classes[y_index], X=frame, phi=phi, theta=theta, z=z, words=words,
        doc_ptr=doc_ptr, zbar=zbar, eta=eta, feature_names=names, U=U, proba=proba,
        signal=signal, classes=classes, vocabulary=vocabulary, topic_of_word=topic_of_word,
        rare_topic=rare, params=params)


LABEL_MODELS = ("do", "ovr", "logit")


@dataclass
class SimulatedLabels:
    """Gaussian covariates and labels from a known label model, with the truth.

    Attributes: ``X`` (D, P) covariates (no intercept column), ``y`` (D,) int labels,
    ``proba`` (D, L) the true class probabilities, ``coef`` (L, P + 1) the true
    coefficients (column 0 the intercept).
    """

    X: np.ndarray
    y: np.ndarray
    proba: np.ndarray
    coef: np.ndarray


def _label_probabilities(mu, model):
    if model == "do":
        return do_probabilities(mu)
    if model == "ovr":
        from scipy.special import ndtr

        p = ndtr(mu)
        return p / p.sum(axis=1, keepdims=True)
    e = np.exp(mu - mu.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def simulate_labels(n_rows, n_features=8, n_classes=5, model="logit", scale=1.0,
                    intercept=0.0, coef=None, random_state=None):
    """Rows ``x ~ N(0, I)`` labelled by ``model`` with ``mu = coef[:, 0] + x @ coef[:, 1:].T``.

    ``model``: ``"do"`` (the Diagonal-Orthant probabilities, what DOProbit assumes),
    ``"ovr"`` (normalised one-vs-rest probits) or ``"logit"`` (multinomial logit): the
    last two are misspecified for DOProbit, which is what a calibration study needs.
    ``coef`` defaults to slopes ``scale * N(0, 1)`` (drawn from a generator of its own,
    seeded from ``random_state``) and intercept ``intercept``; pass a fitted set's
    ``coef`` with another seed for a test set from the same truth.
    """
    if model not in LABEL_MODELS:
        raise ValueError(f"model must be one of {', '.join(LABEL_MODELS)}, got {model!r}")
    if int(n_rows) < 1:
        raise ValueError(f"n_rows must be >= 1, got {n_rows}")
    rng = np.random.default_rng(random_state)
    if coef is None:
        if int(n_classes) < 2 or int(n_features) < 1:
            raise ValueError(f"need n_classes >= 2 and n_features >= 1, got {n_classes}, "
                             f"{n_features}")
        crng = np.random.default_rng(rng.integers(2**63))
        coef = np.column_stack([np.full(int(n_classes), float(intercept)),
                                scale * crng.standard_normal((int(n_classes),
                                                              int(n_features)))])
    coef = np.asarray(coef, dtype=float)
    X = rng.standard_normal((int(n_rows), coef.shape[1] - 1))
    proba = _label_probabilities(coef[:, 0] + X @ coef[:, 1:].T, model)
    u = rng.random(len(proba))[:, None]
    y = np.minimum((u > np.cumsum(proba, axis=1)).sum(axis=1), proba.shape[1] - 1)
    return SimulatedLabels(X, y.astype(np.int64), proba, coef)


# ========================================================== data directory
def _data_root(data_dir) -> Path | None:
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV) or None
    if data_dir is None:
        return None
    return Path(data_dir).expanduser()


def _missing(what: str, where, needed: str) -> FileNotFoundError:
    if where is None:
        hint = (f"pass data_dir=... or set the environment variable {DATA_ENV} to the "
                f"directory that holds {needed}")
    else:
        hint = f"expected {needed} under {where}"
    return FileNotFoundError(f"{what} not found: {hint}. dolda never downloads data.")


# ========================================================= 20 Newsgroups
_QUOTE = re.compile(r"(writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^\||^>)")


def strip_header(text: str) -> str:
    """Remove the message headers: everything up to the first blank line.

    Follows the documented behaviour of scikit-learn's
    ``fetch_20newsgroups(remove=("headers",))``.
    """
    _, blank, after = text.partition("\n\n")
    return after


def strip_quotes(text: str) -> str:
    """Remove quoted replies: lines starting with ``>`` or ``|`` and attribution
    lines such as ``In article <...>`` or ``... writes:`` / ``wrote:`` / ``said:``.
    """
    return "\n".join(line for line in text.split("\n") if not _QUOTE.search(line))


def strip_footer(text: str) -> str:
    """Remove a signature block: everything after the last line that is blank or
    made only of hyphens (trailing blank lines disregarded).  The text is kept
    whole when that line is the first one.
    """
    lines = text.strip().split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip().strip("-") == "":
            break
    else:
        return text
    return "\n".join(lines[:i]) if i > 0 else text


_STRIP = {"headers": strip_header, "footers": strip_footer, "quotes": strip_quotes}


def _check_remove(remove) -> tuple:
    remove = (remove,) if isinstance(remove, str) else tuple(remove)
    unknown = set(remove) - set(_STRIP)
    if unknown:
        raise ValueError(f"remove accepts {tuple(_STRIP)}, got {sorted(unknown)}")
    return remove


def strip_message(text: str, remove=("headers", "footers", "quotes")) -> str:
    """Strip the parts named in ``remove`` from one message, in the order headers,
    footers, quotes (what ``load_20newsgroups(remove=...)`` applies to every message).
    """
    remove = _check_remove(remove)
    for part in ("headers", "footers", "quotes"):
        if part in remove:
            text = _STRIP[part](text)
    return text


def _frame_from_jsonl_gz(path: Path, columns, integer=()) -> pd.DataFrame:
    """The named fields of a gzipped JSON-lines file as a DataFrame, read line by line.

    Text columns are ``object`` columns holding the parsed ``str`` objects themselves:
    pandas' arrow-backed string dtype would copy every text into an arrow buffer, and
    ``frame.text.tolist()`` (what :class:`dolda.DOLDA` is given) would then build a
    third copy -- on 20 Newsgroups that was 80 MB more resident memory than the texts.
    Columns in ``integer`` are int64.
    """
    values = {c: [] for c in columns}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                for c in columns:
                    values[c].append(row.get(c))
    return pd.DataFrame({c: pd.Series(v, dtype="int64" if c in integer else object)
                         for c, v in values.items()})


def _newsgroups_from_sklearn(subset: str, data_home) -> pd.DataFrame | None:
    try:
        from sklearn.datasets import fetch_20newsgroups
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return None
    try:
        bunch = fetch_20newsgroups(data_home=data_home, subset=subset, shuffle=False,
                                   download_if_missing=False)
    except OSError:
        return None
    ids = ["/".join(Path(f).parts[-2:]) for f in bunch.filenames]
    frame = pd.DataFrame({"id": ids, "label": [bunch.target_names[t] for t in bunch.target],
                          "label_id": bunch.target,
                          "text": pd.Series(bunch.data, dtype=object)})  # no arrow copy
    number = frame["id"].str.rsplit("/", n=1).str[1].astype(int)
    return (frame.assign(_n=number).sort_values(["label", "_n"]).drop(columns="_n")
            .reset_index(drop=True))


def load_20newsgroups(data_dir=None, subset="train", remove=(), sklearn_data_home=None):
    """The 20 Newsgroups corpus, "bydate" split (as used by MedLDA and DOLDA).

    Reads ``<data_dir>/20newsgroups_bydate/{train,test}.jsonl.gz``.  When those
    files are absent, falls back to scikit-learn's local cache
    (``fetch_20newsgroups(download_if_missing=False)``); nothing is downloaded.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Directory holding ``20newsgroups_bydate/``; default the ``DOLDA_DATA``
        environment variable.
    subset : {"train", "test", "all"}, default="train"
    remove : tuple of {"headers", "footers", "quotes"}, default=()
        Parts of each message to strip, with the heuristics documented for
        scikit-learn's ``fetch_20newsgroups`` (applied in that order).
    sklearn_data_home : str or path-like, optional
        scikit-learn's data home for the fallback (default: its usual location).

    Returns
    -------
    pandas.DataFrame
        Columns ``id`` (``"<group>/<number>"``), ``label`` (group name),
        ``label_id`` (index in the sorted group names) and ``text``; rows
        sorted by label, then message number.

    Raises
    ------
    FileNotFoundError
        Neither the files nor a scikit-learn cache were found.
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    remove = _check_remove(remove)
    if subset == "all":
        parts = [load_20newsgroups(data_dir, s, remove, sklearn_data_home)
                 for s in ("train", "test")]
        return pd.concat(parts, ignore_index=True)

    root = _data_root(data_dir)
    path = None if root is None else root / NEWSGROUPS_DIR / f"{subset}.jsonl.gz"
    if path is not None and path.is_file():
        frame = _frame_from_jsonl_gz(path, ["id", "label", "label_id", "text"],
                                     integer=("label_id",))
    else:
        frame = _newsgroups_from_sklearn(subset, sklearn_data_home)
        if frame is None:
            raise _missing(f"20 Newsgroups ({subset})", root,
                           f"{NEWSGROUPS_DIR}/{subset}.jsonl.gz")
    if remove:
        frame["text"] = pd.Series([strip_message(t, remove) for t in frame["text"]],
                                  index=frame.index, dtype=object)
    return frame


# ================================================================ films
def _read_films_csv(path: Path) -> pd.DataFrame:
    # keep_default_na=False: names such as "NA" or "None" are data, not missing
    return pd.read_csv(path, dtype={"Year": "int64"}, keep_default_na=False, na_values=[""],
                       quoting=csv.QUOTE_MINIMAL)


def _read_plots(folder: Path) -> pd.DataFrame | None:
    jsonl = folder / "plots_118.jsonl.gz"
    if jsonl.is_file():
        return _frame_from_jsonl_gz(jsonl, ["id", "label", "text"])
    lda = folder / "films-imdb-141.lda"
    if lda.is_file():
        rows = []
        with open(lda, encoding="utf-8") as fh:
            for line in fh:
                line = line.rstrip("\n")
                if line:
                    ident, label, text = line.split("\t", 2)
                    rows.append({"id": ident, "label": label, "text": text})
        return pd.DataFrame(rows, columns=["id", "label", "text"])
    return None


def load_films(data_dir=None, with_plots=False):
    """The IMDb films data of the DOLDA paper (label column ``Genre``).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Directory holding ``imdb_films/``; default the ``DOLDA_DATA``
        environment variable.
    with_plots : bool, default=False
        False: ``films.csv``, the metadata of 10,848 films (``Id, Name, Year,
        Genre, DirectedBy, ProducedBy, Music, StoryBy, Company``), no text.
        True: the 118 films that have a plot text, ``plots_118.jsonl.gz`` (or
        ``films-imdb-141.lda``) joined on ``Id`` with their covariates in
        ``films-imdb-141.csv`` (``Id, Name, Year, Genre, DirectedBy, StoryBy,
        MusicBy, Company``) plus a ``text`` column.  The two files use the
        same ``Id`` values for different films: do not join across them.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    FileNotFoundError
        The files are not there.
    ValueError
        The plot and covariate files disagree (ids or genres).
    """
    root = _data_root(data_dir)
    folder = None if root is None else root / FILMS_DIR
    if not with_plots:
        if folder is None or not (folder / "films.csv").is_file():
            raise _missing("IMDb films metadata", root, f"{FILMS_DIR}/films.csv")
        return _read_films_csv(folder / "films.csv")
    plots = None if folder is None else _read_plots(folder)
    if plots is None or not (folder / "films-imdb-141.csv").is_file():
        raise _missing("IMDb film plots", root,
                       f"{FILMS_DIR}/plots_118.jsonl.gz and {FILMS_DIR}/films-imdb-141.csv")
    meta = _read_films_csv(folder / "films-imdb-141.csv")
    merged = meta.merge(plots.rename(columns={"id": "Id"}), on="Id", how="inner",
                        validate="one_to_one")
    if len(merged) != len(meta) or len(merged) != len(plots):
        raise ValueError(f"plots ({len(plots)}) and covariates ({len(meta)}) do not share "
                         f"all ids ({len(merged)} in common)")
    bad = merged["label"] != merged["Genre"]
    if bad.any():
        raise ValueError(f"genre differs between plots and covariates for ids "
                         f"{list(merged.loc[bad, 'Id'][:5])}")
    return merged.drop(columns="label")
