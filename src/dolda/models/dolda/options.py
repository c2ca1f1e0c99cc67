"""The groups of DOLDA's parameters, and the one table that maps them to the options the fit reads.

A user sets about twenty parameters; most of the model's options live in a few small groups
(:class:`Prior`, :class:`Words`, :class:`Text`, :class:`Covariates`, :class:`Sampler`,
:class:`Prediction`, :class:`Checkpoint`, :class:`Dask`), each an object with ``get_params`` so
that ``GridSearchCV`` reaches a nested value (``{"prior__slab_scale": [1.0, 2.5]}``) and
``clone`` copies it.  The defaults are written once, in the groups' signatures.

The fit's stages, model files, checkpoints and the command line speak of every option by one
*flat* name (``slab_scale``, ``n_words``, ``z_sampler`` ...): :data:`FLAT` says where each lives,
:func:`flat_params` reads them all from an estimator, and :func:`from_flat` builds an estimator
from them (a model file's parameters, the CLI's options).
"""

from __future__ import annotations

import inspect
import os


class _Group:
    """A group of options: stores its arguments (checked when the model is fitted), and
    speaks scikit-learn's parameter protocol (``get_params``, ``set_params``), so that
    ``clone`` copies it and a grid search reaches ``group__field``.  It does not import
    scikit-learn, so that the command line starts fast."""

    @classmethod
    def _get_param_names(cls):
        return [name for name in inspect.signature(cls.__init__).parameters if name != "self"]

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        names = self._get_param_names()
        for name, value in params.items():
            if name not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {name!r}; "
                                 f"its parameters are {', '.join(names)}")
            setattr(self, name, value)
        return self

    def __repr__(self):
        defaults = {name: p.default
                    for name, p in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{name}={value!r}" for name, value in self.get_params().items()
                 if not _same(value, defaults.get(name))]
        return f"{type(self).__name__}({', '.join(shown)})"

    def __eq__(self, other):
        return type(self) is type(other) and all(
            _same(a, b) for a, b in zip(self.get_params().values(), other.get_params().values()))

    __hash__ = None  # mutable, as scikit-learn's estimators


def _same(a, b) -> bool:
    try:
        return bool(a is b or a == b)
    except (TypeError, ValueError):  # arrays
        return False


class Prior(_Group):
    """The prior of the probit coefficients eta.

    Parameters
    ----------
    kind : {"horseshoe", "normal"}, default="horseshoe"
        ``"horseshoe"``: ``eta_{l,p} ~ N(0, tau_l^2 lambda_{l,p}^2)`` with half-Cauchy scales, so
        each class keeps a few signal topics and words (the paper's).  ``"normal"``:
        ``N(0, variance)`` on every coefficient, the paper's comparison prior.
    variance : float, default=100.0
        ``c``, the variance of the intercept's normal prior (and of every coefficient under
        ``kind="normal"``).
    slab_scale : float or None, default=2.5
        The Horseshoe times a Gaussian slab ``N(0, s^2)`` on the coefficients of
        ``slab_blocks``, so that a word seen in a few documents cannot wander to a huge
        coefficient (the signal words then agree better between seeds:
        ``docs/decisions``).  None: the paper's Horseshoe without a slab.
    slab_blocks : "all" or tuple of str, default=("covariates", "words")
        The columns under the slab, some of "covariates", "words", "topics"; by default
        not the topics.
    """

    def __init__(self, kind="horseshoe", variance=100.0, slab_scale=2.5,
                 slab_blocks=("covariates", "words")):
        self.kind = kind
        self.variance = variance
        self.slab_scale = slab_scale
        self.slab_blocks = slab_blocks


class Words(_Group):
    """Words as covariates, beside the topics.

    Parameters
    ----------
    n : int, "auto" or "all", default="auto"
        The ``n`` vocabulary words of highest document frequency enter the regression as sparse
        covariates named ``"word=<w>"``.  ``"auto"``: one word per two training documents, at
        least 2,000 and at most 5,000; ``"all"``: every word of the vocabulary; 0: topics (and
        covariates) only, the paper's model.
    features : {"log", "binary", "tfidf"}, default="log"
        How a word's count enters: ``log(1 + n_{d,w})``, an indicator, or l2-normalised
        sublinear tf-idf (the usual choice with ``prior="normal"`` or ``"both"``).
    prior : {"horseshoe", "normal", "both"}, default="horseshoe"
        ``"horseshoe"``: the words share the coefficients' prior (a few decisive words per
        class).  ``"normal"``: ``N(0, prior_variance)`` on every word (a Bayesian ridge, for
        corpora decided by thousands of words that each lean a little, such as newsgroups).
        ``"both"``: the ``n`` words under the Horseshoe plus every word's tf-idf (``"dense=<w>"``
        columns) under the Gaussian; about 3x the fit time and memory.
    prior_variance : float, default=1.0
        ``v`` of the Gaussian words (``prior`` "normal" or "both").
    """

    def __init__(self, n="auto", features="log", prior="horseshoe", prior_variance=1.0):
        self.n = n
        self.features = features
        self.prior = prior
        self.prior_variance = prior_variance


