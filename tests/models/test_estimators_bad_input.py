"""Bad input to every public method of DOLDA, LDA and DOProbit (and dolda.load / save).

Each row is one call on tiny data; see ``tests/_bad_input.py`` for what
"clear error", "ok" and "warn" require.  Property-based tests then feed
generated texts, labels and covariate frames to ``DOLDA.fit`` and check that
every outcome is a one-line ValueError/TypeError or a model whose
probabilities are finite and sum to one (and that saves and loads).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _bad_input import OUTCOMES, check_call, summary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames, range_indexes

import dolda
from dolda import DOLDA, LDA, DOProbit
from _flat import flat_dolda

pytestmark = pytest.mark.bad_input

WORDS = "apple pear fig kiwi plum lime grape melon berry cherry".split()
N = 30
RNG = np.random.default_rng(0)
TEXTS = [" ".join(RNG.choice(WORDS, 8)) for _ in range(N)]
Y = np.array(["a", "b", "c"])[np.arange(N) % 3]
XF = pd.DataFrame({"num": np.linspace(-1, 1, N), "cat": ["u", "v"] * (N // 2)})
XN = RNG.normal(size=(N, 2))
SMALL = dict(n_topics=3, n_iter=2, progress=False, random_state=0, predict_sweeps=4)


def dolda_(**kw):
    return flat_dolda(**{**SMALL, **kw})


def lda_(**kw):
    return LDA(**{**dict(n_topics=3, n_iter=2, progress=False, random_state=0,
                         transform_sweeps=4), **kw})


def probit_(**kw):
    return DOProbit(**{**dict(n_iter=5, random_state=0), **kw})


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"cov": dolda_().fit(TEXTS, Y, X=XF), "plain": dolda_().fit(TEXTS, Y),
                "sparse": dolda_().fit(TEXTS, Y, covariates=sp.csr_matrix(XN)),
                "lda": lda_().fit(TEXTS), "probit": probit_().fit(XN, Y)}


def finite_proba(p):
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)


def _frame(**cols):
    return pd.DataFrame(cols)


def _dup_frame():
    f = XF.copy()
    f.columns = ["num", "num"]
    return f


def _stray_frame():
    f = XF.copy().astype({"num": object})
    f.loc[4, "num"] = "n/a?"
    return f


FIT = [
    # DOLDA.fit: (name, call(fitted, tmp_path), expect, pattern)
    ("texts a single str", lambda f, t: dolda_().fit("apple pear", ["a"]), "error",
     "single str"),
    ("texts None", lambda f, t: dolda_().fit(None, Y), "error", "iterable"),
    ("texts an int", lambda f, t: dolda_().fit(5, Y), "error", "iterable"),
    ("texts 2-D array", lambda f, t: dolda_().fit(np.array([TEXTS, TEXTS]), Y), "error",
     "1-d"),
    ("texts DataFrame", lambda f, t: dolda_().fit(pd.DataFrame({"t": TEXTS}), Y), "error",
     "DataFrame"),
    ("a None document", lambda f, t: dolda_().fit(TEXTS[:-1] + [None], Y), "error",
     "document 29 is NoneType"),
    ("a bytes document", lambda f, t: dolda_().fit(TEXTS[:-1] + [b"apple"], Y), "error",
     "bytes"),
    ("a number document", lambda f, t: dolda_().fit(TEXTS[:-1] + [3.5], Y), "error",
     "float"),
    ("token list with a number", lambda f, t: dolda_().fit(TEXTS[:-1] + [["apple", 3]], Y),
     "error", "non-string token"),
    ("all documents empty", lambda f, t: dolda_().fit([""] * N, Y), "error", "empty"),
    ("only stop words", lambda f, t: dolda_().fit(["the of and"] * N, Y), "error", "empty"),
    ("y too short", lambda f, t: dolda_().fit(TEXTS, Y[:-1]), "error", "different lengths"),
    ("y 2-D", lambda f, t: dolda_().fit(TEXTS, np.stack([Y, Y], 1)), "error",
     "one-dimensional|1d array"),
    ("y with None", lambda f, t: dolda_().fit(TEXTS, list(Y[:-1]) + [None]), "error",
     "missing labels"),
    ("y with NaN", lambda f, t: dolda_().fit(TEXTS, np.r_[np.ones(N - 1), np.nan]), "error",
     "NaN"),
    ("y single class", lambda f, t: dolda_().fit(TEXTS, ["a"] * N), "error", "single class"),
    ("y mixed types", lambda f, t: dolda_().fit(TEXTS, [1, "a"] * (N // 2)), "either",
     "comparable|saved"),
    ("y of tuples", lambda f, t: dolda_().fit(TEXTS, [(1, 2), (3, 4)] * (N // 2)), "error",
     "one-dimensional|1d array|saved"),
    ("y identifier-like", lambda f, t: dolda_().fit(TEXTS, np.arange(N)), "warn",
     "identifier"),
    ("y with a lonely class", lambda f, t: dolda_().fit(TEXTS, list(Y[:-1]) + ["z"]), "warn",
     "single document"),
    ("y booleans (saveable)", lambda f, t: dolda_().fit(TEXTS, [True, False] * (N // 2))
     .save(t / "m"), "ok", None),
    ("X too short", lambda f, t: dolda_().fit(TEXTS, Y, X=XF.iloc[:-1]), "error",
     "different lengths"),
    ("X NaN", lambda f, t: dolda_().fit(TEXTS, Y, X=np.r_[XN[:-1], [[np.nan, 0]]]), "error",
     "missing"),
    ("X inf", lambda f, t: dolda_().fit(TEXTS, Y, X=np.r_[XN[:-1], [[np.inf, 0]]]), "error",
     "infinite"),
    ("X 1e300 (the hang)", lambda f, t: dolda_().fit(TEXTS, Y, X=XN * 1e300), "error",
     "values up to"),
    ("X sparse 1e300", lambda f, t: dolda_().fit(TEXTS, Y, X=sp.csr_matrix(XN * 1e300)),
     "error", "values up to"),
    ("X 1e7", lambda f, t: dolda_().fit(TEXTS, Y, X=XN * 1e7), "warn", "rescal"),
    ("X 3-D", lambda f, t: dolda_().fit(TEXTS, Y, X=np.zeros((N, 2, 2))), "error", "2-D"),
    ("X duplicated columns", lambda f, t: dolda_().fit(TEXTS, Y, X=_dup_frame()), "error",
     "duplicated covariate name"),
    ("X one non-numeric cell", lambda f, t: dolda_().fit(TEXTS, Y, X=_stray_frame()), "error",
     "numeric except for 1 cell"),
    ("X strings", lambda f, t: dolda_().fit(TEXTS, Y, X=np.array([["a"]] * N)), "ok", None),
    ("n_topics 1", lambda f, t: dolda_(n_topics=1).fit(TEXTS, Y), "error", "n_topics"),
    ("n_topics str", lambda f, t: dolda_(n_topics="3").fit(TEXTS, Y), "error", "n_topics"),
    ("n_topics float", lambda f, t: dolda_(n_topics=2.5).fit(TEXTS, Y), "error", "n_topics"),
    ("n_topics 10^8", lambda f, t: dolda_(n_topics=10**8).fit(TEXTS, Y), "error",
     "GiB of memory"),
    ("n_topics 200 on 240 tokens", lambda f, t: dolda_(n_topics=200).fit(TEXTS, Y), "warn",
     "fewer than 10 tokens"),
    ("alpha negative", lambda f, t: dolda_(alpha=-1).fit(TEXTS, Y), "error", "alpha"),
    ("alpha NaN", lambda f, t: dolda_(alpha=float("nan")).fit(TEXTS, Y), "error", "alpha"),
    ("beta inf", lambda f, t: dolda_(beta=float("inf")).fit(TEXTS, Y), "error", "beta"),
    ("prior_variance 0", lambda f, t: dolda_(prior_variance=0).fit(TEXTS, Y), "error",
     "Prior.variance"),
    ("n_iter 0", lambda f, t: dolda_(n_iter=0).fit(TEXTS, Y), "error", "n_iter"),
    ("burn_in >= n_iter", lambda f, t: dolda_(burn_in=2).fit(TEXTS, Y), "error", "burn_in"),
    ("thin 0", lambda f, t: dolda_(thin=0).fit(TEXTS, Y), "error", "thin"),
    ("prior unknown", lambda f, t: dolda_(prior="laplace").fit(TEXTS, Y), "error", "Prior.kind"),
    ("z_sampler unknown", lambda f, t: dolda_(z_sampler="fast").fit(TEXTS, Y), "error",
     "Sampler.z"),
    ("backend unknown", lambda f, t: dolda_(backend="spark").fit(TEXTS, Y), "error",
     "backend"),
    ("n_jobs 0", lambda f, t: dolda_(n_jobs=0).fit(TEXTS, Y), "error", "n_jobs"),
    ("n_shards 0", lambda f, t: dolda_(n_shards=0).fit(TEXTS, Y), "error", "n_shards"),
    ("n_chains 0", lambda f, t: dolda_(n_chains=0).fit(TEXTS, Y), "error", "n_chains"),
    ("checkpoint_every 0", lambda f, t: dolda_(checkpoint_every=0).fit(TEXTS, Y), "error",
     "Checkpoint.every"),
    ("covariate_min_count 0", lambda f, t: dolda_(covariate_min_count=0).fit(TEXTS, Y),
     "error", "Covariates.min_count"),
    ("rare_share 1", lambda f, t: dolda_(rare_share=1.0).fit(TEXTS, Y), "error",
     "rare_share"),
    ("min_df negative", lambda f, t: dolda_(min_df=-1).fit(TEXTS, Y), "error", "min_df"),
    ("resume missing", lambda f, t: dolda_().fit(TEXTS, Y, resume=t / "none"), "error",
     "does not exist"),
    ("resume a model", lambda f, t: (f["plain"].save(t / "m"),
                                     dolda_().fit(TEXTS, Y, resume=t / "m")), "error",
     "not a checkpoint"),
]


def _save_twice(f, t):
    f["plain"].save(t / "m")
    f["plain"].save(t / "m")


def _write_file(t):
    (t / "file").write_text("x")
    return t / "file"


def _keepdir(t):
    (t / "keep").mkdir()
    (t / "keep" / "data.txt").write_text("precious")
    return t / "keep"


METHODS = [
    ("DOLDA.predict", "before fit", lambda f, t: dolda_().predict(TEXTS), "error",
     "not fitted"),
    ("DOLDA.predict", "X missing", lambda f, t: f["cov"].predict(TEXTS), "error",
     "pass X"),
    ("DOLDA.predict", "X not expected", lambda f, t: f["plain"].predict(TEXTS, X=XF), "error",
     "without covariates"),
    ("DOLDA.predict", "X wrong columns", lambda f, t: f["cov"].predict(
        TEXTS, X=XF.rename(columns={"num": "n"})), "error", "missing from X"),
    ("DOLDA.predict", "X an array for a frame model", lambda f, t: f["cov"].predict(
        TEXTS, X=XN), "error", "missing from X|DataFrame"),
    ("DOLDA.predict", "X too short", lambda f, t: f["cov"].predict(TEXTS, X=XF.iloc[:3]),
     "error", "different lengths"),
    ("DOLDA.predict", "X 1e300", lambda f, t: f["cov"].predict(
        TEXTS, X=XF.assign(num=XF.num * 1e300)), "error", "values up to"),
    ("DOLDA.predict", "X NaN", lambda f, t: f["cov"].predict(
        TEXTS, X=XF.assign(num=np.nan)), "error", "missing"),
    ("DOLDA.predict", "texts a str", lambda f, t: f["plain"].predict("apple"), "error",
     "single str"),
    ("DOLDA.predict", "texts None", lambda f, t: f["plain"].predict(None), "error",
     "iterable"),
    ("DOLDA.predict", "a None document", lambda f, t: f["plain"].predict(["apple", None]),
     "error", "NoneType"),
    ("DOLDA.predict", "[''] (like an empty document in a batch)",
     lambda f, t: f["plain"].predict_proba([""]), "warn", "empty"),
    ("DOLDA.predict", "unknown words only", lambda f, t: f["plain"].predict_proba(["durian"]),
     "warn", "empty"),
    ("DOLDA.predict", "empty list", lambda f, t: f["plain"].predict([]), "error", "empty"),
    ("DOLDA.predict", "unseen category", lambda f, t: f["cov"].predict_proba(
        TEXTS, X=XF.assign(cat="zz")), "warn", "not seen in fit"),
    ("DOLDA.predict", "token lists", lambda f, t: f["plain"].predict_proba(
        [["apple", "pear"], ["kiwi"]]), "ok", None),
    # to the last bits only: the calibration map's matmul rounds differently for a batch
    # of 1 and of 2 rows (BLAS); 70 of 200 draws 1e-9 away from this fit's differ by an ulp
    ("DOLDA.predict_proba", "[''] equals an empty document in a batch",
     lambda f, t: np.testing.assert_allclose(f["plain"].predict_proba([""])[0],
                                             f["plain"].predict_proba(["", "apple"])[0],
                                             rtol=1e-13, atol=1e-15),
     "warn", "empty"),
    ("DOLDA.transform", "before fit", lambda f, t: dolda_().transform(TEXTS), "error",
     "not fitted"),
    ("DOLDA.transform", "a str", lambda f, t: f["plain"].transform("apple"), "error",
     "single str"),
    ("DOLDA.score", "y too short", lambda f, t: f["plain"].score(TEXTS, Y[:-1]), "error",
     "length|shape|inconsistent"),
    ("DOLDA.explain", "two documents", lambda f, t: f["plain"].explain(["a", "b"]), "error",
     "one document"),
    ("DOLDA.explain", "before fit", lambda f, t: dolda_().explain("apple"), "error",
     "not fitted"),
    ("DOLDA.explain", "X_row missing", lambda f, t: f["cov"].explain("apple"), "error",
     "pass X"),
    ("DOLDA.explain", "X_row wrong", lambda f, t: f["cov"].explain(
        "apple", X_row=pd.Series({"num": 1.0})), "error", "missing from X"),
    ("DOLDA.explain", "X_row 1e300", lambda f, t: f["cov"].explain(
        "apple", X_row=pd.Series({"num": 1e300, "cat": "u"})), "error", "values up to"),
    ("DOLDA.explain", "empty text", lambda f, t: f["plain"].explain(""), "warn", "empty"),
    ("DOLDA.explain", "ok", lambda f, t: f["cov"].explain(
        "apple pear", X_row=pd.Series({"num": 0.3, "cat": "u"})), "ok", None),
    ("DOLDA.signal_topics", "unknown class", lambda f, t: f["plain"].signal_topics("zz"),
     "error", "unknown class"),
    ("DOLDA.signal_topics", "before fit", lambda f, t: dolda_().signal_topics("a"), "error",
     "not fitted"),
    ("DOLDA.top_words", "before fit", lambda f, t: dolda_().top_words(), "error",
     "not fitted"),
    ("DOLDA.coef_interval", "before fit", lambda f, t: dolda_().coef_interval(), "error",
     "not fitted"),
    ("DOLDA.save", "before fit", lambda f, t: dolda_().save(t / "m"), "error", "not fitted"),
    ("DOLDA.save", "existing model", _save_twice, "error", "overwrite"),
    ("DOLDA.save", "onto a file", lambda f, t: f["plain"].save(_write_file(t),
                                                               overwrite=True), "error",
     "not a dolda model"),
    ("DOLDA.save", "onto a directory with data", lambda f, t: f["plain"].save(
        _keepdir(t), overwrite=True), "error", "not a dolda model"),
    ("DOLDA.save", "ok", lambda f, t: f["cov"].save(t / "m"), "ok", None),
    ("dolda.load", "missing", lambda f, t: dolda.load(t / "none"), "error", "does not exist"),
    ("dolda.load", "a file", lambda f, t: dolda.load(_write_file(t)), "error",
     "not a dolda model"),
    ("dolda.load", "an empty directory", lambda f, t: dolda.load(t), "error",
     "no model.json"),
    ("dolda.load", "round trip", lambda f, t: (f["cov"].save(t / "m"),
                                               finite_proba(dolda.load(t / "m").predict_proba(
                                                   TEXTS, X=XF))), "ok", None),
    ("LDA.fit", "a str", lambda f, t: lda_().fit("apple"), "error", "single str"),
    ("LDA.fit", "n_topics 1", lambda f, t: lda_(n_topics=1).fit(TEXTS), "error", "n_topics"),
    ("LDA.fit", "n_topics 10^8", lambda f, t: lda_(n_topics=10**8).fit(TEXTS), "error",
     "GiB"),
    ("LDA.fit", "alpha 0", lambda f, t: lda_(alpha=0).fit(TEXTS), "error", "alpha"),
    ("LDA.fit", "sampler unknown", lambda f, t: lda_(sampler="gpu").fit(TEXTS), "error",
     "sampler"),
    ("LDA.fit", "all empty", lambda f, t: lda_().fit(["", " "]), "error", "empty"),
    ("LDA.fit", "burn_in >= n_iter", lambda f, t: lda_(burn_in=5).fit(TEXTS), "error",
     "burn_in"),
    ("LDA.transform", "before fit", lambda f, t: lda_().transform(TEXTS), "error",
     "not fitted"),
    ("LDA.transform", "n_sweeps 0", lambda f, t: f["lda"].transform(TEXTS, n_sweeps=0),
     "error", "n_sweeps"),
    ("LDA.transform", "burn_in >= n_sweeps", lambda f, t: f["lda"].transform(
        TEXTS, n_sweeps=2, burn_in=2), "error", "burn_in"),
    ("LDA.transform", "a None document", lambda f, t: f["lda"].transform([None]), "error",
     "NoneType"),
    ("LDA.transform", "[''] ", lambda f, t: f["lda"].transform([""]), "warn", "empty"),
    ("LDA.save", "before fit", lambda f, t: lda_().save(t / "m"), "error", "not fitted"),
    ("LDA.top_words", "before fit", lambda f, t: lda_().top_words(), "error", "not fitted"),
    ("DOProbit.fit", "X NaN", lambda f, t: probit_().fit(np.r_[XN[:-1], [[np.nan, 0]]], Y),
     "error", "NaN"),
    ("DOProbit.fit", "X 1e300", lambda f, t: probit_().fit(XN * 1e300, Y), "error",
     "values up to"),
    ("DOProbit.fit", "X 3-D", lambda f, t: probit_().fit(np.zeros((N, 2, 2)), Y), "error",
     "dim"),
    ("DOProbit.fit", "X strings", lambda f, t: probit_().fit(np.array([["a", "b"]] * N), Y),
     "error", "float|string"),
    ("DOProbit.fit", "y too short", lambda f, t: probit_().fit(XN, Y[:-1]), "error",
     "lengths|inconsistent"),
    ("DOProbit.fit", "one row", lambda f, t: probit_().fit(XN[:1], Y[:1]), "error",
     "sample|single"),
    ("DOProbit.fit", "single class", lambda f, t: probit_().fit(XN, ["a"] * N), "error",
     "single class"),
    ("DOProbit.fit", "prior unknown", lambda f, t: probit_(prior="x").fit(XN, Y), "error",
     "prior"),
    ("DOProbit.fit", "eta_sampler unknown", lambda f, t: probit_(eta_sampler="x").fit(XN, Y),
     "error", "eta_sampler"),
    ("DOProbit.fit", "n_chains 0", lambda f, t: probit_(n_chains=0).fit(XN, Y), "error",
     "n_chains"),
    ("DOProbit.fit", "sparse 1e300", lambda f, t: probit_().fit(sp.csr_matrix(XN * 1e300), Y),
     "error", "values up to"),
    ("DOProbit.predict", "before fit", lambda f, t: probit_().predict(XN), "error",
     "not fitted"),
    ("DOProbit.predict", "wrong width", lambda f, t: f["probit"].predict(XN[:, :1]), "error",
     "features"),
    ("DOProbit.predict", "NaN", lambda f, t: f["probit"].predict(XN * np.nan), "error",
     "NaN"),
    ("DOProbit.predict_proba", "1e300", lambda f, t: f["probit"].predict_proba(XN * 1e300),
     "error", "values up to"),
    ("DOProbit.predict_proba", "ok", lambda f, t: finite_proba(f["probit"].predict_proba(XN)),
     "ok", None),
    ("DOProbit.decision_function", "wrong width", lambda f, t: f["probit"].decision_function(
        np.zeros((2, 5))), "error", "features"),
    ("DOProbit.coef_frame", "wrong names", lambda f, t: f["probit"].coef_frame(["a"]),
     "error", "names|length|feature"),
    ("DOProbit.save", "before fit", lambda f, t: probit_().save(t / "m"), "error",
     "not fitted"),
]

ROWS = [("DOLDA.fit", *row) for row in FIT] + METHODS


@pytest.mark.parametrize("where, name, call, expect, pattern", ROWS,
                         ids=[f"{w}: {n}" for w, n, *_ in ROWS])
def test_api_case(fitted, tmp_path, where, name, call, expect, pattern):
    check_call(where, lambda: call(fitted, tmp_path), expect, pattern)


# ------------------------------------------------- issue 34: explain validated like predict
def _explain_matches_predict(model, text, X_row, X):
    """explain's probabilities are predict_proba's for the same row."""
    def check(table):
        proba = model.predict_proba([text], covariates=X)[0]
        assert np.allclose([table.attrs["proba"][c] for c in model.classes_], proba)
    return check


XS = sp.csr_matrix(XN)
XF_MISSING = XF.assign(cat=XF["cat"].where(np.arange(N) != 2))
# (method, case, call, expect, pattern, the class the attack found, check)
ISSUE34 = [
    ("DOLDA.explain", "None", lambda f: f["plain"].explain(None), "error",
     "texts must be an iterable of documents, got NoneType", "raw message", None),
    ("DOLDA.explain", "an int", lambda f: f["plain"].explain(42), "error",
     "texts must be an iterable of documents, got int", "raw message", None),
    ("DOLDA.explain", "a list holding None", lambda f: f["plain"].explain([None]), "error",
     "document 0 is NoneType", "raw message", None),
    ("DOLDA.explain", "sparse X_row (1 x P)",
     lambda f: f["sparse"].explain(TEXTS[0], X_row=XS[0]), "ok", None, "raw message",
     lambda f: _explain_matches_predict(f["sparse"], TEXTS[0], XS[0], XS[:1])),
    ("DOLDA.explain", "sparse X_row, token level",
     lambda f: f["sparse"].explain(TEXTS[0], X_row=XS[0], level="token"), "ok", None,
     "raw message", None),
    ("DOLDA.explain", "sparse X_row of two rows",
     lambda f: f["sparse"].explain(TEXTS[0], X_row=XS[:2]), "error", "one row", "raw message",
     None),
    ("DOLDA.predict", "missing categorical value",
     lambda f: f["cov"].predict(TEXTS, X=XF_MISSING), "warn",
     r"column 'cat': 1 missing value.*\[2\]", "silent", None),
    ("DOLDA.fit", "missing categorical value",
     lambda f: dolda_().fit(TEXTS, Y, X=XF_MISSING), "warn", r"column 'cat': 1 missing value",
     "silent", None),
]


@pytest.mark.parametrize("where, name, call, expect, pattern, kind, check", ISSUE34,
                         ids=[f"{w}: {n}" for w, n, *_ in ISSUE34])
def test_issue34_case(fitted, where, name, call, expect, pattern, kind, check):
    from _bad_input import tally

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, error = call(fitted), None
        except (ValueError, TypeError) as exc:
            value, error = None, exc
        except Exception as exc:  # noqa: BLE001 - anything else is a traceback
            tally(where, "traceback")
            raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
    if expect == "error":
        if error is None:
            result = "silent"
        else:
            one_line = "\n" not in str(error).strip()
            result = "as expected" if one_line and re.search(pattern, str(error)) else kind
    elif error is not None:
        result = kind
    else:
        texts = " | ".join(str(w.message) for w in caught)
        result = "silent" if expect == "warn" and not re.search(pattern, texts) else \
            "as expected"
        if result == "as expected" and check is not None:
            check(fitted)(value)
    tally(where, result)
    assert result == "as expected", f"{result}: {error}"


# ------------------------------------------------------------ property-based
DOC = st.one_of(st.text(max_size=30), st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
                st.lists(st.sampled_from(WORDS + ["", "the"]), max_size=5), st.none(),
                st.integers())
LABEL = st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.booleans(),
                  st.sampled_from([0.5, 1.5, float("nan"), -0.0]), st.none())


def _fit_and_check(texts, y, X=None):
    def call():
        model = dolda_().fit(texts, y, X=X)
        proba = model.predict_proba(texts, X=X)
        finite_proba(proba)
        return model

    try:
        check_call("DOLDA.fit (generated)", call, "ok")
    except AssertionError as exc:
        message = str(exc)
        if "legal input refused" not in message:
            raise
        # a refusal is fine when it is one clear line (recounted as a clear error)
        where = OUTCOMES["DOLDA.fit (generated)"]
        where["traceback"] -= 1
        where["clear error"] += 1
        assert "\n" not in message.split("refused: ", 1)[1], message


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(DOC, min_size=2, max_size=12), data=st.data())
def test_generated_texts(texts, data):
    y = data.draw(st.lists(st.sampled_from(["a", "b"]), min_size=len(texts),
                           max_size=len(texts)))
    _fit_and_check(texts, y)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(y=st.lists(LABEL, min_size=N, max_size=N))
def test_generated_labels(y):
    _fit_and_check(TEXTS, y)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=data_frames([column("f", elements=st.floats(allow_nan=True, allow_infinity=True)),
                      column("i", elements=st.integers(-10**15, 10**15)),
                      column("s", elements=st.one_of(st.none(), st.text(max_size=3),
                                                     st.sampled_from(["1", "2", "x"]))),
                      column("b", elements=st.booleans())],
                     index=range_indexes(min_size=N, max_size=N)))
def test_generated_covariate_frames(X):
    _fit_and_check(TEXTS, Y, X=X)


def test_zz_api_counts():
    print("\n" + summary("dolda API"))
    bad = {w: c for w, c in OUTCOMES.items()
           if c["traceback"] or c["silent acceptance"] or c["hang"]}
    assert not bad, bad
