"""Interpretation of the 20 Newsgroups models, as in the paper's figures.

From the saved Horseshoe and normal-prior DOLDA models of one setting and K
(``python -m experiments.newsgroups sweep --save-models DIR`` saves them)::

    python -m experiments.interpret --models DIR [--setting stripped] [--topics 100]
        [--classes sci.space talk.politics.guns] [--quick]

writes under ``experiments/results/``

* ``fig_coef_hist.png``: the histogram of all topic coefficients (posterior means,
  every class) under the Horseshoe and the normal prior, same K;
* ``fig_coef_classes.png``: per-class coefficients with 95% credible intervals
  for two classes, both priors;
* ``newsgroups_interpretation.json``: counts of coefficients near zero and of
  signal topics per prior, the top-10 words of the two classes' signal topics,
  and one test document's explanation (the first test message of the first
  class, its predicted class and the largest contributions).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from experiments.newsgroups import RESULTS, ROOT, load_setting

PRIORS = ("horseshoe", "normal")


def _load(models, setting, topics, prior):
    import dolda

    path = Path(models) / f"newsgroups_{setting}_K{topics}_dolda_{prior}"
    if not path.exists():
        raise FileNotFoundError(f"no saved model at {path}; run the sweep with --save-models")
    return dolda.load(path)


def interpret(models, setting="stripped", topics=100, classes=("sci.space",
              "talk.politics.guns"), data=None, quick=False):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fitted = {p: _load(models, setting, topics, p) for p in PRIORS}
    suffix = "_quick" if quick else ""
    classes = [c for c in classes if c in set(fitted["horseshoe"].classes_)] or \
        list(fitted["horseshoe"].classes_[:2])
    out = {"setting": setting, "topics": topics, "classes": classes, "priors": {}}

    fig, ax = plt.subplots(figsize=(7, 3.6))
    all_coefs = {}
    for prior, m in fitted.items():
        tcols = [c for c in m.coef_.columns if c.startswith("topic ")]
        coefs = m.coef_[tcols].to_numpy().ravel()
        all_coefs[prior] = coefs
        lo, hi = m.coef_interval(0.95)
        signal = ((lo[tcols] > 0) | (hi[tcols] < 0)).to_numpy()
        out["priors"][prior] = {
            "n_coefficients": int(coefs.size),
            "share_abs_below_0.1": float(np.mean(np.abs(coefs) < 0.1)),
            "share_abs_below_0.5": float(np.mean(np.abs(coefs) < 0.5)),
            "median_abs": float(np.median(np.abs(coefs))),
            "max_abs": float(np.max(np.abs(coefs))),
            "signal_per_class_mean": float(signal.sum(axis=1).mean()),
            "signal_total": int(signal.sum()),
        }
    lim = max(np.quantile(np.abs(c), 0.995) for c in all_coefs.values())
    bins = np.linspace(-lim, lim, 81)
    for prior, coefs in all_coefs.items():
        ax.hist(np.clip(coefs, -lim, lim), bins=bins, alpha=0.55, label=f"{prior} prior")
    ax.set_yscale("log")
    ax.set_xlabel(f"posterior mean of a topic coefficient, all classes (the outer bins "
                  f"hold everything beyond ±{lim:.1f})")
    ax.set_ylabel("count (log scale)")
    ax.set_title(f"20 Newsgroups ({setting}), K = {topics}: topic coefficients")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"fig_coef_hist{suffix}.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(len(classes), 2, figsize=(11, 3.0 * len(classes)), squeeze=False)
    for j, prior in enumerate(PRIORS):
        m = fitted[prior]
        tcols = [c for c in m.coef_.columns if c.startswith("topic ")]
        lo, hi = m.coef_interval(0.95)
        for i, cls in enumerate(classes):
            ax = axes[i, j]
            mean = m.coef_.loc[cls, tcols].to_numpy()
            l, h = lo.loc[cls, tcols].to_numpy(), hi.loc[cls, tcols].to_numpy()
            sig = (l > 0) | (h < 0)
            x = np.arange(len(tcols))
            ax.vlines(x, l, h, color=np.where(sig, "tab:red", "0.7"), lw=1)
            ax.plot(x, mean, ".", color="k", ms=3)
            ax.axhline(0, color="0.4", lw=0.6)
            ax.set_title(f"{cls}: {prior} prior ({int(sig.sum())} signal topics)", fontsize=9)
            ax.set_xlabel("topic")
    fig.suptitle("Per-class topic coefficients, posterior mean and 95% interval "
                 "(red: interval excludes 0)", fontsize=10)
    fig.tight_layout()
    fig.savefig(RESULTS / f"fig_coef_classes{suffix}.png", dpi=110)
    plt.close(fig)

    m = fitted["horseshoe"]
    out["signal_topics"] = {}
    for cls in classes:
        s = m.signal_topics(cls, n_words=10)
        out["signal_topics"][cls] = [
            {"topic": str(t), "coef": round(float(r["coef"]), 3),
             "interval": [round(float(r["lower"]), 3), round(float(r["upper"]), 3)],
             "words": r["top_words"]} for t, r in s.iterrows()]

    data = data or str(ROOT.parent / "shared" / "data")
    _, _, te_texts, yte, _, Xte = load_setting(data, setting, quick)
    idx = int(np.flatnonzero(yte == classes[0])[0])
    ex = m.explain(te_texts[idx], X_row=None if Xte is None else Xte.iloc[[idx]])
    proba = ex.attrs["proba"]
    top_class = max(proba, key=proba.get)
    rows = ex[ex["class"] == top_class].head(6)
    words = m.top_words(8)
    out["example"] = {
        "true_class": str(yte[idx]), "predicted": str(top_class),
        "probability": round(float(proba[top_class]), 3),
        "text_start": " ".join(te_texts[idx].split())[:300],
        "contributions": [
            {"feature": r.feature, "value": round(float(r.value), 3),
             "coef": round(float(r.coef), 3), "contribution": round(float(r.contribution), 3),
             "words": " ".join(words.loc[r.feature]) if r.feature in words.index else ""}
            for r in rows.itertuples()],
    }
    path = RESULTS / f"newsgroups_interpretation{suffix}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out, path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", required=True)
    parser.add_argument("--setting", default="stripped")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--classes", nargs=2, default=["sci.space", "talk.politics.guns"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    out, path = interpret(args.models, args.setting, args.topics, args.classes, args.data,
                          args.quick)
    print(json.dumps(out["priors"], indent=1), "->", path)


if __name__ == "__main__":
    main()
