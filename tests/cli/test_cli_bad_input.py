"""Bad input to every ``dolda`` command: one clear line, never a traceback, hang or garbage.

Each row of the tables below is one case: the command's arguments (``{d}`` is
the directory of the shared data files, ``{m}`` the fitted model, ``{t}`` a
fresh directory of the case), what is expected (``"error"``, ``"ok"``,
``"warn"``) and a pattern the error line (or the output) must match.  The
outcomes are counted per command (see ``tests/_bad_input.py``); run with
``pytest -s`` to see the table.
"""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from _bad_input import check_cli, run_cli, summary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.bad_input

WORDS = ("apple pear fig kiwi plum lime grape melon berry cherry mango papaya quince "
         "lemon orange banana").split()
N = 40
FAST = ["-k", "3", "-n", "2", "--quiet", "--seed", "1"]


def _frame(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": [f"doc{i}" for i in range(n)],
        "text": [" ".join(rng.choice(WORDS, 8)) for _ in range(n)],
        "label": np.array(["red", "green", "blue"])[np.arange(n) % 3],
        "num": np.round(rng.normal(size=n), 3),
        "cat": rng.choice(["u", "v", "w"], n),
    })


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """The data files of every case."""
    root = tmp_path_factory.mktemp("data")
    f = _frame()
    f.to_csv(root / "ok.csv", index=False)
    f.to_csv(root / "ok.tsv", sep="\t", index=False)
    f.to_parquet(root / "ok.parquet", index=False)
    f.to_json(root / "ok.jsonl", orient="records", lines=True)
    with gzip.open(root / "ok.jsonl.gz", "wt", encoding="utf-8") as fh:
        f.to_json(fh, orient="records", lines=True)
    f.to_json(root / "ok.json", orient="records")
    (root / "ok.xlsx").write_bytes(b"PK\x03\x04 not really")
    (root / "empty.csv").write_text("")
    (root / "header.csv").write_text("text,label,num,cat\n")
    (root / "dup.csv").write_text("text,label,text\n" + "\n".join(
        f"{t},{l},other" for t, l in zip(f.text, f.label)) + "\n")
    (root / "latin1.csv").write_bytes(("text,label\n" + "\n".join(
        f"{t} caf\xe9,{l}" for t, l in zip(f.text, f.label))).encode("latin-1"))
    (root / "ragged.csv").write_text('text,label\n"a b,c\n' + "x,y,z,w\n" * 3)
    (root / "garbage.parquet").write_bytes(b"PAR1 this is not parquet")
    (root / "bad.jsonl").write_text('{"text": "apple pear", "label": "a"}\n{"text": \n')
    g = f.copy()
    g.loc[3, "label"] = None
    g.to_csv(root / "missing_label.csv", index=False)
    g = f.copy()
    g["label"] = "same"
    g.to_csv(root / "one_class.csv", index=False)
    g = f.copy()
    g["text"] = ""
    g.to_csv(root / "no_text.csv", index=False)
    g = f.copy()
    g["text"] = "the and of to a"
    g.to_csv(root / "stop_words.csv", index=False)
    g = f.copy()
    g["text"] = [str(i) for i in range(N)]
    g.to_csv(root / "number_texts.csv", index=False)
    g = f.copy()
    g["num"] = g["num"].astype(object)
    g.loc[5, "num"] = "abc"
    g.to_csv(root / "stray_cell.csv", index=False)
    g = f.copy()
    g["num"] = g["num"] * 1e300
    g.to_csv(root / "huge.csv", index=False)
    g = f.copy()
    g["num"] = g["num"] * 1e7
    g.to_csv(root / "large.csv", index=False)
    g = f.copy()
    g.loc[2, "num"] = np.inf
    g.to_csv(root / "inf.csv", index=False)
    g = f.copy()
    g.loc[2, "num"] = np.nan
    g.to_csv(root / "nan_num.csv", index=False)
    g = f.copy()
    g.loc[[0, 1], "text"] = ""
    g.to_csv(root / "some_empty.csv", index=False)
    g = f.copy()
    g.loc[0, "label"] = "lonely"
    g.to_csv(root / "lonely.csv", index=False)
    g = f.copy()
    g["label"] = np.arange(N) % 2 == 0
    g.to_csv(root / "bool_label.csv", index=False)
    g = f.copy()
    g["label"] = np.arange(N) % 3
    g.to_csv(root / "int_label.csv", index=False)
    g = f.copy()
    g["text"] = [t + " \u00e9t\u00e9 \u65e5\u672c \U0001F600" for t in g["text"]]
    g.to_csv(root / "unicode.csv", index=False)
    g = f.copy()
    g["cat"] = ["zz"] * N
    g.to_csv(root / "unseen_cat.csv", index=False)
    g = f.copy()
    g["text"] = "durian"
    g.to_csv(root / "unknown_words.csv", index=False)
    g = f.copy()
    g["tokens"] = [t.split() for t in g["text"]]
    g["listcov"] = [[1, 2]] * N
    g["structlab"] = [{"a": 1}] * N
    g["mixed"] = [["apple"], {"x": "y"}] * (N // 2)
    g.to_json(root / "mixed.jsonl", orient="records", lines=True)
    g = g.drop(columns="mixed")
    g.to_parquet(root / "nested.parquet", index=False)
    g[["tokens", "label", "num", "cat"]].to_json(root / "tokens.jsonl", orient="records",
                                                 lines=True)
    pd.DataFrame({"text": f.text, "label": [[l] for l in f.label]}).to_json(
        root / "list_label.jsonl", orient="records", lines=True)
    (root / "notadir").write_text("x")
    (root / "emptydir").mkdir()
    (root / "otherdir").mkdir()
    (root / "otherdir" / "keep.txt").write_text("precious")
    return root


@pytest.fixture(scope="module")
def m(d):
    """A fitted model (with both covariates), a copy without cli.json, corrupt copies."""
    out = run_cli(["fit", d / "ok.csv", "--text", "text", "--label", "label", "--covariates",
                   "num,cat", *FAST, "--out", d / "model"])
    assert out[0] == "ok", out[1]
    shutil.copytree(d / "model", d / "model_nometa")
    (d / "model_nometa" / "cli.json").unlink()
    shutil.copytree(d / "model", d / "model_badmeta")
    (d / "model_badmeta" / "cli.json").write_text('{"text_column": 5}')
    shutil.copytree(d / "model", d / "model_nanmeta")
    (d / "model_nanmeta" / "cli.json").write_text('{"text_column": NaN}')
    shutil.copytree(d / "model", d / "model_corrupt")
    header = json.loads((d / "model_corrupt" / "model.json").read_text())
    header["meta"]["params"]["alpha"] = -1
    (d / "model_corrupt" / "model.json").write_text(json.dumps(header))
    from dolda import DOProbit

    DOProbit(n_iter=5).fit(np.random.default_rng(0).normal(size=(20, 2)),
                           np.arange(20) % 2).save(d / "probit")
    assert run_cli(["fit", d / "ok.csv", "--text", "text", "--label", "label", *FAST,
                    "--checkpoint", d / "ck", "--out", d / "model_plain"])[0] == "ok"
    return d / "model"


def _args(template, d, m, t):
    return [str(a).format(d=d, m=m, t=t) for a in template]


FIT = ["fit", "{d}/ok.csv", "--text", "text", "--label", "label", *FAST, "--out", "{t}/out"]


def fit(*extra, data="{d}/ok.csv"):
    args = list(FIT)
    args[1] = data
    return args + list(extra)


FIT_CASES = [
    # (id, args, expect, pattern)
    ("missing file", fit(data="{d}/nope.csv"), "error", "does not exist"),
    ("directory as data", fit(data="{d}/emptydir"), "error", "is a directory"),
    ("unknown extension", fit(data="{d}/ok.xlsx"), "error", "unknown table format"),
    ("empty file", fit(data="{d}/empty.csv"), "error", "is empty"),
    ("header only", fit(data="{d}/header.csv"), "error", "no rows"),
    ("text column missing", ["fit", "{d}/ok.csv", "--text", "body", "--label", "label",
                             *FAST, "--out", "{t}/o"], "error", "'body'.*--text"),
    ("label column missing", ["fit", "{d}/ok.csv", "--text", "text", "--label", "genre",
                              *FAST, "--out", "{t}/o"], "error", "'genre'.*--label"),
    ("covariate missing", fit("--covariates", "year"), "error", "'year'.*--covariates"),
    ("text is label", ["fit", "{d}/ok.csv", "--text", "label", "--label", "label", *FAST,
                       "--out", "{t}/o"], "error", "also the --text column"),
    ("label as covariate (target leak)", fit("--covariates", "num,label"), "error",
     "target leak"),
    ("text as covariate", fit("--covariates", "text"), "error", "text column"),
    ("duplicated header", fit(data="{d}/dup.csv"), "error", "more than once"),
    ("not UTF-8", fit(data="{d}/latin1.csv"), "error", "not valid utf-8.*--encoding"),
    ("unknown encoding", fit("--encoding", "klingon"), "error", "unknown encoding"),
    ("latin-1 with --encoding", fit("--encoding", "latin-1", data="{d}/latin1.csv"), "ok",
     None),
    ("ragged rows", fit(data="{d}/ragged.csv"), "error", "cannot parse"),
    ("garbage parquet", fit(data="{d}/garbage.parquet"), "error", "cannot read it as Parquet"),
    ("malformed jsonl", fit(data="{d}/bad.jsonl"), "error", "cannot read it as JSON"),
    ("missing label", fit(data="{d}/missing_label.csv"), "error", "empty at row"),
    ("single class", fit(data="{d}/one_class.csv"), "error", "single class"),
    ("identifier as label", ["fit", "{d}/ok.csv", "--text", "text", "--label", "id", *FAST,
                             "--out", "{t}/o"], "error", "identifier"),
    ("all texts empty", fit(data="{d}/no_text.csv"), "error", "empty"),
    ("only stop words", fit(data="{d}/stop_words.csv"), "error", "empty"),
    ("numbers as texts", fit(data="{d}/number_texts.csv"), "error", "empty"),
    ("one non-numeric cell", fit("--covariates", "num", data="{d}/stray_cell.csv"), "error",
     "numeric except for 1 cell"),
    ("covariate 1e300 (the hang)", fit("--covariates", "num", data="{d}/huge.csv"), "error",
     "'num' has values up to"),
    ("covariate inf", fit("--covariates", "num", data="{d}/inf.csv"), "error", "infinite"),
    ("covariate missing value", fit("--covariates", "num", data="{d}/nan_num.csv"), "error",
     "missing"),
    ("topics 1", fit("-k", "1"), "error", "--topics"),
    ("topics 0", fit("-k", "0"), "error", "--topics"),
    ("topics negative", fit("-k", "-5"), "error", "--topics"),
    ("topics text", fit("-k", "many"), "error", "--topics"),
    ("topics 100000000", fit("-k", "100000000"), "error", "GiB of memory.*n_topics"),
    ("iterations 0", fit("-n", "0"), "error", "--iterations"),
    ("burn-in >= iterations", fit("--burn-in", "5"), "error", "--burn-in"),
    ("alpha 0", fit("--alpha", "0"), "error", "--alpha"),
    ("alpha negative", fit("--alpha", "-1"), "error", "--alpha"),
    ("alpha nan", fit("--alpha", "nan"), "error", "alpha"),
    ("beta inf", fit("--beta", "inf"), "error", "beta"),
    ("rare-share 1", fit("--rare-share", "1"), "error", "--rare-share"),
    ("rare-share negative", fit("--rare-share", "-0.1"), "error", "--rare-share"),
    ("min-df 0", fit("--min-df", "0"), "error", "--min-df"),
    ("min-df above the documents", fit("--min-df", "1000"), "error", "empty|no word"),
    ("min-count 0", fit("--min-count", "0"), "error", "--min-count"),
    ("threads 0", fit("--threads", "0"), "error", "--threads"),
    ("prior unknown", fit("--prior", "laplace"), "error", "--prior"),
    ("seed text", fit("--seed", "abc"), "error", "--seed"),
    ("out is another directory", ["fit", "{d}/ok.csv", "--text", "text", "--label", "label",
                                  *FAST, "--out", "{d}/otherdir"], "error",
     "not a dolda model directory"),
    ("out is a file", ["fit", "{d}/ok.csv", "--text", "text", "--label", "label", *FAST,
                       "--out", "{d}/notadir"], "error", "not a dolda model"),
    ("out parent missing", fit()[:-1] + ["{t}/no/such/out"], "error", "does not exist"),
    ("out holds a model", ["fit", "{d}/ok.csv", "--text", "text", "--label", "label", *FAST,
                           "--out", "{d}/model"], "error", "--overwrite"),
    ("checkpoint-every 0", fit("--checkpoint-every", "0"), "error", "--checkpoint-every"),
    ("resume missing", fit("--resume", "{t}/nock"), "error", "--resume"),
    ("resume an empty dir", fit("--resume", "{d}/emptydir"), "error", "no model.json"),
    ("resume a model", fit("--resume", "{d}/model"), "error", "not a checkpoint"),
    ("resume with other classes", fit("--resume", "{d}/ck", data="{d}/lonely.csv"), "error",
     "other data|labels differ|vocabulary differs|tokens differ"),
    ("resume with more iterations", fit("--resume", "{d}/ck", "-n", "7"), "ok", None),  # extends
    ("scheduler unreachable", fit("--scheduler", "tcp://127.0.0.1:9", "--connect-timeout",
                                  "0.5"), "error", "cannot reach the Dask scheduler"),
    ("scheduler nonsense", fit("--scheduler", "nonsense://x", "--connect-timeout", "0.5"),
     "error", "scheduler"),
    ("connect-timeout 0", fit("--connect-timeout", "0"), "error", "--connect-timeout"),
    ("shards 0", fit("--shards", "0"), "error", "--shards"),
    ("chains 0", fit("--chains", "0"), "error", "--chains"),
    ("parquet list covariate", fit("--covariates", "listcov", data="{d}/nested.parquet"),
     "error", "lists or records"),
    ("parquet struct label", ["fit", "{d}/nested.parquet", "--text", "text", "--label",
                              "structlab", *FAST, "--out", "{t}/o"], "error",
     "lists or records"),
    ("jsonl mixed text column", ["fit", "{d}/mixed.jsonl", "--text", "mixed", "--label",
                                   "label", *FAST, "--out", "{t}/o"], "error",
     "neither text nor lists"),
    ("jsonl list label", fit(data="{d}/list_label.jsonl"), "error", "lists or records"),
    ("parquet token-list texts", ["fit", "{d}/nested.parquet", "--text", "tokens", "--label",
                                  "label", *FAST, "--out", "{t}/o"], "ok", None),
    ("jsonl token-list texts", ["fit", "{d}/tokens.jsonl", "--text", "tokens", "--label",
                                "label", *FAST, "--out", "{t}/o"], "ok", None),
    ("tsv", fit(data="{d}/ok.tsv"), "ok", None),
    ("parquet", fit(data="{d}/ok.parquet"), "ok", None),
    ("jsonl", fit(data="{d}/ok.jsonl"), "ok", None),
    ("jsonl.gz", fit(data="{d}/ok.jsonl.gz"), "ok", None),
    ("json records", fit(data="{d}/ok.json"), "ok", None),
    ("K=50 on 320 tokens", fit("-k", "50"), "warn", "fewer than 10 tokens per topic"),
    ("class of one document", fit(data="{d}/lonely.csv"), "warn", "single document"),
    ("covariate 1e7", fit("--covariates", "num", data="{d}/large.csv"), "warn",
     "consider rescaling"),
    ("some texts empty", fit(data="{d}/some_empty.csv"), "warn", "2 of 40 documents"),
    ("boolean labels", fit(data="{d}/bool_label.csv"), "ok", None),
    ("integer labels", fit(data="{d}/int_label.csv"), "ok", None),
    ("unicode texts", fit(data="{d}/unicode.csv"), "ok", None),
    ("repeated covariate", fit("--covariates", "num,num,cat"), "ok", None),
    ("two-step", fit("--two-step"), "ok", None),
    ("normal prior", fit("--prior", "normal"), "ok", None),
]


PREDICT = ["predict", "{m}", "{d}/ok.csv", "--out", "{t}/p.csv"]


def pred(*extra, model="{m}", data="{d}/ok.csv"):
    return ["predict", model, data, "--out", "{t}/p.csv", *extra]


PREDICT_CASES = [
    ("model missing", pred(model="{t}/nomodel"), "error", "does not exist"),
    ("model an empty dir", pred(model="{d}/emptydir"), "error", "no model.json"),
    ("model a file", pred(model="{d}/notadir"), "error", "is a file|directory"),
    ("model corrupt", pred(model="{d}/model_corrupt"), "error", "alpha"),
    ("model is a DOProbit", pred(model="{d}/probit"), "error", "not a DOLDA"),
    ("checkpoint as model", pred(model="{d}/ck"), "error", "checkpoint"),
    ("cli.json missing", pred(model="{d}/model_nometa"), "error", "--text"),
    ("cli.json field of a wrong type", pred(model="{d}/model_badmeta"), "error",
     "text_column"),
    ("cli.json NaN", pred(model="{d}/model_nanmeta"), "error", "NaN"),
    ("data missing", pred(data="{d}/nope.csv"), "error", "does not exist"),
    ("data unknown extension", pred(data="{d}/ok.xlsx"), "error", "unknown table format"),
    ("data empty", pred(data="{d}/empty.csv"), "error", "is empty"),
    ("data header only", pred(data="{d}/header.csv"), "error", "covariate|no rows"),
    ("text column missing", pred("--text", "body"), "error", "'body'"),
    ("covariate column missing", pred("--covariates", "num,year"), "error", "'year'"),
    ("covariates count", pred("--covariates", "num"), "error", "2 covariate"),
    ("covariate non-numeric cell", pred(data="{d}/stray_cell.csv"), "error", "num"),
    ("covariate 1e300", pred(data="{d}/huge.csv"), "error", "'num' has values up to"),
    ("covariate missing value", pred(data="{d}/nan_num.csv"), "error", "missing"),
    ("duplicated header", pred(data="{d}/dup.csv"), "error", "more than once"),
    ("out directory missing", ["predict", "{m}", "{d}/ok.csv", "--out", "{t}/no/p.csv"],
     "error", "does not exist"),
    ("out is a directory", ["predict", "{m}", "{d}/ok.csv", "--out", "{d}/emptydir"],
     "error", "is a directory|extension"),
    ("id column missing", pred("--id", "key"), "error", "'key'"),
    ("all texts empty", pred(data="{d}/no_text.csv"), "error", "empty"),
    ("list covariate", pred("--covariates", "listcov,cat", data="{d}/nested.parquet"),
     "error", "'num' has missing, non-numeric"),
    ("not UTF-8", pred(data="{d}/latin1.csv"), "error", "not valid utf-8"),
    ("unseen category", pred(data="{d}/unseen_cat.csv"), "warn", "not seen in fit"),
    ("unknown words only", pred(data="{d}/unknown_words.csv"), "warn", "empty"),
    ("some texts empty", pred(data="{d}/some_empty.csv"), "warn", "2 of 40"),
    ("token lists", pred("--text", "tokens", data="{d}/nested.parquet"), "ok", None),
    ("jsonl.gz", pred(data="{d}/ok.jsonl.gz"), "ok", None),
    ("parquet out", ["predict", "{m}", "{d}/ok.csv", "--out", "{t}/p.parquet"], "ok", None),
    ("id column", pred("--id", "id"), "ok", None),
    ("covariates renamed", pred("--covariates", "num,cat"), "ok", None),
]


EVAL = ["evaluate", "{d}/ok.csv", "--text", "text", "--label", "label", "--folds", "2",
        *FAST]


def ev(*extra, data="{d}/ok.csv"):
    args = list(EVAL)
    args[1] = data
    return args + list(extra)


EVALUATE_CASES = [
    ("missing file", ev(data="{d}/nope.csv"), "error", "does not exist"),
    ("folds 1", ev("--folds", "1"), "error", "--folds"),
    ("folds above the smallest class", ev("--folds", "20"), "error", "fewer than --folds"),
    ("text is label", ["evaluate", "{d}/ok.csv", "--text", "text", "--label", "text"],
     "error", "also the --text"),
    ("label as covariate", ev("--covariates", "label"), "error", "target leak"),
    ("single class", ev(data="{d}/one_class.csv"), "error", "single class"),
    ("identifier labels", ["evaluate", "{d}/ok.csv", "--text", "text", "--label", "id"],
     "error", "identifier"),
    ("missing label", ev(data="{d}/missing_label.csv"), "error", "empty at row"),
    ("covariate 1e300", ev("--covariates", "num", data="{d}/huge.csv"), "error",
     "values up to"),
    ("covariate stray cell", ev("--covariates", "num", data="{d}/stray_cell.csv"), "error",
     "numeric except"),
    ("topics 0", ev("-k", "0"), "error", "--topics"),
    ("topics 100000000", ev("-k", "100000000"), "error", "GiB"),
    ("burn-in too large", ev("--burn-in", "9"), "error", "--burn-in"),
    ("out directory missing", ev("--out", "{t}/no/cv.json"), "error", "does not exist"),
    ("out a directory", ev("--out", "{d}/emptydir"), "error", "is a directory|extension"),
    ("duplicated header", ev(data="{d}/dup.csv"), "error", "more than once"),
    ("garbage parquet", ev(data="{d}/garbage.parquet"), "error", "Parquet"),
    ("unknown extension", ev(data="{d}/ok.xlsx"), "error", "unknown table format"),
    ("all texts empty", ev(data="{d}/no_text.csv"), "error", "empty"),
    ("alpha negative", ev("--alpha", "-2"), "error", "--alpha"),
    ("ok", ev("--out", "{t}/cv.json"), "ok", None),
    ("jsonl", ev(data="{d}/ok.jsonl"), "ok", None),
]


TOPICS_CASES = [
    ("model missing", ["topics", "{t}/nomodel"], "error", "does not exist"),
    ("model an empty dir", ["topics", "{d}/emptydir"], "error", "no model.json"),
    ("model corrupt", ["topics", "{d}/model_corrupt"], "error", "alpha"),
    ("a DOProbit", ["topics", "{d}/probit"], "error", "not a DOLDA|not a topic model"),
    ("a checkpoint", ["topics", "{d}/ck"], "error", "checkpoint"),
    ("words 0", ["topics", "{m}", "--words", "0"], "error", "--words"),
    ("level 0", ["topics", "{m}", "--level", "0"], "error", "--level"),
    ("level 1", ["topics", "{m}", "--level", "1"], "error", "--level"),
    ("level text", ["topics", "{m}", "--level", "high"], "error", "--level"),
    ("ok", ["topics", "{m}"], "ok", None),
    ("more words than the vocabulary", ["topics", "{m}", "--words", "1000"], "ok", None),
]


def ex(text, *extra, model="{m}"):
    return ["explain", model, text, *extra]


COV = ["-c", "num=0.5", "-c", "cat=u"]
EXPLAIN_CASES = [
    ("empty text", ex("", *COV), "error", "empty"),
    ("blank text", ex("   ", *COV), "error", "empty"),
    ("model missing", ex("apple", *COV, model="{t}/nomodel"), "error", "does not exist"),
    ("model corrupt", ex("apple", *COV, model="{d}/model_corrupt"), "error", "alpha"),
    ("a DOProbit", ex("apple", model="{d}/probit"), "error", "not a DOLDA"),
    ("covariate missing", ex("apple", "-c", "num=1"), "error", "needs covariate 'cat'"),
    ("unknown covariate", ex("apple", *COV, "-c", "year=1"), "error", "no covariate 'year'"),
    ("covariate without =", ex("apple", "-c", "num"), "error", "name=value"),
    ("covariate empty name", ex("apple", "-c", "=1"), "error", "name=value"),
    ("numeric covariate text", ex("apple", "-c", "num=high", "-c", "cat=u"), "error",
     "numeric"),
    ("numeric covariate 1e300", ex("apple", "-c", "num=1e300", "-c", "cat=u"), "error",
     "values up to"),
    ("numeric covariate nan", ex("apple", "-c", "num=nan", "-c", "cat=u"), "error",
     "missing|infinite"),
    ("numeric covariate inf", ex("apple", "-c", "num=inf", "-c", "cat=u"), "error",
     "infinite"),
    ("top 0", ex("apple", *COV, "--top", "0"), "error", "--top"),
    ("stdin empty", ex("-", *COV), "error", "empty"),
    ("unseen category", ex("apple pear", "-c", "num=0", "-c", "cat=zz"), "warn",
     "not seen in fit"),
    ("unknown words only", ex("durian rambutan", *COV), "warn", "empty"),
    ("ok", ex("apple pear kiwi", *COV), "ok", None),
    ("stdin", ex("-", *COV), "ok", None),
    ("unicode", ex("\u65e5\u672c apple \U0001F600", *COV), "ok", None),
]


def rep(*extra, model="{m}"):
    return ["report", model, "--out", "{t}/r.html", *extra]


REPORT_CASES = [
    ("model missing", rep(model="{t}/nomodel"), "error", "does not exist"),
    ("model corrupt", rep(model="{d}/model_corrupt"), "error", "alpha"),
    ("a DOProbit", rep(model="{d}/probit"), "error", "not a DOLDA"),
    ("out directory missing", ["report", "{m}", "--out", "{t}/no/r.html"], "error",
     "does not exist"),
    ("out a directory", ["report", "{m}", "--out", "{d}/emptydir"], "error", "is a directory"),
    ("label without data", rep("--label", "label"), "error", "--label (and --id )?needs? --data"),
    ("data missing", rep("--data", "{d}/nope.csv"), "error", "does not exist"),
    ("data without the text column", rep("--data", "{d}/ok.csv", "--text", "body"), "error",
     "'body'"),
    ("data without a covariate", rep("--data", "{d}/list_label.jsonl"), "error", "num|cat"),
    ("label column missing", rep("--data", "{d}/ok.csv", "--label", "genre"), "error",
     "'genre'"),
    ("single-class labels", rep("--data", "{d}/one_class.csv", "--label", "label"), "error",
     "single class"),
    ("duplicated header", rep("--data", "{d}/dup.csv"), "error", "more than once"),
    ("max-docs 0", rep("--max-docs", "0"), "error", "--max-docs"),
    ("cli.json missing, no --text", rep("--data", "{d}/ok.csv", model="{d}/model_nometa"),
     "error", "--text"),
]


DEMO_CASES = [
    ("docs 10", ["demo", "--docs", "10"], "error", "--docs"),
    ("topics 1", ["demo", "--topics", "1"], "error", "--topics"),
    ("iterations 1", ["demo", "--iterations", "1"], "error", "--iterations"),
    ("threads 0", ["demo", "--threads", "0"], "error", "--threads"),
    ("seed text", ["demo", "--seed", "abc"], "error", "--seed"),
    ("docs text", ["demo", "--docs", "many"], "error", "--docs"),
    ("unknown option", ["demo", "--fast"], "error", "--fast"),
]


OTHER_CASES = [
    ("unknown command", ["fitt", "{d}/ok.csv"], "error", "fitt"),
    ("fit without --out", ["fit", "{d}/ok.csv", "--text", "text", "--label", "label"],
     "error", "--out"),
    ("fit without --label", ["fit", "{d}/ok.csv", "--text", "text", "--out", "{t}/o"],
     "error", "--label"),
    ("predict without data", ["predict", "{m}"], "error", "DATA"),
    ("explain without text", ["explain", "{m}"], "error", "TEXT"),
]


TABLES = {"fit": FIT_CASES, "predict": PREDICT_CASES, "evaluate": EVALUATE_CASES,
          "topics": TOPICS_CASES, "explain": EXPLAIN_CASES, "report": REPORT_CASES,
          "demo": DEMO_CASES, "(usage)": OTHER_CASES}
ALL = [(command, *case) for command, table in TABLES.items() for case in table]


@pytest.mark.parametrize("command, name, template, expect, pattern", ALL,
                         ids=[f"{c}: {n}" for c, n, *_ in ALL])
def test_cli_case(d, m, tmp_path, command, name, template, expect, pattern):
    args = _args(template, d, m, tmp_path)
    stdin = "apple pear fig" if name == "stdin" else ("" if name == "stdin empty" else None)
    before = sorted(p.name for p in tmp_path.iterdir())
    check_cli(command, args, expect, pattern, input=stdin)
    if expect == "error":  # no output left behind
        assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_cli_fit_ok_leaves_a_loadable_model_and_no_leftovers(d, tmp_path):
    import dolda

    check_cli("fit", _args(fit("--covariates", "num,cat"), d, d / "model", tmp_path), "ok")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    model = dolda.load(tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["arrays.npz", "cli.json",
                                                                    "model.json"]
    assert model.n_topics == 3


# ------------------------------------------------------------ property-based
CELL = st.one_of(st.text(max_size=30), st.sampled_from(WORDS), st.none(),
                 st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(st.text(max_size=40),
                                st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join)),
                      min_size=2, max_size=14),
       labels=st.lists(st.one_of(st.sampled_from(["a", "b", "c", "", " "]), st.none(),
                                 st.integers(0, 3)), min_size=2, max_size=14),
       cov=st.lists(CELL, min_size=2, max_size=14))
def test_cli_fit_on_generated_tables(tmp_path_factory, texts, labels, cov):
    """Any CSV built from generated cells: exit 0 with a loadable model, or one clear line."""
    n = min(len(texts), len(labels), len(cov))
    root = tmp_path_factory.mktemp("gen")
    pd.DataFrame({"text": texts[:n], "label": labels[:n], "x": cov[:n]}).to_csv(
        root / "g.csv", index=False)
    outcome, output, _ = run_cli(["fit", root / "g.csv", "--text", "text", "--label", "label",
                                  "--covariates", "x", "-k", "2", "-n", "2", "--quiet",
                                  "--out", root / "m"])
    from _bad_input import record

    record("fit (generated tables)", outcome)
    assert outcome in ("ok", "clear error"), output[-3000:]
    if outcome == "ok":
        import dolda

        assert dolda.load(root / "m").n_topics == 2
    else:
        assert not (root / "m").exists()
    shutil.rmtree(root, ignore_errors=True)


def test_zz_cli_counts():
    from _bad_input import OUTCOMES

    print("\n" + summary("dolda CLI"))
    bad = {w: c for w, c in OUTCOMES.items()
           if c["traceback"] or c["silent acceptance"] or c["hang"]}
    assert not bad, bad
