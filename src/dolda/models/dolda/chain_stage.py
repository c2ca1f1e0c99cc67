"""Stage 3 of a DOLDA fit: running its chains.

:func:`run_chains` runs ``n_chains`` chains one after the other (their seeds, checkpoint
and resume directories); :func:`run_chain` drives one backend's chain
(:mod:`dolda.backends`) through its iterations: checkpoints, resuming and extending,
Ctrl-C between iterations, the burn-in updates of learned alpha and beta, the kept draws
and the running mean of Phi.  Both work on a :class:`dolda.DOLDA` and return the chains'
draws; :mod:`dolda.models.dolda.summary` pools them.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

from ...sampler import gibbs_iteration as dolda_chain
from ...sampler import hyper
from ...sampler import phi_mean
from ...sampler import probit_blocks as probit_blocks
from ...sampler.alpha import alpha_json, alpha_value
from ...sampler.rng import chain_seed, seed_from
from ...sampler.threads import using_threads
from ...utils.phases import phase
from ...utils.validation import check_checkpoint_fits
from .kept import KeptDraws, SingletonRows
from .resume import RESUME_PRIOR_PARAMS, check_resume  # noqa: F401 - callers import them here
from . import resume as _resume
from .state import alpha_mode
from .options import flat_params, flat_value

logger = logging.getLogger("dolda.models.dolda.estimator")

#: From this many topics on, ``z_sampler="auto"`` uses the Metropolis-Hastings z-step (both
#: have the exact target).  Measured on 20 Newsgroups, one sweep from the same state, 2
#: threads: exact / MH time 0.84 at K = 20, 1.8 at K = 100 (the MH step wins from K ~ 30 by
#: interpolation).
MH_MIN_TOPICS = 50


def resolved_z_sampler(z_sampler, n_topics):
    """The z-step ``z_sampler`` names at ``n_topics`` topics ("auto" resolved)."""
    if z_sampler == "auto":
        return "mh" if n_topics >= MH_MIN_TOPICS else "exact"
    return z_sampler


def run_chains(model, design, p, resume):
    """Stage 3 of ``model.fit``: the ``n_chains`` chains of ``model`` (a DOLDA) on
    ``design`` (:class:`dolda.models.dolda.design_stage.FitDesign`), one after the other, each
    with its own seed and, for several chains, its own ``chain<c>`` checkpoint and resume
    directory.  Returns the chains' draws (:func:`run_chain`), in chain order."""
    K = p["n_topics"]
    config = dolda_chain.DOLDAConfig(K, p["alpha"], p["beta"], design.prior,
                                     resolved_z_sampler(model.z_sampler, K), p["n_jobs"],
                                     model.eta_sampler_, model.phi_sampler,
                                     p["loglik_every"], design.n_word_columns)
    base_seed = seed_from(model.random_state)
    n_chains = p["n_chains"]
    several = n_chains > 1
    done = [0] * n_chains
    chain_dirs = [None] * n_chains
    fingerprint = None
    if several and (resume is not None or flat_value(model, "checkpoint") is not None):
        fingerprint = _resume.fingerprint(model, design.data)
    if resume is not None and several:  # the manifest and every chain checked before any runs
        from ... import io

        meta, _ = io.load_checkpoint(resume)
        _resume.check_manifest(model, meta, design.data, n_chains, p["n_iter"], str(resume),
                               fingerprint)
        chain_dirs = [_chain_dir(resume, c) for c in range(n_chains)]
        for c, d in enumerate(chain_dirs):
            if d is not None:
                chain_meta = io.read_header(d)["meta"]
                check_resume(model, chain_meta, design.data, p["n_iter"], str(d), fingerprint)
                done[c] = int(chain_meta["next_iteration"])
    manifest = None
    if flat_value(model, "checkpoint") is not None and several:
        def manifest(c, next_iteration):
            from ... import io

            done[c] = int(next_iteration)
            io.save_checkpoint_manifest(flat_value(model, "checkpoint"), _resume.manifest_meta(
                model, n_chains, done, p["n_iter"], fingerprint))
    chains = []
    first_state = shared_start(design.data, p.get("topic_init", "random"), K)
    # the progress bar shows the chain: its phase is logged, not echoed
    with phase(f"sampling {p['n_iter']} iterations x {p['n_chains']} chain(s)", show=False):
        for c in range(p["n_chains"]):
            ckpt = flat_value(model, "checkpoint")
            if ckpt is not None and p["n_chains"] > 1:
                ckpt = Path(ckpt) / f"chain{c}"
            chain_resume = resume
            if resume is not None and several:
                chain_resume = chain_dirs[c]  # None: this chain had not started
            if manifest is not None and c == 0:
                manifest(0, done[0])  # before the first chain runs: resumable from now on
            chains.append(run_chain(model, design.data, config, p, chain_seed(base_seed, c),
                                    chain_resume, ckpt, c,
                                    None if manifest is None else
                                    (lambda it, c=c: manifest(c, it)), first_state))
    return chains


