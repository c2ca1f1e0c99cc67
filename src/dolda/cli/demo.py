"""``dolda demo``: fit a simulated corpus (or digits) with no download."""

from __future__ import annotations

import time

import click

from ._compile_ahead import ahead
from ._group import main


def _hellinger(p, q):
    import numpy as np

    return np.sqrt(0.5 * ((np.sqrt(p)[:, None, :] - np.sqrt(q)[None, :, :]) ** 2).sum(axis=2))


def match_topics(phi_fit, words_fit, phi_true, words_true):
    """Match fitted topics to true topics by the Hungarian algorithm on the Hellinger
    distance of their word distributions.

    Parameters
    ----------
    phi_fit : ndarray (K, V_fit)
        Fitted topics over the model's vocabulary ``words_fit``.
    phi_true : ndarray (K_true, V)
        True topics over ``words_true``; words the model dropped count as 0.

    Returns
    -------
    true_of_fit : dict int -> int
        The true topic matched to each fitted topic.
    distance : dict int -> float
        Hellinger distance of each matched pair (0 identical, 1 disjoint).
    """
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    column = {str(w): j for j, w in enumerate(words_fit)}
    fit = np.zeros((phi_fit.shape[0], len(words_true)))
    for v, word in enumerate(words_true):
        j = column.get(str(word))
        if j is not None:
            fit[:, v] = phi_fit[:, j]
    fit /= np.maximum(fit.sum(axis=1, keepdims=True), 1e-300)
    cost = _hellinger(fit, phi_true)
    rows, cols = linear_sum_assignment(cost)
    return ({int(r): int(c) for r, c in zip(rows, cols)},
            {int(r): float(cost[r, c]) for r, c in zip(rows, cols)})


@main.command()
@click.option("--probit", is_flag=True,
              help="Run the DO probit demo on scikit-learn's digits instead.")
@click.option("--docs", "n_docs", type=click.IntRange(min=50), default=1000, show_default=True,
              help="Simulated documents (a quarter is held out for testing).")
@click.option("--topics", "-k", "n_topics", type=click.IntRange(min=2), default=10,
              show_default=True, help="Topics of the simulation and of the model.")
@click.option("--iterations", "-n", type=click.IntRange(min=2), default=None,
              help="Gibbs iterations  [default: 200; 600 with --probit].")
@click.option("--seed", default=1, show_default=True, help="Random seed.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads for the sampler  [default: all cores].")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def demo(probit, n_docs, n_topics, iterations, seed, threads, quiet):
    """Fit DOLDA to a corpus simulated from its own generative model (no download).

    Prints the accuracy on held-out simulated documents beside the Bayes
    classifier that knows the true parameters, how close the fitted topics are
    to the true ones (Hungarian matching on the Hellinger distance of Phi), and
    each class's recovered signal topics next to the true ones.  Takes well
    under a minute on two cores.

    With --probit: a DO probit with the Horseshoe prior on scikit-learn's digits.
    """
    if probit:
        _demo_probit(iterations or 600, seed, not quiet)
        return
    with ahead("demo"):  # right after an install: the later kernels compile on a second core
        _demo_dolda(n_docs, n_topics, iterations or 200, seed, threads, not quiet)