class Text(_Group):
    """How documents become tokens, and the vocabulary.

    Parameters
    ----------
    column : hashable, default="text"
        When ``X`` is a DataFrame: the column holding the documents.
    stop_words : "english", None, list of str or path, default="english"
        Words removed before counting: scikit-learn's English list, none, the given words, or
        the words of a text file (one per line; ``#`` starts a comment).
    token_pattern : str or None, default=None
        Regular expression of a token (None: words of two or more characters starting with a
        letter, :data:`dolda.design.corpus.TOKEN_PATTERN`).
    rare_share : float, default=0.01
        Share of the tokens, made of the rarest word types, that is removed (the paper's 1%).
    min_df, max_df : int or float, default=1, 1.0
        Document-frequency bounds of the vocabulary (counts, or shares of the documents).
    vocabulary : sequence of str or None, default=None
        When ``X`` is a document-term matrix of counts (``make_pipeline(CountVectorizer(),
        DOLDA())``): the words of its columns.  None: a DataFrame's column names, else
        ``x0, x1, ...``.  The other options here do not apply to a matrix.
    """

    def __init__(self, column="text", stop_words="english", token_pattern=None,
                 rare_share=0.01, min_df=1, max_df=1.0, vocabulary=None):
        self.column = column
        self.stop_words = stop_words
        self.token_pattern = token_pattern
        self.rare_share = rare_share
        self.min_df = min_df
        self.max_df = max_df
        self.vocabulary = vocabulary


class Covariates(_Group):
    """Covariates from a DataFrame ``X`` (or the ``covariates=`` argument of ``fit``).

    Parameters
    ----------
    columns : list or None, default=None
        The covariate columns of a DataFrame ``X`` (None: every column but the text column;
        ``[]``: none).  Categorical columns are one-hot encoded (``"director=Jackie Chan"``).
    min_count : int, default=1
        Levels seen fewer than this many times in ``fit`` are pooled into one
        ``"column=other"`` indicator (as are levels first seen at prediction).
    """

    def __init__(self, columns=None, min_count=1):
        self.columns = columns
        self.min_count = min_count


class Sampler(_Group):
    """The blocks of one Gibbs iteration ``a -> eta -> (tau, lambda) -> z -> Phi``.

    Every choice samples the same posterior (except ``phi="polya"``, an approximation).

    Parameters
    ----------
    z : {"auto", "exact", "mh"}, default="auto"
        The topic indicators: ``"exact"``, a Gibbs draw from the supervised conditional (O(K)
        per token); ``"mh"``, Metropolis-Hastings with the sparse LDA proposal (O(K_d + L) per
        token); ``"auto"``: "mh" from K = 50 on, where it is faster.
    eta : {"auto", "gibbs", "cholesky"}, default="auto"
        The coefficients: ``"cholesky"``, one joint draw per class (dense designs);
        ``"gibbs"``, the dense block jointly and then each word coefficient on a kept residual
        (O(nnz) per class, for thousands of word columns); ``"auto"`` chooses by the design.
    phi : {"exact", "polya"}, default="exact"
        The topics: ``"exact"`` draws ``phi_k ~ Dir(beta + n_k)``; ``"polya"``, the sparse
        Pólya-urn approximation of Terenin et al. (2019), cheaper per iteration at large K.
    loglik_every : int, default=1
        Compute the log-likelihood trace (``loglik_``) every this many iterations (NaN between).
    n_shards : int or None, default=None
        Contiguous blocks of documents, each with its own random stream (None: one per about
        10^6 tokens, a function of the data alone); the same seed and ``n_shards`` give the
        same chain for any number of threads or Dask workers.
    """

    def __init__(self, z="auto", eta="auto", phi="exact", loglik_every=1, n_shards=None):
        self.z = z
        self.eta = eta
        self.phi = phi
        self.loglik_every = loglik_every
        self.n_shards = n_shards