def shared_start(data, topic_init, n_topics):
    """``start()``: the fit's topic start ``(z, ndk)`` (None: each chain's own random one),
    computed when the first chain that starts afresh asks for it, and a copy for each chain
    (the start is the same for every chain: :mod:`dolda.sampler.topic_start`)."""
    from ...sampler.topic_start import start_topics

    made = []

    def start():
        if not made:
            made.append(start_topics(topic_init, data.tokens, data.doc_ptr, data.n_words,
                                     n_topics))
        topics = made[0]
        return None if topics is None else (topics[0].copy(), topics[1].copy())

    return start


def _chain_dir(resume, c):
    """Chain ``c``'s checkpoint in the several-chain checkpoint ``resume``: its directory,
    or None when that chain had not written one (a complete copy left beside a missing
    directory by a killed replacement counts: :mod:`dolda.io.atomic`)."""
    from ... import io
    from ...io import atomic

    path = Path(resume) / f"chain{c}"
    found = atomic.readable_path(path, io._is_complete)
    return path if (found / io.HEADER_FILE).is_file() else None


class FitInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during ``fit``: the chain so far was saved to ``checkpoint``;
    ``signum`` is the signal that asked for it."""

    def __init__(self, checkpoint, signum=signal.SIGINT):
        super().__init__(f"fit interrupted; checkpoint saved to {checkpoint}; "
                         f"continue with fit(..., resume={str(checkpoint)!r})")
        self.checkpoint = checkpoint
        self.signum = signum


#: The signals :class:`_DeferredInterrupt` defers: Ctrl-C and ``kill`` (a container or
#: job scheduler stopping the fit) alike.
DEFERRED_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None),
                                     getattr(signal, "SIGTERM", None)) if s is not None)


class _DeferredInterrupt:
    """Turn the first Ctrl-C (or SIGTERM) into a flag checked between iterations.

    The chain state is only consistent between Gibbs iterations, so the fit
    finishes the current iteration, writes a checkpoint and stops.  A second
    signal interrupts at once: two signals that arrive while one compiled kernel
    runs (Python sees them only when it returns, as one) are counted through the
    signal wakeup file, so they stop the fit as two.  With :attr:`hard_second`
    (the command line sets it) the first signal also restores the default action
    for the next one, which then ends the process at once even inside a kernel
    (no message; the last checkpoint written stays complete, files are written
    atomically).  Outside the main thread signals cannot be caught, and Ctrl-C
    behaves as usual.
    """

    #: A second signal ends the process at once (the signal's default action).
    hard_second = False

    def __init__(self, describe=None):
        self.requested = False
        self.signum = None
        self._describe = describe
        self._old = {}
        self._pipe = None
        self._old_fd = None

    def _count(self) -> int:
        """Signals delivered since the last call (bytes in the wakeup pipe)."""
        if self._pipe is None:
            return 1
        n = 0
        while True:
            try:
                data = os.read(self._pipe[0], 512)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # pragma: no cover
                break
            if not data:
                break
            n += sum(1 for b in data if b in DEFERRED_SIGNALS)
        return max(n, 1)

    def _handler(self, signum, frame):
        count = self._count()
        if self.requested or count >= 2:
            exc = KeyboardInterrupt()
            exc.signum = signum
            raise exc
        self.requested = True
        self.signum = signum
        name = "interrupt" if signum == signal.SIGINT else signal.Signals(signum).name
        state = f"; {self._describe()}" if self._describe is not None else ""
        logger.warning("%s received: stopping after this iteration (press Ctrl-C again to stop "
                       "at once%s)", name, state)
        if self.hard_second:
            for s in DEFERRED_SIGNALS:
                signal.signal(s, signal.SIG_DFL)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in DEFERRED_SIGNALS:
                self._old[s] = signal.signal(s, self._handler)
            try:
                r, w = os.pipe()
                os.set_blocking(r, False)
                os.set_blocking(w, False)
                self._old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
                self._pipe = (r, w)
            except (OSError, ValueError, AttributeError):  # pragma: no cover
                self._pipe = None
        return self

    def __exit__(self, *exc):
        if self._pipe is not None:
            signal.set_wakeup_fd(self._old_fd if self._old_fd is not None else -1)
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old = {}
        return False


def run_chain(model, data, config, p, seed, resume, checkpoint, chain, saved_hook=None,
              first_state=None):
    """Run (or resume) chain number ``chain`` of ``model`` (a DOLDA) on ``data``.

    ``p`` are the checked parameters, ``checkpoint`` where to write checkpoints (or
    None), ``resume`` a checkpoint to continue or extend, ``saved_hook(next_iteration)``
    is called after each checkpoint (the several-chain manifest), ``first_state`` gives the
    fit's topic start (:func:`shared_start`; None: computed here).  Returns the chain's
    draws as a dict (eta, tau and lambda draws, the posterior-mean Phi, n_dk,
    the log-likelihood trace, iteration seconds, alpha and beta).
    """
    from ... import io
    from ...utils.phases import cold_kernels

    n_iter, burn_in, thin = p["n_iter"], p["burn_in"], p["thin"]
    # a first run compiles the kernels (the chain's start and its first iteration): said,
    # and the progress bar, with its rate and ETA, starts after that first iteration
    compiling = bool(cold_kernels())
    compile_tic = time.perf_counter()
    if compiling:
        what = ("compiling the sampler's kernels (first run of this dolda installation only: "
                "1-3 minutes on an idle 2-core machine, longer on a busy one; cached for "
                "later runs) ...")
        logger.info("DOLDA: %s", what)
        if model.progress:
            print(f"DOLDA: {what}", file=sys.stderr, flush=True)
    keep = np.arange(burn_in, n_iter)[::thin]
    n_keep, K = len(keep), config.n_topics
    n_cols = data.X.shape[1] + K
    horseshoe = config.prior.horseshoe
    phi_from = max(burn_in, n_iter - p["phi_draws"])
    # the word columns of eta: the last n_w columns of X (dolda.models.dolda.kept)
    n_w = int(config.n_word_columns)
    w_start = data.X.shape[1] - n_w
    # the word columns one training row holds (the calibration map's leave-one-out pass)
    singles = SingletonRows.of(data.X, w_start, n_w) if horseshoe else None
    if resume is not None:
        meta, arr = io.load_checkpoint(resume)
        check_resume(model, meta, data, n_iter)
        check_checkpoint_fits(arr, len(data.y), len(data.tokens), data.n_classes, n_cols, K)
        _resume.check_chain_arrays(arr, data, K)
        start = int(meta["next_iteration"])
        if int(meta["seed"]) != seed:
            raise ValueError(f"the checkpoint {resume} belongs to a chain with another "
                             "seed: pass the same random_state as the interrupted fit")
        state = dolda_chain.DOLDAState(
            arr["z"].astype(np.int32), arr["ndk"].astype(np.int32), arr["phi"],
            probit_blocks.ProbitState(np.zeros((len(data.y), data.n_classes)), arr["eta"],
                                      arr["lam2"], arr["tau2"], arr["nu"], arr["xi"]))
        # float32 draws, the word block float16 (a checkpoint written before either: rounded
        # now, as the uninterrupted chain rounds them; dolda.models.dolda.kept)
        kept = KeptDraws.from_checkpoint(arr, w_start, n_w, phi_from, start)
        kept.attach_singles(arr, singles)
        loglik = arr["loglik"]
        phi_acc = phi_mean.from_arrays(arr)
        if int(meta["n_iter"]) != n_iter:  # extending a finished chain (checked above)
            from .extend import extend_draws

            kept, loglik, phi_acc = extend_draws(meta, arr, kept, n_iter, burn_in, thin)
    else:
        start = 0
        with using_threads(config.n_jobs):
            # topic_init="nmf": one deterministic start (the same z for every seed and chain)
            if first_state is None:
                first_state = shared_start(data, p.get("topic_init", "random"),
                                           config.n_topics)
            topics = first_state()
            state = dolda_chain.init_state(seed, data, config, topics)
            if p.get("init_iter", 0) > 0:
                state = warm_start(state, seed, data, config, p["init_iter"],
                                   from_state=topics is not None)
        # the kept draws in float32, the word block in float16 (dolda.utils.draws,
        # dolda.models.dolda.kept); the chain's state stays float64
        kept = KeptDraws.empty(n_keep, data.n_classes, n_cols, state.probit.tau2.shape,
                               horseshoe, w_start, n_w, phi_from).with_singles(singles)
        loglik = np.full((n_iter, 2), np.nan)
        # the running posterior mean of Phi, sparse (Rao-Blackwellised over the kept z)
        phi_acc = phi_mean.empty(data.n_words, K)

    from ...backends import make_chain

    runner = make_chain(flat_value(model, "backend"), seed, state, data, config, p["n_shards"],
                        model.client, p["snapshot_every"], p["phi_transport"])
    learn_alpha = alpha_mode(model.alpha)
    learn_beta = isinstance(model.beta, str) and model.beta == "auto"
    if resume is not None and "alpha" in meta:  # values learned before the checkpoint
        runner.config = runner.config._replace(alpha=alpha_value(meta["alpha"]),
                                               beta=meta["beta"])

    fingerprint = None if checkpoint is None else _resume.fingerprint(model, data)

    def save_checkpoint(next_iteration):
        z, ndk = runner.topics()
        meta = {"seed": seed, "next_iteration": int(next_iteration), "n_iter": n_iter,
                "n_tokens": int(len(data.tokens)), "n_docs": int(len(data.y)),
                "params": io.encode_params(flat_params(model)),
                "fingerprint": fingerprint,
                "alpha": alpha_json(runner.config.alpha),
                "beta": float(runner.config.beta)}
        arrays = {"z": z, "ndk": ndk, "phi": runner.phi(),
                  "eta": state.probit.eta, "lam2": state.probit.lam2,
                  "tau2": state.probit.tau2, "nu": state.probit.nu, "xi": state.probit.xi,
                  **{k: v for k, v in kept.to_arrays().items() if v is not None},
                  "loglik": loglik, **phi_mean.to_arrays(phi_acc)}
        written = io.save_checkpoint(checkpoint, meta, arrays)
        saved[0] = int(next_iteration)
        if saved_hook is not None:
            saved_hook(int(next_iteration))
        return written

    saved = [start if resume is not None and checkpoint is not None
             and str(resume) == str(checkpoint) else 0]

    def describe():
        if checkpoint is None:
            return "no checkpoint: nothing will be saved"
        if saved[0]:
            return f"the checkpoint of iteration {saved[0]} in {checkpoint} stays resumable"
        return f"no checkpoint in {checkpoint} yet"

    bar = None
    desc = "DOLDA" if p["n_chains"] == 1 else f"DOLDA chain {chain + 1}/{p['n_chains']}"
    if not compiling and model.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n_iter, initial=start, desc=desc, unit="it")
    slot = int(np.searchsorted(keep, start))
    rate_from = start
    seconds = np.full(n_iter, np.nan)  # wall time of every iteration run here
    tic = time.perf_counter()
    with _DeferredInterrupt(describe) as interrupt, using_threads(config.n_jobs):
        try:
            for it in range(start, n_iter):
                t_it = time.perf_counter()
                state, info = runner.step(it)
                if (learn_alpha or learn_beta) and it < burn_in and \
                        (it + 1) % hyper.UPDATE_EVERY == 0:
                    runner.config = hyper.learn(runner.config, *runner.topics(), data,
                                                learn_alpha, learn_beta)
                loglik[it] = (info.loglik_do, info.loglik_lda)
                if slot < n_keep and it == keep[slot]:
                    kept.keep(slot, state.probit)
                    slot += 1
                kept.add_window(it, state.probit)
                if it >= phi_from:
                    phi_acc = phi_mean.add(phi_acc, state.counts, runner.config.beta)
                seconds[it] = time.perf_counter() - t_it
                if compiling and it == start:  # the kernels are compiled now
                    compiling = False
                    took = time.perf_counter() - compile_tic
                    logger.info("DOLDA: kernels compiled: start and first iteration %.1f s",
                                took)
                    if model.progress:
                        from tqdm.auto import tqdm

                        print(f"DOLDA: kernels compiled: the start and first iteration took "
                              f"{took:.0f} s", file=sys.stderr, flush=True)
                        bar = tqdm(total=n_iter, initial=it + 1, desc=desc, unit="it")
                        tic, rate_from = time.perf_counter(), it + 1
                elif bar is not None:
                    rate = len(data.tokens) * (it + 1 - rate_from) / (time.perf_counter() - tic)
                    bar.set_postfix(loglik=f"{info.loglik_do + info.loglik_lda:.4g}",
                                    tokens_per_s=f"{rate:.3g}", refresh=False)
                    bar.update(1)
                if interrupt.requested and it + 1 < n_iter:
                    if checkpoint is None:
                        stop = KeyboardInterrupt(
                            "fit interrupted (pass checkpoint=... to be able to resume)")
                        stop.signum = interrupt.signum
                        raise stop
                    save_checkpoint(it + 1)
                    raise FitInterrupted(flat_value(model, "checkpoint"), interrupt.signum)
                if checkpoint is not None and (
                        (it + 1) % p["checkpoint_every"] == 0 or it + 1 == n_iter):
                    save_checkpoint(it + 1)
            ndk = runner.topics()[1].copy()
        finally:
            runner.close()
            if bar is not None:
                bar.close()

    alpha, beta = alpha_value(runner.config.alpha), float(runner.config.beta)
    # the chain's state (Phi, alias tables) is no longer needed: release it before the
    # one K x V array of phi_ is written from the sparse running mean
    runner = state = None
    phi = phi_mean.dense_mean(phi_acc)
    return {"seed": seed, "eta_draws": kept.eta_draws(), "tau_draws": kept.tau,
            "lambda_draws": kept.lam, "lambda_word_sums": kept.lam_word_sums,
            "lambda_word_rows": kept.row_var,
            "lambda_word_row_ids": None if singles is None else singles.rows,
            "window": n_iter - phi_from, "phi": phi,
            "ndk": ndk, "loglik": loglik, "seconds": seconds,
            "alpha": alpha, "beta": beta}


def warm_start(state, seed, data, config, n_sweeps, from_state=False):
    """``state`` with the topics of ``n_sweeps`` unsupervised LDA iterations (``init_iter``).

    :class:`dolda.backends.local.LocalLDAChain` (the engine of :class:`dolda.LDA`: collapsed
    z-sweeps, dense below 50 topics and sparse from there, and exact Phi draws, on the
    current thread pool) is run from its own random start (``from_state``: from the topics
    of ``state``, e.g. the ``topic_init="nmf"`` start) on a seed derived from the
    chain's, with the chain's alpha and beta; ``z``, ``n_{d,k}`` and Phi of its last
    iteration replace the start.  The probit blocks start at eta = 0 as before.
    """
    from ...backends.local import LocalLDAChain
    from ...sampler.sweeps import resolve_sampler

    lda_seed = int(np.random.SeedSequence([int(seed), 0x1DA]).generate_state(1, np.uint64)[0]
                   >> np.uint64(1))
    K = config.n_topics
    lda = LocalLDAChain(lda_seed, data.tokens, data.doc_ptr, data.n_words, K, config.alpha,
                        config.beta, resolve_sampler("auto", K) == "sparse",
                        topics=(state.z, state.ndk) if from_state else None)
    for it in range(int(n_sweeps)):
        lda.step(it)
    state.z[:] = lda.z
    state.ndk[:] = lda.ndk
    state.phi[:] = lda.phi_wk
    # a Pólya-urn chain derives its sparse Phi from this dense one at its first step
    return state._replace(phi_sparse=None)
