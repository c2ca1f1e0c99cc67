"""``dolda fit``: fit a DOLDA model on a table and save it (with checkpoints and resume)."""

from __future__ import annotations

import contextlib
import shlex
import time
from pathlib import Path

import click

from ._compile_ahead import ahead
from ._common import _echo_warnings, _library_errors
from ._dask import DEFAULT_CONNECT_TIMEOUT, _cluster_options, _dask_client
from ._files import _check_model_out, _lock_checkpoint
from ._models import _save_model
from ._options import (
    _check_burn_in,
    _DATA,
    _DEF,
    _data_options,
    _estimator,
    _MODEL,
    _model_options,
)
from ._policy import _nested
from ._signals import _interrupts
from ._tables import DATA_FORMATS, _read_training_data
from ._group import main
from ._sections import SectionedCommand
from ._metrics import training_accuracy


@main.command(cls=SectionedCommand, epilog=DATA_FORMATS)
@click.argument("data", type=_DATA)
@_data_options()
@click.option("--label", "label_column", required=True, metavar="COL",
              help="Column holding the class labels.")
@click.option("--time-column", "time_column", default=None, metavar="COL",
              help="Column of the rows' dates or times (or any number that orders them): the "
                   "rows are sorted by it (stably) and the probabilities are calibrated for "
                   "drift, on the latest 20% of the rows (calibration_holdout='time'; with "
                   "--calibration-holdout SHARE, that share of the latest rows is held out of "
                   "the chain instead).  Without it the rows' order is never read.")
@_model_options
@click.option("--checkpoint", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory where the chain is saved every --checkpoint-every iterations "
                   "and on Ctrl-C.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=_DEF["checkpoint_every"],
              show_default=True,
              help="Iterations between checkpoints.")
@click.option("--resume", type=_MODEL, default=None,
              help="Continue the chain saved in this checkpoint directory (same data and "
                   "options as the interrupted run).")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="Directory to save the fitted model in.")
@click.option("--overwrite", is_flag=True, help="Replace an existing model at --out.")
@click.option("--chains", "n_chains", type=click.IntRange(min=1), default=_DEF["n_chains"],
              show_default=True,
              help="Independent chains (run one after another); with 2 or more the worst "
                   "R-hat of the topic coefficients is reported.")
