"""A complete old or new copy always exists; two writers of one output are refused.

The kill tests land a SIGKILL *exactly* between the two renames that replace a
directory: a child process replaces the hook ``dolda.io.atomic._between_renames``
(a no-op in production) by ``os.kill(os.getpid(), SIGKILL)`` for one target name.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dolda
from dolda import DOLDA, DOProbit, io
from dolda.io import ModelFormatError
from dolda import Checkpoint

pytestmark = [pytest.mark.bad_input, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and flock")]

WORDS = "apple pear fig kiwi plum lime grape melon berry cherry".split()


def _texts(n=60, seed=0):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]
    return texts, np.array(["a", "b", "c"])[np.arange(n) % 3]


def _child(script: str, target: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``script`` in a child whose replacement of ``target`` is killed between renames."""
    prelude = textwrap.dedent(f"""
        import os, signal, sys
        import dolda.io.atomic as atomic
        def _kill(path):
            if path.name == {target!r}:
                os.kill(os.getpid(), signal.SIGKILL)
        atomic._between_renames = _kill
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(dolda.__file__).parents[1]),
               OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def _hidden(directory: Path):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_kill_between_the_renames_of_a_checkpoint_then_resume(tmp_path):
    """Killed while replacing its checkpoint: the directory is gone, --resume still finds
    the complete copy, and the resumed chain equals an uninterrupted one bit for bit."""
    script = """
        import numpy as np
        from dolda import DOLDA, Checkpoint
        rng = np.random.default_rng(0)
        words = "apple pear fig kiwi plum lime grape melon berry cherry".split()
        texts = [" ".join(rng.choice(words, 10)) for _ in range(60)]
        y = np.array(["a", "b", "c"])[np.arange(60) % 3]
        DOLDA(n_topics=3, n_iter=8, progress=False, random_state=5,
              checkpoint=Checkpoint("ck", every=2), n_jobs=1).fit(texts, y)
    """
    done = _child(script, "ck", tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    ck = tmp_path / "ck"
    assert not ck.exists()  # exactly between the renames: no checkpoint at the target
    assert any(n.startswith(".ck.old-") for n in _hidden(tmp_path))
    assert any(n.startswith(".ck.tmp-") for n in _hidden(tmp_path))
    meta, _ = io.load_checkpoint(ck)  # falls back to the complete new copy
    assert meta["next_iteration"] == 4

    texts, y = _texts()
    resumed = DOLDA(n_topics=3, n_iter=8, progress=False, random_state=5, n_jobs=1, checkpoint=Checkpoint(path=str(ck), every=2)).fit(texts, y, resume=str(ck))
    straight = DOLDA(n_topics=3, n_iter=8, progress=False, random_state=5,
                     n_jobs=1).fit(texts, y)
    np.testing.assert_array_equal(resumed.eta_draws_, straight.eta_draws_)
    assert ck.is_dir()
    assert _hidden(tmp_path) == []  # leftovers and lock file cleaned up


def test_kill_between_the_renames_of_overwrite_keeps_a_loadable_model(tmp_path):
    texts, y = _texts()
    X = np.random.default_rng(1).normal(size=(60, 2))
    first = DOProbit(n_iter=20, random_state=0).fit(X, y)
    first.save(tmp_path / "m")
    script = """
        import numpy as np
        from dolda import DOProbit
        rng = np.random.default_rng(0)
        X = np.random.default_rng(1).normal(size=(60, 2))
        y = np.array(["a", "b", "c"])[np.arange(60) % 3]
        DOProbit(n_iter=30, random_state=9).fit(X, y).save("m", overwrite=True)
    """
    done = _child(script, "m", tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not (tmp_path / "m").exists()
    loaded = dolda.load(tmp_path / "m")  # the new, complete copy
    assert loaded.n_iter_ == 30
    # the next save restores and cleans up; without overwrite it sees the model
    with pytest.raises(FileExistsError):
        first.save(tmp_path / "m")
    assert (tmp_path / "m" / "model.json").is_file()
    assert _hidden(tmp_path) == []
    assert dolda.load(tmp_path / "m").n_iter_ == 30


@pytest.mark.slow
def test_cli_fit_overwrite_killed_between_renames_then_predict_and_refit(tmp_path):
    texts, y = _texts()
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    fit = ["fit", "d.csv", "--text", "text", "--label", "label", "-k", "3", "-n", "6",
           "--quiet", "--out", "m"]
    script = f"""
        from dolda.cli import main
        main({fit!r}, standalone_mode=False)
        main({fit + ["--overwrite", "--seed", "4"]!r}, standalone_mode=False)
    """
    done = _child(script, "m", tmp_path)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not (tmp_path / "m").exists()
    from click.testing import CliRunner

    from dolda.cli import main

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        out = CliRunner().invoke(main, ["predict", "m", "d.csv", "--out", "p.csv"])
        assert out.exit_code == 0, out.output
        assert "cli.json" in os.listdir(next(tmp_path.glob(".m.tmp-*")))
        out = CliRunner().invoke(main, fit)  # no --overwrite: the recovered model is there
        assert out.exit_code != 0 and "already holds a model" in out.output
        out = CliRunner().invoke(main, fit + ["--overwrite"])
        assert out.exit_code == 0, out.output
    finally:
        os.chdir(cwd)
    assert _hidden(tmp_path) == []


def test_leftovers_are_removed_by_the_next_save(tmp_path):
    X = np.random.default_rng(1).normal(size=(40, 2))
    model = DOProbit(n_iter=10).fit(X, np.arange(40) % 2)
    (tmp_path / ".m.tmp-abc").mkdir()
    (tmp_path / ".m.tmp-abc" / "arrays.npz").write_bytes(b"partial")
    (tmp_path / ".m.old-def" / "model").mkdir(parents=True)
    model.save(tmp_path / "m")
    assert _hidden(tmp_path) == []


def _cli_env():
    return dict(os.environ, PYTHONPATH=str(Path(dolda.__file__).parents[1]),
                OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")


def test_two_fits_writing_one_out_the_second_is_refused_and_a_killed_lock_is_not_stale(
        tmp_path):
    texts, y = _texts(n=200)
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "d.csv", index=False)
    cmd = [sys.executable, "-m", "dolda.cli", "fit", "d.csv", "--text", "text", "--label",
           "label", "-k", "3", "--quiet", "--out", "m"]
    first = subprocess.Popen(cmd + ["-n", "100000"], cwd=tmp_path, env=_cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / ".m.lock").exists():
            assert first.poll() is None, first.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        second = subprocess.run(cmd + ["-n", "3"], cwd=tmp_path, env=_cli_env(),
                                capture_output=True, text=True, timeout=120, check=False)
        assert second.returncode == 2, second.stderr
        assert "another dolda process" in second.stderr and "--out" in second.stderr
        assert "Traceback" not in second.stderr
        assert not (tmp_path / "m").exists()
    finally:
        first.kill()  # SIGKILL: the lock file stays behind, but its flock died with it
        first.wait()
    assert (tmp_path / ".m.lock").exists()  # left by the killed process, but not held
    from dolda.io.atomic import output_lock

    with output_lock(tmp_path / "m"):
        pass
    assert _hidden(tmp_path) == []


def test_save_while_another_process_holds_the_lock_is_refused(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from dolda.io.atomic import output_lock
            with output_lock({str(tmp_path / "m")!r}):
                print("locked", flush=True)
                time.sleep(60)
        """)], env=_cli_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        X = np.random.default_rng(1).normal(size=(40, 2))
        model = DOProbit(n_iter=10).fit(X, np.arange(40) % 2)
        with pytest.raises(ModelFormatError, match="another dolda process"):
            model.save(tmp_path / "m")
        assert not (tmp_path / "m").exists()
    finally:
        holder.kill()
        holder.wait()
    model.save(tmp_path / "m")
    assert dolda.load(tmp_path / "m").n_iter_ == 10
