"""``init_iter``: the supervised chain starts from the topics of unsupervised LDA iterations.

The warm start runs on its own derived stream, so the chain it starts is the same for any
``n_jobs`` (as every other block), and it is not the chain of the random start.
"""

import numpy as np
from dolda import Words
from dolda.experimental import Experimental


def test_warm_start_same_for_any_n_jobs_and_not_the_random_start():
    from dolda import DOLDA
    from dolda.datasets import simulate

    sim = simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=200, doc_length=40,
                   random_state=0)
    fits = [DOLDA(n_topics=4, n_iter=30, random_state=1, n_jobs=j, progress=False, words=Words(n=0), experimental=Experimental(init_iter=5)).fit(sim.texts, sim.y)
            for j in (1, 2)]
    assert np.array_equal(fits[0].eta_draws_, fits[1].eta_draws_)
    plain = DOLDA(n_topics=4, n_iter=30, random_state=1, progress=False, words=Words(n=0)).fit(sim.texts, sim.y)
    assert not np.array_equal(plain.eta_draws_, fits[0].eta_draws_)