def _demo_dolda(n_docs, n_topics, iterations, seed, threads, progress):
    import numpy as np

    from ..datasets import simulate
    from ..models.dolda.estimator import DOLDA
    from ..models.dolda.options import Text, Words

    sim = simulate(n_docs=n_docs, n_topics=n_topics, n_classes=3, vocab_size=50 * n_topics,
                   doc_length=80, n_signal=2, random_state=seed)
    n_test = n_docs // 4
    train, test = np.arange(n_docs - n_test), np.arange(n_docs - n_test, n_docs)
    texts = sim.texts
    click.echo(f"Simulated corpus: {n_docs} documents ({len(train)} for training, {n_test} "
               f"held out), {n_topics} topics, {len(sim.vocabulary)} words, "
               f"{len(sim.classes)} classes, {sim.params['n_signal']} signal topics per class")
    # the simulation's own Dirichlet parameters; keep every word (none is noise here)
    # (the generative model has no word-level signal: topics only)
    model = DOLDA(n_topics=n_topics, n_iter=iterations, alpha=sim.params["alpha"],
                  beta=sim.params["beta"], random_state=seed, n_jobs=threads,
                  progress=progress, text=Text(rare_share=0.0), words=Words(n=0))
    tic = time.perf_counter()
    model.fit([texts[i] for i in train], sim.y[train])
    took = time.perf_counter() - tic
    acc = model.score([texts[i] for i in test], sim.y[test])
    bayes = float(np.mean(sim.classes[np.argmax(sim.proba[test], axis=1)] == sim.y[test]))
    click.echo(f"DOLDA: {iterations} iterations in {took:.1f} s "
               f"({model.n_tokens_ * iterations / took:,.0f} tokens/s)")
    click.echo(f"Held-out accuracy: {acc:.3f}   (Bayes classifier with the true parameters: "
               f"{bayes:.3f})")

    true_of_fit, dist = match_topics(model.phi_, model.vocabulary_.words, sim.phi,
                                     sim.vocabulary)
    click.echo(f"Topics matched to the true ones: median Hellinger distance "
               f"{np.median(list(dist.values())):.3f} (0 = identical, 1 = disjoint)")
    K = sim.phi.shape[0]
    true_topics = sim.eta[:, -K:]
    click.echo("Signal topics per class, true vs recovered (sign and true topic number):")
    found = total = n_extra = 0
    for l, label in enumerate(sim.classes):
        true = {int(k): "+" if true_topics[l, k] > 0 else "-"
                for k in np.flatnonzero(true_topics[l])}
        signal = model.signal_topics(label)
        recovered = {}
        for name, sign in zip(signal.index, signal["sign"]):
            recovered[true_of_fit[int(str(name).split()[-1])]] = sign
        hits = sum(recovered.get(k) == s for k, s in true.items())
        found, total = found + hits, total + len(true)
        extra = sorted(set(recovered) - set(true))
        n_extra += len(extra)
        fmt = lambda d: " ".join(f"{s}{k}" for k, s in sorted(d.items())) or "none"  # noqa: E731
        click.echo(f"  {label}: true {fmt(true):<12} recovered {fmt(recovered):<16} "
                   f"{hits}/{len(true)} found" + (f", {len(extra)} extra" if extra else ""))
    click.echo(f"Recovered {found} of {total} true signal topics with the right sign.")
    if n_extra:
        click.echo("(Extra topics: the topic proportions sum to 1, so a shift shared by all "
                   "topic coefficients of a class and its intercept leaves the likelihood "
                   "unchanged; only the prior pins the topic coefficients to 0.)")


def _demo_probit(iterations, seed, progress):
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from ..utils.draws import draw_quantiles
    from ..models.probit.estimator import DOProbit

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    click.echo(f"digits: {len(Xtr)} training and {len(Xte)} test images, 64 pixels, 10 classes")
    start = time.perf_counter()
    model = DOProbit(prior="horseshoe", n_iter=iterations, random_state=seed,
                     progress=progress).fit(Xtr, ytr)
    took = time.perf_counter() - start
    acc = model.score(Xte, yte)
    acc_lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
    click.echo(f"DOProbit (Horseshoe): test accuracy {acc:.3f}  ({iterations} iterations, "
               f"{took:.1f} s)")
    click.echo(f"LogisticRegression  : test accuracy {acc_lr:.3f}")
    lo, hi = draw_quantiles(model.eta_draws_[:, :, 1:], [0.025, 0.975])
    kept = (lo > 0) | (hi < 0)
    click.echo(f"95% intervals excluding zero: {kept.sum()} of {kept.size} coefficients")
    for digit in (0, 1):
        idx = np.flatnonzero(kept[digit])
        order = idx[np.argsort(-np.abs(model.coef_[digit, idx]))][:6]
        parts = ", ".join(f"px{p // 8},{p % 8}:{model.coef_[digit, p]:+.2f}" for p in order)
        click.echo(f"  digit {digit}: strongest pixels {parts}")
