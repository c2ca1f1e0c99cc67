"""Which coefficients mix slowest, and is the Horseshoe's global scale the cause (issue 32)?

One default fit (word covariates, K = 20) of a corpus, then the bulk ESS and split R-hat of
``log tau`` per class (and block), of the ``--top`` coefficients of largest posterior
|mean|, of those coefficients divided by their class's tau, and of the log-likelihood, with
the names of the ten largest.  Usage::

    python -m experiments.mixing --corpus jira_storm --n-iter 3000 [--set slab_scale=2.5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from experiments.interpret import _parse_option, load_stability_corpus


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="jira_storm")
    parser.add_argument("--n-iter", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--data", default=None)
    args = parser.parse_args(argv)
    from dolda import DOLDA
    from dolda.evaluate.rhat import bulk_ess, split_rhat

    texts, y, te, yte = load_stability_corpus(args.corpus, args.data)
    options = dict(_parse_option(o) for o in args.set)
    tic = time.time()
    m = DOLDA(n_topics=20, n_iter=args.n_iter, random_state=args.seed, n_jobs=2,
              progress=False, **options).fit(texts, y)
    print(f"fit {time.time() - tic:.0f} s, accuracy {np.mean(m.predict(te) == np.asarray(yte)):.4f}")
    tau = np.asarray(m.tau_draws_, np.float64)
    S = tau.shape[0]
    lt = np.log(tau).reshape(1, S, -1)
    print("log tau ESS:", np.round(bulk_ess(lt), 1), "R-hat:", np.round(split_rhat(lt), 2))
    eta = m.eta_draws_
    P = eta.shape[2]
    mean = sum(np.asarray(eta[s], np.float64) for s in range(S)) / S
    top = np.argsort(-np.abs(mean).ravel())[:args.top]
    E = np.stack([np.asarray(eta[s], np.float64).ravel()[top] for s in range(S)])[None]
    print(f"top-{args.top} coefficients: ESS median {np.median(bulk_ess(E)):.1f}, "
          f"R-hat median {np.median(split_rhat(E)):.2f}")
    if tau.ndim == 2:
        print(f"  divided by their class's tau: ESS median "
              f"{np.median(bulk_ess(E / tau[:, top // P][None])):.1f}")
    ll = m.loglik_["total"].to_numpy()[-S:][None, :, None]
    print(f"log-likelihood ESS {bulk_ess(ll)[0]:.1f}, R-hat {split_rhat(ll)[0]:.2f}")
    names = np.asarray(m.feature_names_)
    print("largest:", [(str(m.classes_[i // P]), str(names[i % P])) for i in top[:10]])


if __name__ == "__main__":
    main()