class Prediction(_Group):
    """How new documents get their topic proportions (paper section 3.3).

    Parameters
    ----------
    sweeps : int, default=50
        Sweeps of the unsupervised z-sampler for a new document; more buy a little accuracy at
        proportional cost.
    burn_in : int or None, default=None
        Sweeps discarded before averaging (None: half of ``sweeps``).
    phi_draws : int, default=20
        ``phi_`` is the posterior mean of Phi over the last ``phi_draws`` iterations.
    """

    def __init__(self, sweeps=50, burn_in=None, phi_draws=20):
        self.sweeps = sweeps
        self.burn_in = burn_in
        self.phi_draws = phi_draws


class Checkpoint(_Group):
    """Where the chain is saved while it runs, so that a killed fit can be resumed.

    Parameters
    ----------
    path : path
        Directory written every ``every`` iterations and on Ctrl-C; continue with
        ``fit(..., resume=path)``.  Passing a path as ``checkpoint=`` is the same as
        ``Checkpoint(path)``.
    every : int, default=100
        Iterations between checkpoints.
    """

    def __init__(self, path=None, every=100):
        self.path = path
        self.every = every


class Dask(_Group):
    """Sample the document shards on the workers of a Dask cluster (``backend=Dask(client)``).

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The client (None: the current default client); dolda never starts or stops clusters.
    snapshot_every : int, default=10
        Iterations between the copies of z kept on the driver; after a lost worker at most this
        many iterations are replayed.
    phi_transport : {"auto", "recipe", "dense"}, default="auto"
        What carries the exact Phi to the workers each iteration: the non-zero counts it was
        drawn from (every worker repeats the draw), Phi itself, or whichever is smaller.  The
        chain is the same either way.
    """

    def __init__(self, client=None, snapshot_every=10, phi_transport="auto"):
        self.client = client
        self.snapshot_every = snapshot_every
        self.phi_transport = phi_transport


class Experimental(_Group):
    """Options measured and not adopted, kept for studies (``docs/decisions/``).

    Parameters
    ----------
    word_selection : {"df", "chi2"}, default="df"
        Pick the word covariates by chi-squared association with the label instead of
        document frequency.
    global_scales : {"shared", "block"}, default="shared"
        One Horseshoe global scale per class and column block instead of one per class.
    init_iter : int, default=0
        Iterations of unsupervised LDA run before the supervised chain.
    z_sampler : {"cycle"} or None, default=None
        Cycle Metropolis-Hastings for z (LightLDA's proposals); overrides ``Sampler.z``.
    eta_sampler : {"cg", "bcm"} or None, default=None
        Conjugate-gradient perturbation or Bhattacharya et al.'s sampler for eta, with ``X``
        kept sparse; overrides ``Sampler.eta``.
    """

    def __init__(self, word_selection="df", global_scales="shared", init_iter=0,
                 z_sampler=None, eta_sampler=None):
        self.word_selection = word_selection
        self.global_scales = global_scales
        self.init_iter = init_iter
        self.z_sampler = z_sampler
        self.eta_sampler = eta_sampler


#: The estimator parameter that holds each group, and the group's class.
GROUPS = {"prior": Prior, "words": Words, "text": Text, "covariates": Covariates,
          "sampler": Sampler, "prediction": Prediction, "checkpoint": Checkpoint,
          "backend": Dask, "experimental": Experimental}

#: Every option the fit reads, by its flat name: (estimator parameter, field of its group), or
#: (parameter, None) for a parameter read as it is.
FLAT = {
    "prior": ("prior", "kind"), "prior_variance": ("prior", "variance"),
    "slab_scale": ("prior", "slab_scale"), "slab_blocks": ("prior", "slab_blocks"),
    "n_words": ("words", "n"), "word_features": ("words", "features"),
    "word_prior": ("words", "prior"), "word_prior_variance": ("words", "prior_variance"),
    "text_column": ("text", "column"), "stop_words": ("text", "stop_words"),
    "token_pattern": ("text", "token_pattern"), "rare_share": ("text", "rare_share"),
    "min_df": ("text", "min_df"), "max_df": ("text", "max_df"),
    "vocabulary": ("text", "vocabulary"),
    "covariate_columns": ("covariates", "columns"),
    "covariate_min_count": ("covariates", "min_count"),
    "z_sampler": ("sampler", "z"), "eta_sampler": ("sampler", "eta"),
    "phi_sampler": ("sampler", "phi"), "loglik_every": ("sampler", "loglik_every"),
    "n_shards": ("sampler", "n_shards"),
    "predict_sweeps": ("prediction", "sweeps"), "predict_burn_in": ("prediction", "burn_in"),
    "phi_draws": ("prediction", "phi_draws"),
    "checkpoint": ("checkpoint", "path"), "checkpoint_every": ("checkpoint", "every"),
    "client": ("backend", "client"), "snapshot_every": ("backend", "snapshot_every"),
    "phi_transport": ("backend", "phi_transport"),
    "word_selection": ("experimental", "word_selection"),
    "global_scales": ("experimental", "global_scales"),
    "init_iter": ("experimental", "init_iter"),
}
#: The parameters read as they are (their flat name is their own), with their defaults: the
#: estimator's signature reads them from here.
PLAIN_DEFAULTS = {"n_topics": 20, "alpha": 0.01, "beta": 0.01, "n_iter": 500, "burn_in": None,
                  "thin": 1, "n_chains": 1, "topic_init": "nmf", "proba": "calibrated",
                  "calibration_holdout": None, "random_state": None, "n_jobs": None,
                  "progress": True}
