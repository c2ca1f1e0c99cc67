"""The ``dolda`` command."""

from __future__ import annotations

import time

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dolda")
def main():
    """dolda: interpretable supervised topic models (Diagonal Orthant LDA)."""


@main.command()
@click.option("--iterations", default=600, show_default=True, help="Gibbs iterations.")
@click.option("--seed", default=1, show_default=True, help="Random seed.")
def demo(iterations, seed):
    """Fit a DO probit with the Horseshoe prior on scikit-learn's digits (no download).

    Prints the test accuracy beside multinomial logistic regression on the same
    split, and the pixels the Horseshoe kept for two digits.
    """
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from .probit import DOProbit

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    click.echo(f"digits: {len(Xtr)} training and {len(Xte)} test images, 64 pixels, 10 classes")
    start = time.perf_counter()
    model = DOProbit(prior="horseshoe", n_iter=iterations, random_state=seed,
                     progress=True).fit(Xtr, ytr)
    took = time.perf_counter() - start
    acc = model.score(Xte, yte)
    acc_lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
    click.echo(f"DOProbit (Horseshoe): test accuracy {acc:.3f}  ({iterations} iterations, "
               f"{took:.1f} s)")
    click.echo(f"LogisticRegression  : test accuracy {acc_lr:.3f}")
    lo, hi = np.quantile(model.eta_draws_[:, :, 1:], [0.025, 0.975], axis=0)
    kept = (lo > 0) | (hi < 0)
    click.echo(f"95% intervals excluding zero: {kept.sum()} of {kept.size} coefficients")
    for digit in (0, 1):
        idx = np.flatnonzero(kept[digit])
        order = idx[np.argsort(-np.abs(model.coef_[digit, idx]))][:6]
        parts = ", ".join(f"px{p // 8},{p % 8}:{model.coef_[digit, p]:+.2f}" for p in order)
        click.echo(f"  digit {digit}: strongest pixels {parts}")


if __name__ == "__main__":  # pragma: no cover
    main()