@_cluster_options
def fit(data, text_column, label_column, covariates, encoding, time_column, checkpoint,
        checkpoint_every, resume, out, overwrite, scheduler, n_shards, phi_transport,
        connect_timeout, **opts):
    """Fit DOLDA to the documents in DATA and save the model in --out.

    \b
    Example:
      dolda fit reviews.csv --text review --label rating --covariates year,genre \\
          --topics 30 --iterations 1000 --checkpoint ckpt --out model/

    Ctrl-C (or SIGTERM) stops after the current iteration; with --checkpoint the
    chain is saved and the message gives the complete command that resumes it (exit
    code 130 for Ctrl-C, 143 for SIGTERM).  A second Ctrl-C ends the process at once;
    the last checkpoint written stays complete and resumable.

    With --scheduler the documents are cut into --shards shards that live on the
    workers of that Dask cluster for the whole fit (see docs/DISTRIBUTED.md); the
    same --seed and --shards give the same model with or without --scheduler.
    """
    from ..posterior.calibration import describe_proba
    from ..models.dolda.estimator import FitInterrupted

    _check_burn_in(opts)
    out = _check_model_out(out, overwrite)
    if resume is not None and checkpoint is None:
        checkpoint = resume  # a second interruption keeps saving to the same place
    if checkpoint is not None and _nested(checkpoint, out):
        raise click.BadParameter(f"{checkpoint} and --out {out} must be different directories, "
                                 "neither inside the other (the model would replace the "
                                 "checkpoint)", param_hint="'--checkpoint'")
    _lock_checkpoint(checkpoint)
    start = 0
    if resume is not None:
        from ..io import ModelFormatError, read_header

        try:
            start = int(read_header(resume).get("meta", {}).get("next_iteration", 0))
        except ModelFormatError as exc:
            raise click.BadParameter(" ".join(str(exc).split()),
                                     param_hint="'--resume'") from None
    frame, texts, y, X = _read_training_data(data, text_column, label_column, covariates,
                                             encoding)
    model_opts = dict(opts)
    if time_column is not None:
        frame, texts, y, X = _in_time_order(frame, texts, y, X, time_column, data)
        if model_opts.get("calibration_holdout") is None:
            model_opts["calibration_holdout"] = "time"
        opts["time_column"] = time_column  # for the resume commands
    n_chains = opts.pop("n_chains")
    model_opts.pop("n_chains")
    model = _estimator(model_opts, n_chains=n_chains,
                       checkpoint=None if checkpoint is None else str(checkpoint),
                       checkpoint_every=checkpoint_every, n_shards=n_shards,
                       phi_transport=phi_transport,
                       backend="local" if scheduler is None else "dask")
    cluster = {"scheduler": scheduler, "n_shards": n_shards, "connect_timeout": connect_timeout,
               "phi_transport": phi_transport}
    tic = time.perf_counter()

    def resume_command(at):
        return _resume_command(data, text_column, label_column, covariates, encoding,
                               dict(opts, n_chains=n_chains), checkpoint_every, at, out,
                               overwrite, cluster, checkpoint=checkpoint)

    # right after an install, the later kernels compile on a second core (not on Dask: the
    # workers compile their own)
    with ahead("fit") if scheduler is None else contextlib.nullcontext():
        try:
            with _interrupts(), _dask_client(scheduler, connect_timeout) as workers, \
                    _echo_warnings(), _library_errors():
                if workers is not None:
                    click.echo(f"Fitting on the Dask cluster at {scheduler} ({workers})",
                               err=True)
                model.fit(texts, y, covariates=X, resume=None if resume is None else str(resume))
        except FitInterrupted as exc:
            click.echo(f"Interrupted: the chain so far is saved in {exc.checkpoint}.", err=True)
            click.echo(f"Resume with:\n  {resume_command(exc.checkpoint)}", err=True)
            click.get_current_context().exit(_exit_code(exc))
        except KeyboardInterrupt as exc:
            click.echo(_interrupted_message(checkpoint, resume_command), err=True)
            click.get_current_context().exit(_exit_code(exc))
        seconds = time.perf_counter() - tic
        with _echo_warnings(), _library_errors():
            accuracy = training_accuracy(model, y, X, texts)  # one product, no re-sampling
            if accuracy is None:  # two-step fit: the training documents must be re-sampled
                click.echo(f"Scoring the {len(texts)} training documents...", err=True)
                accuracy = float((model.predict(texts, covariates=X) == y).mean())
    cli_meta = {"text_column": text_column, "label_column": label_column,
                "covariates": list(covariates), "data": str(data), "n_docs": len(texts),
                "time_column": time_column}
    _save_model(model, out, cli_meta)
    ran = model.n_iter_ - start
    rate = model.n_tokens_ * ran / seconds if seconds > 0 else float("nan")
    click.echo(f"Fitted DOLDA: {len(texts)} documents, {model.n_tokens_} tokens, "
               f"{len(model.vocabulary_.words)} words, {len(model.classes_)} classes, "
               f"{opts['n_topics']} topics")
    click.echo(f"  iterations        {model.n_iter_}" + (f" (resumed at {start})" if start else ""))
    if scheduler is not None:
        click.echo(f"  backend           dask at {scheduler}")
    click.echo(f"  time              {seconds:.1f} s ({rate:,.0f} tokens/s)")
    click.echo(f"  training accuracy {accuracy:.3f} (in-sample; dolda evaluate or dolda score "
               "estimate accuracy on new documents)")
    click.echo(f"  probabilities     {describe_proba(model)}")
    convergence = getattr(model, "convergence_", None)
    if convergence is not None:
        click.echo(f"  convergence       {_verdict_line(convergence)}")
        if not convergence["converged"]:
            command = _converge_command(data, text_column, label_column, covariates,
                                        encoding, dict(opts, n_chains=n_chains),
                                        checkpoint_every, convergence, out, cluster)
            click.echo(f"  to converge       {command}")
    if model.n_chains_ > 1:
        from ..evaluate.diagnostics import worst_rhat

        with _echo_warnings(), _library_errors():
            rhat = worst_rhat(model, topics_only=True)
        flag = "" if rhat < 1.05 else "  (above 1.05: run more iterations)"
        click.echo(f"  worst R-hat       {rhat:.3f} over the topic coefficients, "
                   f"{model.n_chains_} chains{flag}")
    click.echo(f"Model saved to {out}")


