"""A resumed chain is the interrupted chain: the checkpoint's fingerprint of options and
data is checked before any iteration, its header is covered by a checksum, and a
several-chain checkpoint survives ``kill -9`` and resumes with the command ``dolda fit``
prints."""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dolda
from _flat import flat_dolda
from dolda import DOLDA
from dolda.datasets import simulate


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=60, n_topics=3, n_classes=3, vocab_size=50, doc_length=20,
                    random_state=6)


def _model(**options):
    # options by their flat names, as checkpoints and the CLI name them
    return flat_dolda(**{"n_topics": 3, "n_iter": 12, "random_state": 4, "progress": False,
                         "rare_share": 0.0, **options})


@pytest.fixture(scope="module")
def ckpt(sim, tmp_path_factory):
    path = tmp_path_factory.mktemp("ck") / "ck"
    _model(checkpoint=str(path), checkpoint_every=5, n_iter=10).fit(sim.texts, sim.y)
    return path


@pytest.mark.parametrize("option, value", [("alpha", 0.2), ("beta", 0.05),
                                           ("word_selection", "chi2"), ("n_words", 5),
                                           ("prior_variance", 10.0), ("thin", 2)])
def test_a_checkpoint_of_other_options_is_refused_naming_the_option(sim, ckpt, option, value):
    with pytest.raises(ValueError, match=rf"^the option {option} differs") as info:
        _model(n_iter=10, **{option: value}).fit(sim.texts, sim.y, resume=str(ckpt))
    assert "\n" not in str(info.value)


def test_other_labels_tokens_or_vocabulary_are_refused(sim, ckpt):
    with pytest.raises(ValueError, match="^the labels differ"):
        _model(n_iter=10).fit(sim.texts, np.roll(sim.y, 1), resume=str(ckpt))
    swapped = list(sim.texts)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(ValueError, match="tokens differ|labels differ"):
        _model(n_iter=10).fit(swapped, sim.y, resume=str(ckpt))
    grown = list(sim.texts[:-1]) + [sim.texts[-1] + " zzqx"]
    n_words = len(_model(n_iter=2).fit(sim.texts, sim.y).vocabulary_.words)
    with pytest.raises(ValueError, match=re.escape(
            f"the vocabulary differs ({n_words + 1:,} words, the checkpoint has {n_words:,})")):
        _model(n_iter=10).fit(grown, sim.y, resume=str(ckpt))


def test_the_same_fit_resumes_and_free_options_may_change(sim, ckpt):
    model = _model(n_iter=10, predict_sweeps=7).fit(sim.texts, sim.y, resume=str(ckpt))
    assert model.n_iter_ == 10


def _edit_header(path, **meta):
    header = json.loads((path / "model.json").read_text())
    header["meta"].update(meta)
    (path / "model.json").write_text(json.dumps(header))


def test_an_edited_header_is_refused(sim, ckpt, tmp_path):
    import shutil

    edited = tmp_path / "ck"
    shutil.copytree(ckpt, edited)
    _edit_header(edited, next_iteration=7)
    with pytest.raises(dolda.io.ModelFormatError, match="checksum mismatch of the checkpoint"):
        _model(n_iter=10).fit(sim.texts, sim.y, resume=str(edited))
    header = json.loads((edited / "model.json").read_text())
    del header["header_sha256"]
    (edited / "model.json").write_text(json.dumps(header))
    with pytest.raises(dolda.io.ModelFormatError, match="lacks its header checksum"):
        dolda.io.load_checkpoint(edited)


def test_a_checkpoint_without_fingerprint_is_refused(sim, ckpt, tmp_path):
    meta, arrays = dolda.io.load_checkpoint(ckpt)
    del meta["fingerprint"]
    dolda.io.save_checkpoint(tmp_path / "old", meta, arrays)
    with pytest.raises(ValueError, match="has no fingerprint"):
        _model(n_iter=10).fit(sim.texts, sim.y, resume=str(tmp_path / "old"))


def test_several_chains_resume_as_one_checkpoint(sim, tmp_path):
    ck = tmp_path / "ck"
    _model(n_chains=2, checkpoint=str(ck), checkpoint_every=4).fit(sim.texts, sim.y)
    meta, arrays = dolda.io.load_checkpoint(ck)
    assert meta["chains"] == 2 and meta["chain_iterations"] == [12, 12] and not arrays
    resumed = _model(n_chains=2).fit(sim.texts, sim.y, resume=str(ck))
    straight = _model(n_chains=2).fit(sim.texts, sim.y)
    np.testing.assert_array_equal(resumed.eta_draws_, straight.eta_draws_)
    with pytest.raises(ValueError, match="n_chains differs"):
        _model(n_chains=3).fit(sim.texts, sim.y, resume=str(ck))
    with pytest.raises(ValueError, match="holds 2 chains"):
        _model().fit(sim.texts, sim.y, resume=str(ck))


def _write_corpus(sim, path):
    pd.DataFrame({"text": sim.texts, "label": sim.y}).to_csv(path, index=False)


def _env():
    env = dict(os.environ)
    src = str(Path(dolda.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cli(args):
    return [sys.executable, "-m", "dolda.cli", *args]


FIT = ["--text", "text", "--label", "label", "--topics", "3", "--iterations", "150",
       "--seed", "4", "--rare-share", "0", "--chains", "2", "--checkpoint-every", "1",
       "--quiet"]


def _wait_for(path, timeout=240):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_kill_9_of_a_several_chain_fit_leaves_a_resumable_checkpoint(sim, tmp_path, delay):
    data = tmp_path / "docs.csv"
    _write_corpus(sim, data)
    ck = tmp_path / "ck"
    proc = subprocess.Popen(_cli(["fit", data, *FIT, "--checkpoint", ck, "--out",
                                  tmp_path / "m1"]), env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(ck / "chain0" / "model.json")
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    done = subprocess.run(_cli(["fit", data, *FIT, "--checkpoint", ck, "--resume", ck,
                                "--out", tmp_path / "m2"]), env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    straight = subprocess.run(_cli(["fit", data, *FIT, "--out", tmp_path / "m3"]),
                              env=_env(), capture_output=True, text=True, timeout=600)
    assert straight.returncode == 0, straight.stderr[-2000:]
    np.testing.assert_array_equal(dolda.load(tmp_path / "m2").eta_draws_,
                                  dolda.load(tmp_path / "m3").eta_draws_)


def test_the_printed_resume_command_of_a_several_chain_fit_runs(sim, tmp_path):
    data = tmp_path / "docs.csv"
    _write_corpus(sim, data)
    ck = tmp_path / "ck"
    proc = subprocess.Popen(_cli(["fit", data, *FIT, "--checkpoint", ck, "--out",
                                  tmp_path / "m"]), env=_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(ck / "chain0" / "model.json")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    printed = re.search(r"resumed? with:\n  (dolda fit .*)", err, re.IGNORECASE)
    assert printed, err[-2000:]
    args = shlex.split(printed.group(1))
    assert args[:2] == ["dolda", "fit"] and "--resume" in args
    done = subprocess.run(_cli(args[1:]), env=_env(), cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert dolda.load(tmp_path / "m").n_chains_ == 2
