"""The steps of a fit announced (issue 36): log records always, a line on standard error for
a step longer than SHOW_AFTER, and the numba kernels a first run compiles."""

import logging
import time
import types

from dolda.utils import phases as _phases


def test_a_long_step_is_shown_a_short_one_is_not(capsys, monkeypatch):
    monkeypatch.setattr(_phases, "SHOW_AFTER", 0.05)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # no -v handler: echo
    with _phases.phase("a long step", show=True):
        time.sleep(0.3)
    with _phases.phase("a short step", show=True):
        pass
    with _phases.phase("a quiet step", show=False):
        time.sleep(0.2)
    err = capsys.readouterr().err
    assert "DOLDA: a long step ..." in err and "DOLDA: a long step: done in" in err
    assert "short" not in err and "quiet" not in err


def test_every_step_is_logged_with_its_time(caplog):
    with caplog.at_level(logging.INFO, logger="dolda.models.dolda.estimator"):
        with _phases.phase("a short step", show=True):
            pass
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "DOLDA: a short step ..."
    assert messages[1].startswith("DOLDA: a short step: done in ")


def test_a_failed_step_says_it_stopped(caplog):
    with caplog.at_level(logging.INFO, logger="dolda.models.dolda.estimator"):
        try:
            with _phases.phase("a failing step", show=False):
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            pass
    assert any(r.getMessage().startswith("DOLDA: a failing step: stopped after")
               for r in caplog.records)


def test_cold_kernels_are_those_without_a_fresh_cache(tmp_path):
    source = tmp_path / "kernels.py"
    source.write_text("# source\n")
    cached = tmp_path / "cached.nbi"
    cached.write_text("index")

    def kernel(index):
        return types.SimpleNamespace(
            __module__="fake", _cache=types.SimpleNamespace(
                _cache_file=types.SimpleNamespace(_index_path=str(index))))

    module = types.ModuleType("fake")
    module.__file__ = str(source)
    module.warm, module.cold = kernel(cached), kernel(tmp_path / "missing.nbi")
    module.plain = lambda: None  # not a numba kernel
    assert _phases.cold_kernels([module]) == ["fake.cold"]
