"""The click options and parameter types the ``dolda`` commands share: the model's
options (``fit``, ``evaluate``), the data options, ``--seed``, the priors, and the
estimator they build.
"""

from __future__ import annotations

from pathlib import Path

import click

from ._tables import _split_columns
from ..models.dolda.options import flat_defaults


class _PositiveOrAuto(click.ParamType):
    """A float > 0 or one of the ``words`` (hyperparameters learned from the data)."""

    def __init__(self, words=("auto",)):
        self.words = tuple(words)
        self.name = "|".join(self.words) + "|FLOAT"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        words = " or ".join(repr(w) for w in self.words)
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a number nor {words}", param, ctx)
        if not number > 0 or number == float("inf"):
            self.fail(f"{value!r} must be a finite number > 0 or {words}", param, ctx)
        if number > MAX_PRIOR:
            self.fail(f"{value!r} is too large (at most {MAX_PRIOR:g}; a prior this strong "
                      f"makes every distribution uniform) or use {words}", param, ctx)
        return number


class _FloatRange(click.FloatRange):
    """click's FloatRange without NaN and infinities (NaN passes every range check)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number != number or number in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class _SlabScale(_FloatRange):
    """``--slab-scale``: a number > 0, or 'none' (no slab)."""

    name = "number|none"

    def __init__(self):
        super().__init__(0, None, min_open=True)

    def convert(self, value, param, ctx):
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            return None
        return super().convert(value, param, ctx)


def _slab_blocks(ctx, param, value):
    """``--slab-blocks`` checked as the library checks ``slab_blocks``."""
    from ..models.dolda.params import check_slab_blocks

    try:
        blocks = check_slab_blocks(value)
    except ValueError as err:
        raise click.BadParameter(str(err).replace("slab_blocks must be", "must be")) from None
    return "all" if len(blocks) == 3 else ",".join(blocks)


#: ``--seed``: the library takes any int >= 0.
_SEED = click.IntRange(min=0)
#: ``--seed`` of the commands that also cut folds (scikit-learn's limit).
MAX_FOLD_SEED = 2**32 - 1


def _check_fold_seed(seed: int) -> None:
    if seed > MAX_FOLD_SEED:
        raise click.BadParameter(f"must be at most {MAX_FOLD_SEED} (it also seeds the folds), "
                                 f"got {seed}", param_hint="'--seed'")
#: The largest --beta / --alpha: beyond, every topic or document is uniform and the
#: prior's sums overflow (``--beta 1e308`` ended in NaN in Phi).
MAX_PRIOR = 1e6

_POSITIVE_OR_AUTO = _PositiveOrAuto()
_ALPHA_TYPE = _PositiveOrAuto(("auto", "auto_symmetric"))


class _CountOrAuto(click.ParamType):
    """An int >= 0, 'auto' or 'all' (the number of word covariates)."""

    name = "N|auto|all"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() in ("auto", "all"):
            return value.strip().lower()
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a whole number, 'auto' nor 'all'", param, ctx)
        if number < 0:
            self.fail(f"{value!r} must be >= 0, 'auto' or 'all'", param, ctx)
        return number


def _check_token_pattern(ctx, param, value):
    """``--token-pattern``: a regular expression whose matches are non-empty words."""
    if value is None:
        return None
    from ..design.corpus import check_token_pattern

    try:
        check_token_pattern(value)
    except ValueError as exc:
        raise click.BadParameter(" ".join(str(exc).split()), param_hint="'--token-pattern'") \
            from None
    import re

    regex = re.compile(value)
    if regex.groups > 1:
        raise click.BadParameter(f"{value!r} has {regex.groups} groups; a token pattern may "
                                 "have at most one (use (?:...) for grouping)",
                                 param_hint="'--token-pattern'")
    if regex.fullmatch(""):
        raise click.BadParameter(f"{value!r} matches the empty string; every token must have "
                                 "at least one character (use + rather than *)",
                                 param_hint="'--token-pattern'")
    return value


#: The estimator's defaults, by the options' flat names (written once, in
#: :mod:`dolda.models.dolda.options`).
_DEF = flat_defaults()


def _model_options(func):
    """The DOLDA options shared by ``fit`` and ``evaluate``."""
    options = [
        click.option("--topics", "-k", "n_topics", type=click.IntRange(min=2),
                     default=_DEF["n_topics"],
                     show_default=True, help="Number of topics K."),
        click.option("--prior", type=click.Choice(["horseshoe", "normal"]),
                     default=_DEF["prior"], show_default=True,
                     help="Prior of the regression coefficients."),
        click.option("--iterations", "-n", "n_iter", type=click.IntRange(min=1),
                     default=_DEF["n_iter"],
                     show_default=True, help="Gibbs iterations, burn-in included."),
        click.option("--burn-in", "burn_in", type=click.IntRange(min=0), default=None,
                     help="Iterations discarded before averaging  [default: half]."),
        click.option("--alpha", type=_ALPHA_TYPE, default=_DEF["alpha"], show_default=True,
                     help="Dirichlet prior of the topic proportions, or 'auto' (one value "
                          "per topic, learned during the burn-in) or 'auto_symmetric' "
                          "(one value, learned)."),
        click.option("--beta", type=_POSITIVE_OR_AUTO, default=_DEF["beta"], show_default=True,
                     help="Dirichlet prior of the topics, or 'auto' (learned during the "
                          "burn-in)."),
        click.option("--rare-share", type=_FloatRange(0, 1, max_open=True),
                     default=_DEF["rare_share"],
                     show_default=True, help="Share of tokens, made of the rarest words, that "
                     "are removed from the vocabulary."),
        click.option("--min-df", type=click.IntRange(min=1), default=_DEF["min_df"],
                     show_default=True,
                     help="Drop words found in fewer documents."),
        click.option("--max-df", type=_FloatRange(0, 1, min_open=True), default=_DEF["max_df"],
                     show_default=True,
                     help="Drop words found in more than this share of the documents."),
        click.option("--stop-words", "stop_words", multiple=True, metavar="english|none|FILE",
                     help="Stop words: 'english' (scikit-learn's list), 'none', or a file "
                          "with one word per line; repeat to combine  [default: english]."),
        click.option("--token-pattern", default=None, metavar="REGEX",
                     callback=_check_token_pattern,
                     help="Regular expression of a token  [default: words of 2+ characters "
                          "starting with a letter]."),
        click.option("--words", "n_words", type=_CountOrAuto(), default=_DEF["n_words"],
                     show_default=True,
                     help="Words as covariates: the counts of this many most frequent "
                          "words enter the regression beside the topics ('word=<w>'); "
                          "'auto': one per two training documents, 2,000 to 5,000; "
                          "'all': every kept vocabulary word; 0: topics only."),
        click.option("--word-features", type=click.Choice(["log", "binary", "tfidf"]),
                     default=_DEF["word_features"], show_default=True,
                     help="How a word covariate counts: log(1 + count), 0/1, or tf-idf "
                          "(unit rows)."),
        click.option("--word-selection", type=click.Choice(["df", "chi2"]),
                     default=_DEF["word_selection"], hidden=True,
                     help="Experimental: which words: most frequent (df), or most associated "
                          "with the label (chi2, words in 3+ training documents)."),
        click.option("--min-count", "covariate_min_count", type=click.IntRange(min=1),
                     default=_DEF["covariate_min_count"], show_default=True,
                     help="Pool the levels of a categorical covariate seen in fewer training "
                          "rows into one '<column>=other' indicator."),
        click.option("--two-step", is_flag=True,
                     help="Fit LDA first and the probit on its topics afterwards "
                          "(the paper's comparison model) instead of the joint sampler."),
        click.option("--calibration-holdout", "calibration_holdout",
                     type=_FloatRange(0, 0.5, min_open=True), default=_DEF["calibration_holdout"],
                     metavar="SHARE",
                     help="Fit the probability calibration on the last SHARE of the rows "
                          "(e.g. 0.2), held out of the chain: for rows in time order, such "
                          "as bug reports by filing date  [default: leave-one-out on all "
                          "rows]."),
        click.option("--global-scales", "global_scales", type=click.Choice(["shared", "block"]),
                     default=_DEF["global_scales"], hidden=True,
                     help="Experimental: the Horseshoe's global scale: one per class over all "
                          "columns "
                          "(the paper's), or one per class and block (covariates, words, "
                          "topics), so that many word columns do not set the topics' "
                          "shrinkage."),
        click.option("--word-prior", "word_prior",
                     type=click.Choice(["horseshoe", "normal", "both"]),
                     default=_DEF["word_prior"], show_default=True,
                     help="Prior of the word coefficients: the Horseshoe (a few decisive "
                          "words per class), a fixed Gaussian N(0, --word-prior-variance) "
                          "(many words that each lean a little; pair it with --word-features "
                          "tfidf), or both: the --words words under the Horseshoe plus "
                          "every word's tf-idf under the Gaussian."),
        click.option("--word-prior-variance", "word_prior_variance",
                     type=click.FloatRange(min=0, min_open=True),
                     default=_DEF["word_prior_variance"],
                     show_default=True,
                     help="The variance of --word-prior normal."),
        click.option("--slab-scale", "slab_scale", type=_SlabScale(),
                     default=str(_DEF["slab_scale"]),
                     show_default=True, metavar="S|none",
                     help="A Gaussian slab N(0, S^2) on the shrunk coefficients of "
                          "--slab-blocks (the regularised Horseshoe): a rare word the data "
                          "leave free cannot wander off; 'none': the paper's Horseshoe."),
        click.option("--slab-blocks", "slab_blocks", callback=_slab_blocks,
                     default=",".join(_DEF["slab_blocks"]), show_default=True,
                     metavar="all|BLOCK[,BLOCK]",
                     help="The columns the slab covers: 'all', or some of covariates, "
                          "words, topics (comma-separated)."),
        click.option("--topic-init", "topic_init", type=click.Choice(["random", "nmf"]),
                     default=_DEF["topic_init"], show_default=True,
                     help="Start of the topics: 'nmf', every token in its most probable "
                          "topic under PLSA (a KL factorisation of the training counts; the "
                          "same for every seed), or 'random', uniform on the seed."),
        click.option("--init-iter", "init_iter", type=click.IntRange(min=0),
                     default=_DEF["init_iter"],
                     hidden=True, metavar="N",
                     help="Experimental: iterations of unsupervised LDA run before the supervised "
                          "chain, "
                          "which starts from their topics (never kept as draws)."),
        click.option("--seed", type=_SEED, default=0, show_default=True,
                     help="Random seed; the same seed gives the same chain for any --threads."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="Threads for the sampler  [default: all cores]."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


_COVARIATES_HELP = ("Comma-separated covariate columns (numeric columns are used as they "
                    "are, others are one-hot encoded).")
_PREDICT_COVARIATES_HELP = ("Comma-separated columns of DATA holding the model's covariates, "
                            "in the model's order  [default: the model's covariate names].")


def _data_options(for_predict=False):
    def decorate(func):
        options = [
            click.option("--text", "text_column", required=not for_predict, default=None,
                         metavar="COL",
                         help="Column holding the documents" + (
                             "  [default: the model's text column]." if for_predict else ".")),
            click.option("--covariates", "covariates", multiple=True, callback=_split_columns,
                         metavar="A,B",
                         help=_PREDICT_COVARIATES_HELP if for_predict else _COVARIATES_HELP),
            click.option("--encoding", default="utf-8", show_default=True,
                         help="Encoding of a CSV/TSV file."),
        ]
        for option in reversed(options):
            func = option(func)
        return func
    return decorate


_DATA = click.Path(exists=True, dir_okay=False, path_type=Path)
class _ModelPath(click.Path):
    """An existing model or checkpoint directory, or one whose complete copy was left
    beside it by an interrupted replacement (``docs/FORMAT.md``, Atomicity)."""

    def convert(self, value, param, ctx):
        from ..io import atomic as _atomic
        from ..io import _is_complete

        path = Path(value)
        if not path.exists() and _atomic.readable_path(path, _is_complete) != path:
            return path
        return super().convert(value, param, ctx)


_MODEL = _ModelPath(exists=True, file_okay=False, path_type=Path)


def _estimator(opts, **extra):
    """The DOLDA of the command's options (each by the flat name the fit reads; an option the
    command does not take keeps the estimator's default)."""
    from ..models.dolda.estimator import DOLDA
    from ..models.dolda.options import from_flat

    flat = dict(n_topics=opts["n_topics"], prior=opts["prior"], alpha=opts["alpha"],
                beta=opts["beta"], n_iter=opts["n_iter"], burn_in=opts["burn_in"],
                rare_share=opts["rare_share"], min_df=opts["min_df"], max_df=opts["max_df"],
                stop_words=_stop_words(opts["stop_words"]), token_pattern=opts["token_pattern"],
                n_words=opts["n_words"], word_features=opts["word_features"],
                word_selection=opts["word_selection"],
                covariate_min_count=opts["covariate_min_count"], two_step=opts["two_step"],
                random_state=opts["seed"], n_jobs=opts["threads"], progress=not opts["quiet"])
    for name in ("calibration_holdout", "global_scales", "word_prior", "word_prior_variance",
                 "slab_scale", "slab_blocks", "topic_init", "init_iter"):
        if name in opts:
            flat[name] = opts[name]
    flat.update(extra)
    return from_flat(DOLDA, flat)


def _stop_words(values):
    """``--stop-words`` values -> DOLDA's ``stop_words``: one choice, or the union of several."""
    from ..design.corpus import read_stop_words

    values = tuple(values) or ("english",)
    resolved = []
    for value in values:
        choice = None if value.lower() == "none" else value
        try:
            resolved.append(read_stop_words(choice))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--stop-words'") from None
    if len(resolved) == 1:
        return resolved[0]
    words = set()
    for value in resolved:
        if value == "english":
            from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

            value = ENGLISH_STOP_WORDS
        words.update(value or ())
    return sorted(words)


def _check_burn_in(opts) -> None:
    if opts["burn_in"] is not None and opts["burn_in"] >= opts["n_iter"]:
        raise click.BadParameter(f"must be smaller than --iterations ({opts['n_iter']}), "
                                 f"got {opts['burn_in']}", param_hint="'--burn-in'")

