"""Ctrl-C and a lost Dask scheduler end ``dolda fit`` with one clear message.

Both run the real command in a child process (signals and a scheduler process
cannot be faked in-process).
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dolda
from dolda import io

pytestmark = [pytest.mark.bad_input, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

WORDS = "apple pear fig kiwi plum lime grape melon berry cherry".split()


def _env():
    return dict(os.environ, PYTHONPATH=str(Path(dolda.__file__).parents[1]),
                OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")


def _data(path: Path, n=60):
    rng = np.random.default_rng(0)
    pd.DataFrame({"text": [" ".join(rng.choice(WORDS, 8)) for _ in range(n)],
                  "label": np.arange(n) % 3,
                  "x": np.round(rng.normal(size=n), 3)}).to_csv(path, index=False)


def _wait_for(predicate, proc, seconds=120):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_ctrl_c_during_fit_saves_a_checkpoint_and_says_how_to_resume(tmp_path):
    _data(tmp_path / "d.csv")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dolda.cli", "fit", "d.csv", "--text", "text", "--label",
         "label", "-k", "3", "-n", "100000", "--quiet", "--checkpoint", "ck",
         "--checkpoint-every", "1", "--out", "m"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (tmp_path / "ck" / "model.json").is_file(), proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "Interrupted: the chain so far is saved in ck" in err and "--resume ck" in err
    meta, _ = io.load_checkpoint(tmp_path / "ck")
    assert 1 <= meta["next_iteration"] < 100000
    assert not (tmp_path / "m").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "d.csv"]


@pytest.mark.slow
def test_losing_the_dask_scheduler_is_one_line(tmp_path):
    pytest.importorskip("distributed")
    _data(tmp_path / "d.csv")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": _env()}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], **quiet)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                               "--nthreads", "1", "--no-dashboard"], **quiet)
    fit = None
    try:
        fit = subprocess.Popen(
            [sys.executable, "-m", "dolda.cli", "fit", "d.csv", "--text", "text", "--label",
             "label", "-k", "3", "-n", "100000", "--quiet", "--connect-timeout", "2",
             "--scheduler", address, "--out", "m"],
            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        line = ""
        deadline = time.monotonic() + 120
        while "Fitting on the Dask cluster" not in line:
            assert time.monotonic() < deadline
            line = fit.stderr.readline()
            if not line and fit.poll() is not None:
                # the scheduler was not up yet: that is the one-line "cannot reach" error
                pytest.skip("the scheduler did not start in time")
        time.sleep(1.0)
        scheduler.kill()
        _, err = fit.communicate(timeout=120)
    finally:
        for proc in (fit, worker, scheduler):
            if proc is not None:
                proc.kill()
                proc.wait()
    assert fit.returncode == 1, err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "lost the Dask scheduler" in errors[0], err
    assert not (tmp_path / "m").exists()


def test_library_log_records_with_exceptions_print_one_line():
    """distributed logs a lost scheduler with ``exc_info``: the command prints one line."""
    import logging

    from dolda.cli import _OneLineFormatter

    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except OSError:
        record = logging.getLogger("distributed.client").makeRecord(
            "distributed.client", logging.ERROR, __file__, 1, "Failed to reconnect %s",
            ("now",), sys.exc_info())
    text = _OneLineFormatter("%(levelname)s: %(message)s").format(record)
    assert text == ("ERROR: Failed to reconnect now "
                    "(ConnectionRefusedError: [Errno 111] Connection refused)")
    assert "\n" not in text and "Traceback" not in text


# ------------------------------------------ issue 34: SIGTERM, a second Ctrl-C, the truth
def _fit(tmp_path, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "dolda.cli", "fit", "d.csv", "--text", "text", "--label",
         "label", "-k", "3", "-n", "100000", "--quiet", "--checkpoint", "ck",
         "--checkpoint-every", "1", "--out", "m", *extra],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigterm_saves_a_checkpoint_like_ctrl_c_and_exits_143(tmp_path):
    from _bad_input import tally

    _data(tmp_path / "d.csv")
    proc = _fit(tmp_path)
    try:
        _wait_for(lambda: (tmp_path / "ck" / "model.json").is_file(), proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    ok = (proc.returncode == 143 and "Traceback" not in err
          and "Interrupted: the chain so far is saved in ck" in err)
    tally("fit (signals)", "as expected" if ok else "unclear")
    assert proc.returncode == 143, err  # 128 + SIGTERM, as shells report a kill
    assert "Traceback" not in err
    assert "Interrupted: the chain so far is saved in ck" in err
    meta, _ = io.load_checkpoint(tmp_path / "ck")
    assert 1 <= meta["next_iteration"] < 100000


def test_the_resume_command_is_complete(tmp_path):
    """The printed command names --checkpoint (and --chains), and running it resumes."""
    from _bad_input import tally

    _data(tmp_path / "d.csv")
    proc = _fit(tmp_path, "--chains", "1")
    try:
        _wait_for(lambda: (tmp_path / "ck" / "model.json").is_file(), proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    line = err.split("Resume with:\n", 1)[1].strip().splitlines()[0]
    ok = "--checkpoint ck" in line and "--resume ck" in line
    tally("fit (signals)", "as expected" if ok else "unclear")
    assert ok, line


def test_a_second_ctrl_c_stops_at_once_and_tells_the_truth(tmp_path):
    """Two Ctrl-C's a moment apart, with a checkpoint on disk: the fit ends within
    seconds, and nothing it prints says that nothing was saved."""
    from _bad_input import tally

    _data(tmp_path / "d.csv", n=300)
    proc = _fit(tmp_path, "--covariates", "x", "--checkpoint-every", "5")
    try:
        _wait_for(lambda: (tmp_path / "ck" / "model.json").is_file(), proc)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        tic = time.monotonic()
        _, err = proc.communicate(timeout=120)
        seconds = time.monotonic() - tic
    finally:
        proc.kill()
    lie = "nothing was saved" in err
    tally("fit (signals)", "silent" if lie else ("as expected" if seconds < 20 else "unclear"))
    assert not lie, err
    assert "Traceback" not in err
    assert seconds < 20, seconds
    assert proc.returncode in (130, -signal.SIGINT), (proc.returncode, err)
    # the checkpoint stays complete and resumable
    meta, _ = io.load_checkpoint(tmp_path / "ck")
    assert meta["next_iteration"] >= 1
    assert "stays resumable" in err or "saved in ck" in err or "can be resumed" in err, err


def test_two_signals_inside_one_long_call_count_as_two():
    """Python runs a signal handler once for the signals that arrive while one compiled
    kernel runs (it checks for signals only when the kernel returns): the deferred
    interrupt counts them through the wakeup file, so two Ctrl-C's 0.3 s apart stop the
    fit as two, instead of being taken for one (the fit went on to the end of the
    iteration and its checkpoint: over 60 s with many covariates)."""
    import math

    import numba

    from dolda.models.dolda.chain_stage import _DeferredInterrupt

    @numba.njit(cache=False)
    def spin(n):
        s = 0.0
        for i in range(n):
            s = math.sqrt(s + i)
        return s

    spin(10)
    tic = time.monotonic()
    spin(10_000_000)
    n = int(10_000_000 * 3.0 / max(time.monotonic() - tic, 1e-3))  # about 3 s per call
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -INT {os.getpid()}; sleep 0.3; "
                                           f"kill -INT {os.getpid()}"])
    try:
        with pytest.raises(KeyboardInterrupt), _DeferredInterrupt() as interrupt:
            tic = time.monotonic()
            while time.monotonic() - tic < 60 and not interrupt.requested:
                spin(n)
    finally:
        killer.wait(30)
    assert not interrupt.requested  # stopped as a second signal, not deferred as a first


def test_after_the_first_signal_the_command_line_restores_the_default_action():
    from dolda.models.dolda.chain_stage import _DeferredInterrupt

    old = _DeferredInterrupt.hard_second
    _DeferredInterrupt.hard_second = True
    # what the process had before: Python's default_int_handler, or SIG_IGN when it was
    # started as a background job of a shell without job control (as CI may start it)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with _DeferredInterrupt() as interrupt:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler runs
            assert interrupt.requested and interrupt.signum == signal.SIGTERM
            assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        _DeferredInterrupt.hard_second = old
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
