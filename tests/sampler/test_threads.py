"""Every thread pool (numba, BLAS, OpenMP, Python executors) obeys ``n_jobs`` in every block.

A profile hook records, at every call of a dolda function made inside a public estimator
method (fit, predict, predict_proba, transform, explain, ...), numba's thread count and the
thread count of every BLAS / OpenMP library loaded (threadpoolctl), plus the size of every
``ThreadPoolExecutor`` created.  The process starts with 2 threads everywhere (as on a
2-core machine with no environment limits), so a block that forgets ``n_jobs=1`` shows up.
The workload runs once without the hook first, so that numba compiles outside it.
"""

import concurrent.futures
import sys
import threading

import numba
import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

from dolda import DOLDA, LDA, DOProbit
from dolda.datasets import simulate
from dolda import Prediction, Text


PUBLIC = {"fit", "predict", "predict_proba", "transform", "fit_transform", "explain",
          "decision_function", "score"}
# the modules holding the estimators' public methods (DOLDA.explain is in a mixin module)
ESTIMATORS = {"dolda.models.dolda.estimator", "dolda.models.dolda.interpret", "dolda.models.lda", "dolda.models.probit.estimator"}


class _Recorder:
    def __init__(self):
        self.active = set()  # frames of public estimator methods running
        self.controller = ThreadpoolController()
        self.max_numba = 0
        self.max_pool = {}  # user_api -> max threads seen
        self.functions = set()
        self.executors = []

    def sample(self, where):
        self.functions.add(where)
        self.max_numba = max(self.max_numba, numba.get_num_threads())
        for lib in self.controller.lib_controllers:
            n = lib.get_num_threads()
            if n is not None:
                api = lib.user_api
                self.max_pool[api] = max(self.max_pool.get(api, 0), n)

    def hook(self, frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if not module.startswith("dolda"):
                return
            if module in ESTIMATORS and frame.f_code.co_name in PUBLIC:
                self.active.add(id(frame))
            if self.active:
                self.sample(f"{module}.{frame.f_code.co_name}")
        elif event == "return" and id(frame) in self.active:
            self.active.discard(id(frame))


@pytest.fixture
def record(monkeypatch):
    """Run a callable with every pool at 2 threads and the hook on; returns the recorder."""
    original = concurrent.futures.ThreadPoolExecutor.__init__

    def run(fn):
        rec = _Recorder()

        def init(self, max_workers=None, *args, **kwargs):
            rec.executors.append(max_workers)
            original(self, max_workers, *args, **kwargs)

        fn()  # compile outside the hook (the compiler is Python: slow under a profiler)
        monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "__init__", init)
        old_numba = numba.get_num_threads()
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        try:
            with threadpool_limits(limits=2):
                sys.setprofile(rec.hook)
                threading.setprofile(rec.hook)
                try:
                    fn()
                finally:
                    sys.setprofile(None)
                    threading.setprofile(None)
        finally:
            numba.set_num_threads(old_numba)
            monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "__init__", original)
        return rec

    return run


def _data():
    sim = simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=80, doc_length=30,
                   n_signal=1, random_state=0)
    return sim


def _assert_one_thread(rec, must_see):
    assert rec.max_numba == 1
    assert rec.max_pool, "threadpoolctl saw no BLAS library"
    assert max(rec.max_pool.values()) == 1, rec.max_pool
    assert all(w == 1 for w in rec.executors), rec.executors
    missing = [f for f in must_see if not any(f in seen for seen in rec.functions)]
    assert not missing, f"the hook never saw {missing}"


def test_dolda_fit_predict_transform_explain_use_one_thread(record):
    sim = _data()
    texts, y = sim.texts, sim.y

    def run():
        model = DOLDA(n_topics=4, n_iter=12, random_state=0, n_jobs=1, progress=False, text=Text(rare_share=0.0), prediction=Prediction(sweeps=4)).fit(texts[:90], y[:90])
        model.predict(texts[90:])
        model.transform(texts[90:])
        model.explain(texts[95])

    rec = record(run)
    _assert_one_thread(rec, ["draw_coefficients", "predict_topic_proportions",
                             "class_probabilities", "explain"])


def test_lda_and_probit_use_one_thread(record):
    sim = _data()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 30))
    yx = (X[:, 0] + rng.normal(size=150) > 0).astype(int) + (X[:, 1] > 1)

    def run():
        lda = LDA(n_topics=4, n_iter=10, random_state=0, n_jobs=1, progress=False).fit(sim.texts)
        lda.transform(sim.texts[:10], n_sweeps=4)
        probit = DOProbit(n_iter=20, random_state=0, n_jobs=1).fit(X, yx)
        probit.predict(X)

    rec = record(run)
    _assert_one_thread(rec, ["predict_topic_proportions", "draw_coefficients"])


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_the_hook_sees_two_threads_with_n_jobs_2(record):
    # the instrument works: with n_jobs=2 it records 2 threads in the blocks
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 5))
    y = (X[:, 0] > 0).astype(int)
    rec = record(lambda: DOProbit(n_iter=10, random_state=0, n_jobs=2).fit(X, y))
    assert rec.max_numba == 2
    assert max(rec.max_pool.values()) == 2
