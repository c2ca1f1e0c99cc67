"""``dolda fit --scheduler``: the command line on a real Dask cluster.

A ``LocalCluster`` of two single-threaded worker processes is started for the
module; the CLI connects to its scheduler address like it would to a remote one.
"""

import socket
import time

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dolda.cli import main
from dolda.datasets import simulate
from dolda.io import ARRAYS_FILE, read_header

distributed = pytest.importorskip("distributed")

FIT = ["--text", "body", "--label", "genre", "--covariates", "x_num,x_cat", "--topics", "4",
       "--iterations", "12", "--quiet", "--seed", "7", "--shards", "3"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40)
    try:
        yield cl
    finally:
        cl.close()


@pytest.fixture(scope="module")
def data_csv(tmp_path_factory):
    sim = simulate(n_docs=150, n_topics=4, n_classes=3, vocab_size=120, doc_length=30,
                   n_signal=1, covariates=True, random_state=1)
    path = tmp_path_factory.mktemp("data") / "docs.csv"
    pd.DataFrame({"body": sim.texts, "genre": sim.y, "x_num": sim.X["x_num"],
                  "x_cat": sim.X["x_cat"].astype(str)}).to_csv(path, index=False)
    return path


def _arrays(model_dir):
    with np.load(model_dir / ARRAYS_FILE, allow_pickle=False) as npz:
        return {name: npz[name] for name in npz.files}


def test_fit_on_the_cluster_saves_the_model_of_the_local_fit(cluster, data_csv, tmp_path):
    local = run("fit", data_csv, *FIT, "--out", tmp_path / "local")
    assert local.exit_code == 0, local.output
    remote = run("fit", data_csv, *FIT, "--scheduler", cluster.scheduler_address,
                 "--phi-transport", "dense", "--out", tmp_path / "dask")
    assert remote.exit_code == 0, remote.output
    assert f"Fitting on the Dask cluster at {cluster.scheduler_address} (2 workers" in \
        remote.output
    assert "backend           dask" in remote.output
    one, two = _arrays(tmp_path / "local"), _arrays(tmp_path / "dask")
    assert sorted(one) == sorted(two)
    assert {"eta_draws", "phi", "doc_topic_counts"} <= set(one)
    for name in one:
        np.testing.assert_array_equal(one[name], two[name], err_msg=name)
    params = read_header(tmp_path / "dask")["meta"]["params"]
    assert params["backend"] == "dask" and params["n_shards"] == 3
    assert params["phi_transport"] == "dense"  # Phi itself sent: the same chain
    assert "__dropped__" not in params  # the client is not a parameter of the saved model
    # the saved model works without any cluster
    predicted = run("predict", tmp_path / "dask", data_csv, "--out", tmp_path / "pred.csv")
    assert predicted.exit_code == 0, predicted.output


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once the socket is closed


def test_unreachable_scheduler_is_one_clear_line(data_csv, tmp_path):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    tic = time.monotonic()
    result = run("fit", data_csv, *FIT, "--scheduler", address, "--connect-timeout", "1",
                 "--out", tmp_path / "model")
    took = time.monotonic() - tic
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"Error: cannot reach the Dask scheduler at {address} within 1 s")
    assert took < 30  # a generous bound: the point is that it does not hang
    assert not (tmp_path / "model").exists()


def test_bad_scheduler_address_is_one_clear_line(data_csv, tmp_path):
    result = run("fit", data_csv, *FIT, "--scheduler", "nonsense://x", "--out",
                 tmp_path / "model")
    assert result.exit_code == 1
    assert "cannot reach the Dask scheduler at nonsense://x" in result.output
    assert "unknown address scheme 'nonsense'" in result.output


def test_missing_distributed_is_one_clear_line(data_csv, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    result = run("fit", data_csv, *FIT, "--scheduler", "tcp://127.0.0.1:8786", "--out",
                 tmp_path / "model")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: --scheduler needs dask.distributed, which is not installed: "
        "pip install 'dask[distributed]' (or dolda[dask])")


def test_resume_command_keeps_the_scheduler_and_the_shards():
    from dolda.cli import DEFAULT_CONNECT_TIMEOUT, _resume_command

    opts = dict(n_topics=4, prior="horseshoe", n_iter=10, burn_in=None, alpha=0.1, beta=0.01,
                rare_share=0.0, min_df=1, covariate_min_count=1, seed=1, two_step=False,
                threads=None, quiet=True)
    command = _resume_command("d.csv", "body", "genre", [], "utf-8", opts, 5, "ckpt", "out",
                              False, {"scheduler": "tcp://h:8786", "n_shards": 3,
                                      "connect_timeout": DEFAULT_CONNECT_TIMEOUT})
    assert "--scheduler tcp://h:8786 --shards 3 " in command
    assert "--connect-timeout" not in command and "--phi-transport" not in command
    command = _resume_command("d.csv", "body", "genre", [], "utf-8", opts, 5, "ckpt", "out",
                              False, {"scheduler": "tcp://h:8786", "n_shards": 3,
                                      "connect_timeout": DEFAULT_CONNECT_TIMEOUT,
                                      "phi_transport": "dense"})
    assert "--phi-transport dense" in command