PLAIN = tuple(PLAIN_DEFAULTS)
#: Flat names whose estimator parameter of the same name holds something else (a group): the
#: stages read these through :func:`flat_params`, never as attributes.
SHADOWED = ("prior", "checkpoint", "backend")

_OVERRIDES = {"z_sampler": "z_sampler", "eta_sampler": "eta_sampler"}  # Experimental's


def group(model, name):
    """The group ``name`` of ``model`` (its defaults when the parameter is None)."""
    value = getattr(model, name)
    if name == "checkpoint" and isinstance(value, (str, os.PathLike)):
        return Checkpoint(value)
    if name == "backend" and (value is None or isinstance(value, str)):
        return Dask()
    return GROUPS[name]() if value is None else value


def flat_value(model, name):
    """The option ``name`` (a flat name) of ``model``."""
    if name in PLAIN:
        return getattr(model, name)
    if name == "backend":
        value = getattr(model, "backend")
        return value if isinstance(value, str) else "dask"
    if name in _OVERRIDES:
        override = getattr(group(model, "experimental"), _OVERRIDES[name])
        if override is not None:
            return override
    where, field = FLAT[name]
    return getattr(group(model, where), field)


def flat_params(model) -> dict:
    """Every option of ``model`` by its flat name (what model files and checkpoints hold)."""
    names = list(PLAIN) + list(FLAT) + ["backend"]
    out = {name: flat_value(model, name) for name in names}
    out["two_step"] = bool(getattr(model, "_two_step", False))
    return out


def flat_defaults() -> dict:
    """The default of every option by its flat name (the command line's defaults)."""
    out = dict(PLAIN_DEFAULTS, backend="local", two_step=False)
    for name, (where, field) in FLAT.items():
        out[name] = inspect.signature(GROUPS[where].__init__).parameters[field].default
    return out


def from_flat(cls, params: dict):
    """A ``cls`` (DOLDA or TwoStepDOLDA) with the options ``params`` given by flat names;
    the others keep their defaults.  ``two_step=True`` gives a TwoStepDOLDA."""
    params = dict(params)
    if params.pop("two_step", False) and not getattr(cls, "_two_step", False):
        cls = cls._two_step_variant
    unknown = sorted(set(params) - set(PLAIN) - set(FLAT) - {"backend"})
    if unknown:
        raise TypeError(f"{cls.__name__} has no option {unknown[0]!r}")
    kwargs = {name: params.pop(name) for name in PLAIN if name in params}
    fields: dict = {}
    for name in ("z_sampler", "eta_sampler"):
        if name in params and params[name] in _EXPERIMENTAL_CHOICES[name]:
            fields.setdefault("experimental", {})[name] = params.pop(name)
    backend = params.pop("backend", "local")
    for name, value in params.items():
        where, field = FLAT[name]
        fields.setdefault(where, {})[field] = value
    dask_fields = fields.pop("backend", {})
    if backend == "dask" or (backend not in ("local", None) and not isinstance(backend, str)):
        kwargs["backend"] = backend if isinstance(backend, Dask) else Dask(**dask_fields)
    elif backend is not None:
        kwargs["backend"] = backend
    ck = fields.pop("checkpoint", {})
    if ck.get("path") is None and ck.get("every", 100) != 100:
        kwargs["checkpoint"] = Checkpoint(**ck)  # refused by the fit, naming Checkpoint.every
    elif ck.get("path") is not None:
        kwargs["checkpoint"] = (str(ck["path"]) if ck.get("every", 100) == 100
                                else Checkpoint(**ck))
    for where, values in fields.items():
        kwargs[where] = GROUPS[where](**values)
    return cls(**kwargs)


#: Values of z_sampler / eta_sampler that only :class:`Experimental` takes.
_EXPERIMENTAL_CHOICES = {"z_sampler": ("cycle",), "eta_sampler": ("cg", "bcm")}