def _in_time_order(frame, texts, y, X, time_column, data):
    """``(frame, texts, y, X)`` sorted (stably) by ``frame[time_column]``: numbers as numbers,
    anything else read as dates; a missing or unreadable value is refused."""
    import numpy as np
    import pandas as pd

    if time_column not in frame.columns:
        raise click.BadParameter(f"{data} has no column {time_column!r}",
                                 param_hint="'--time-column'")
    values = frame[time_column]
    if not pd.api.types.is_numeric_dtype(values):
        try:
            values = pd.to_datetime(values, utc=True, format="mixed")
        except (ValueError, TypeError) as exc:
            raise click.BadParameter(f"column {time_column!r} holds values that are neither "
                                     f"numbers nor dates ({' '.join(str(exc).split())[:120]})",
                                     param_hint="'--time-column'") from None
    missing = pd.isna(values).to_numpy()
    if missing.any():
        raise click.BadParameter(f"column {time_column!r} is empty on {int(missing.sum())} "
                                 f"row(s), the first row {int(np.flatnonzero(missing)[0]) + 2} "
                                 "of the file: every row needs a time to be put in order",
                                 param_hint="'--time-column'")
    order = np.argsort(values.to_numpy(), kind="stable")
    from ..posterior.holdout import _rows

    return (frame.iloc[order].reset_index(drop=True), [texts[i] for i in order],
            np.asarray(y)[order], _rows(X, order))


def _interrupted_message(checkpoint, resume_command) -> str:
    """What an interrupted fit left, told as it is: a resumable checkpoint (and how to
    resume it) or nothing."""
    if checkpoint is None:
        return ("Interrupted; nothing was saved (pass --checkpoint DIR to be able to "
                "resume).")
    from ..io import ModelFormatError, load_checkpoint

    try:
        meta, _ = load_checkpoint(checkpoint)
        done = int(meta["next_iteration"])
    except (ModelFormatError, OSError, ValueError, KeyError, TypeError):
        return (f"Interrupted before the first checkpoint; nothing resumable is in "
                f"{checkpoint}.")
    return (f"Interrupted; the checkpoint in {checkpoint} (iteration {done}) can be "
            f"resumed with:\n  {resume_command(checkpoint)}")


def _exit_code(exc) -> int:
    """128 + the signal that stopped the fit: 130 for Ctrl-C, 143 for SIGTERM."""
    import signal

    return 128 + int(getattr(exc, "signum", None) or signal.SIGINT)


def _verdict_line(convergence) -> str:
    """``convergence_`` (:func:`dolda.evaluate.convergence.chain_convergence`) in one line: the
    verdict, what is wrong and the figures; the command to run follows on its own line."""
    return convergence.get("summary") or convergence["message"]


def _converge_command(data, text_column, label_column, covariates, encoding, opts,
                      checkpoint_every, convergence, out, cluster) -> str:
    """The command that runs the iterations ``convergence`` asks for, as it can be run: the
    fit's checkpoint continued with --resume, or, when the fit wrote none, a refit with
    --checkpoint (beside --out) so that the next one can be continued."""
    opts = dict(opts)
    checkpoint = convergence.get("checkpoint")
    if checkpoint is not None:
        opts["n_iter"] = int(convergence["n_iter"]) + int(convergence["more_iterations"])
        return _resume_command(data, text_column, label_column, covariates, encoding, opts,
                               checkpoint_every, checkpoint, out, True, cluster)
    opts["n_iter"] = int(convergence["n_iter"]) + 2 * int(convergence["more_iterations"])
    return _resume_command(data, text_column, label_column, covariates, encoding, opts,
                           checkpoint_every, None, out, True, cluster,
                           checkpoint=Path(f"{out}-checkpoint"))


