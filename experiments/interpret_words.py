"""What DOLDA with word covariates keeps for one 20 Newsgroups class (issue 12).

Fits ``DOLDA(n_topics=K, n_words=W)`` on a 20 Newsgroups setting and writes,
for one class, its signal topics (top words, coefficient and 90% interval) and
the words and covariates the Horseshoe kept (interval excluding zero), with
the test accuracy, to ``experiments/results/interpret_words_<setting>_<class>.md``::

    python -m experiments.interpret_words [--setting raw] [--label sci.space]
        [--topics 50] [--words 2000] [--iterations 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"


def _table(frame, columns):
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "---|" * len(columns)
    rows = []
    for name, row in frame.iterrows():
        cells = [str(name)] + [f"{row[c]:+.3f}" if isinstance(row[c], float) else str(row[c])
                               for c in columns[1:]]
        rows.append("| " + " | ".join(cells) + " |")
    return [head, rule] + rows


def run(data_dir, setting, label, topics, words, iterations, seed, threads):
    from dolda import DOLDA
    from experiments.newsgroups import load_setting

    tr, ytr, te, yte, _, _ = load_setting(Path(data_dir), setting, False)
    tic = time.perf_counter()
    model = DOLDA(n_topics=topics, n_words=words, n_iter=iterations, random_state=seed,
                  n_jobs=threads, progress=False).fit(tr, ytr)
    fit_s = time.perf_counter() - tic
    accuracy = float(np.mean(model.predict(te) == np.asarray(yte)))
    topics_df = model.signal_topics(label, level=0.90)
    cov = model.signal_covariates(label, level=0.90)
    cov = cov.reindex(cov["coef"].abs().sort_values(ascending=False).index)
    lines = [f"# What DOLDA keeps for `{label}` (20 Newsgroups, {setting})", "",
             f"`DOLDA(n_topics={topics}, n_words={words}, n_iter={iterations}, "
             f"random_state={seed})`, fitted in {fit_s:.0f} s; test accuracy {accuracy:.3f}. "
             "Intervals are 90% posterior intervals of the coefficient in the class's "
             "one-vs-rest probit; listed are the topics and the word / covariate columns "
             "whose interval excludes zero.", "",
             f"## Signal topics ({len(topics_df)} of {topics})", ""]
    lines += _table(topics_df, ["topic"] + [c for c in topics_df.columns])
    lines += ["", f"## Words and covariates kept ({len(cov)} of "
              f"{model.eta_draws_.shape[2] - topics - 1})", ""]
    lines += _table(cov.head(40), ["column"] + list(cov.columns))
    if len(cov) > 40:
        lines += ["", f"... and {len(cov) - 40} more."]
    lines += ["", "Reproduce: `python -m experiments.interpret_words --setting "
              f"{setting} --label {label} --topics {topics} --words {words} "
              f"--iterations {iterations} --seed {seed}`", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"interpret_words_{setting}_{label.replace('.', '_')}.md"
    out.write_text("\n".join(lines))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--setting", default="raw", choices=("raw", "stripped"))
    p.add_argument("--label", default="sci.space")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--words", type=int, default=2000)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    print(run(a.data, a.setting, a.label, a.topics, a.words, a.iterations, a.seed, a.threads))


if __name__ == "__main__":
    main()