def _resume_command(data, text_column, label_column, covariates, encoding, opts,
                    checkpoint_every, resume, out, overwrite, cluster=None,
                    checkpoint=None) -> str:
    """The ``dolda fit`` command line continuing the chain in ``resume`` (saving further
    checkpoints to ``checkpoint``, by default the same directory), or, with ``resume``
    None, a fresh fit that writes its checkpoints to ``checkpoint``."""
    args = ["dolda", "fit", str(data), "--text", text_column, "--label", label_column]
    if covariates:
        args += ["--covariates", ",".join(covariates)]
    if encoding.lower() not in ("utf-8", "utf8"):
        args += ["--encoding", encoding]
    if opts.get("time_column") is not None:
        args += ["--time-column", opts["time_column"]]
    args += ["--topics", str(opts["n_topics"]), "--prior", opts["prior"],
             "--iterations", str(opts["n_iter"])]
    if opts["burn_in"] is not None:
        args += ["--burn-in", str(opts["burn_in"])]
    args += ["--alpha", opts["alpha"] if isinstance(opts["alpha"], str) else repr(opts["alpha"]),
             "--beta", str(opts["beta"]) if opts["beta"] == "auto" else repr(opts["beta"]),
             "--rare-share", repr(opts["rare_share"]), "--min-df", str(opts["min_df"]),
             "--min-count", str(opts["covariate_min_count"]), "--seed", str(opts["seed"])]
    if opts.get("max_df", 1.0) != 1.0:
        args += ["--max-df", repr(opts["max_df"])]
    for value in opts.get("stop_words", ()):
        args += ["--stop-words", value]
    if opts.get("token_pattern") is not None:
        args += ["--token-pattern", opts["token_pattern"]]
    if "n_words" in opts:
        args += ["--words", str(opts["n_words"]), "--word-features",
                 opts.get("word_features", "log"), "--word-selection",
                 opts.get("word_selection", "df")]
    if opts["two_step"]:
        args.append("--two-step")
    if opts.get("calibration_holdout") is not None:
        args += ["--calibration-holdout", repr(opts["calibration_holdout"])]
    if opts.get("global_scales", "shared") != "shared":
        args += ["--global-scales", opts["global_scales"]]
    if opts.get("word_prior", "horseshoe") != "horseshoe":
        args += ["--word-prior", opts["word_prior"], "--word-prior-variance",
                 repr(opts.get("word_prior_variance", 1.0))]
    if "slab_scale" in opts:  # always: the prior of the chain to resume
        args += ["--slab-scale", "none" if opts["slab_scale"] is None
                 else repr(opts["slab_scale"])]
        if opts["slab_scale"] is not None:
            args += ["--slab-blocks", opts["slab_blocks"]]  # set with --slab-scale
    if "topic_init" in opts:  # always: the start of the chain to resume
        args += ["--topic-init", opts["topic_init"]]
    if opts.get("init_iter", 0):
        args += ["--init-iter", str(opts["init_iter"])]
    if opts["threads"] is not None:
        args += ["--threads", str(opts["threads"])]
    if opts["quiet"]:
        args.append("--quiet")
    cluster = cluster or {}
    if cluster.get("scheduler") is not None:
        args += ["--scheduler", cluster["scheduler"]]
        if cluster.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT) != DEFAULT_CONNECT_TIMEOUT:
            args += ["--connect-timeout", repr(cluster["connect_timeout"])]
        if cluster.get("phi_transport", "auto") != "auto":
            args += ["--phi-transport", cluster["phi_transport"]]
    if cluster.get("n_shards") is not None:  # the shard layout is part of the chain
        args += ["--shards", str(cluster["n_shards"])]
    if opts.get("n_chains", 1) != 1:
        args += ["--chains", str(opts["n_chains"])]
    args += ["--checkpoint", str(resume if checkpoint is None else checkpoint),
             "--checkpoint-every", str(checkpoint_every)]
    if resume is not None:
        args += ["--resume", str(resume)]
    args += ["--out", str(out)]
    if overwrite:
        args.append("--overwrite")
    return shlex.join(args)
