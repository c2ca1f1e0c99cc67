"""The compile helper (dolda.cli._compile_ahead): its plans are what the commands call,
its types round-trip, and the helper starts only when wanted and never outlives the block."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from numba.core import types

from dolda.cli import _compile_ahead as CA
from dolda.sampler.rng import stream


@pytest.mark.parametrize("t", [
    types.Array(types.int32, 1, "C"),
    types.Array(types.float32, 2, "C", readonly=True),
    types.Array(types.float64, 3, "A"),
    types.Array(types.uint64, 1, "F"),
    types.int64, types.float64, types.boolean, types.uint64,
    types.Omitted(0), types.Omitted(None),
])
def test_a_type_comes_back_as_itself(t):
    entry = CA.encode_type(t)
    assert CA.decode_type(json.loads(json.dumps(entry))) == t


def test_a_type_a_plan_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="no plan entry"):
        CA.encode_type(types.UniTuple(types.int64, 2))


@pytest.mark.parametrize("plan", sorted(CA.RECORDERS))
def test_the_recorded_plan_is_what_the_command_calls(plan):
    """Recorded afresh (a new process: a kernel shows at its first call), the plan's kernels
    and signatures are the ones shipped (the seconds are compile times only when recorded
    on an empty cache).  A kernel whose arguments change type, or one added to the command,
    fails this until the plans are recorded again (``main(["--record"])``)."""
    shipped = json.loads(CA.PLANS_FILE.read_text())[plan]
    again = CA.record_in_process(plan)
    assert [entry[:2] for entry in again] == [entry[:2] for entry in shipped]
    assert len(shipped) >= 15  # every parallel kernel of an iteration, and prediction's
    assert all(seconds > 0 for _, _, seconds in shipped)


def test_every_plan_entry_names_a_kernel_and_decodes():
    for plan in CA.RECORDERS:
        for name, sigs, seconds in CA.load_plan(plan):
            disp = CA._dispatcher(name)
            assert hasattr(disp, "compile"), name
            assert len(sigs) >= 1 and all(isinstance(s, tuple) for s in sigs)


def _names(entries):
    return [e[0] for e in entries]


def test_the_helper_takes_the_second_part_so_that_both_finish_together():
    e = lambda name, s: (name, [], s)  # noqa: E731
    # 2 + 4 + 1 = 7 s for the command, the lag (2 s) + 5 s for the helper
    plan = [e("a", 2.0), e("b", 4.0), e("c", 1.0), e("d", 3.0), e("f", 2.0)]
    assert _names(CA.helper_order(plan)) == ["d", "f", "c", "b", "a"]
    # a large kernel in the middle goes where the later finish is earliest
    plan = [e("a", 1.0), e("b", 1.0), e("big", 10.0), e("d", 1.0), e("f", 1.0)]
    assert _names(CA.helper_order(plan)) == ["d", "f", "big", "b", "a"]
    plan = [e("a", 6.0), e("b", 1.0), e("big", 10.0), e("d", 1.0)]
    assert _names(CA.helper_order(plan)) == ["big", "d", "b", "a"]
    assert CA.helper_order([]) == []


def test_is_cached_sees_a_compiled_signature_and_not_an_absent_one():
    stream(1, 2, 3)  # compiled (or loaded) for int64 x 3
    assert CA.is_cached(stream, (types.int64, types.int64, types.int64))
    assert not CA.is_cached(stream, (types.float32, types.float32, types.float32))


def test_missing_reads_the_real_plans(monkeypatch):
    """``ahead`` swallows errors (the command must run), so check ``missing`` raises none."""
    for plan in CA.RECORDERS:
        names = [entry[0] for entry in CA.load_plan(plan)]
        assert set(CA.missing(plan)) <= set(names)
    # a kernel with a signature never compiled is missing
    monkeypatch.setattr(CA, "load_plan", lambda plan: [
        ("dolda.sampler.rng.stream", [(types.float32,) * 3], 1.0)])
    assert CA.missing("demo") == ["dolda.sampler.rng.stream"]


def test_the_helper_stops_at_once_when_its_parent_is_gone():
    assert CA.compile_plan("demo", parent=os.getppid() + 12345) == []


def _sleeper(plan):
    return [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_helper_runs_in_the_block_and_is_gone_after_it(monkeypatch):
    monkeypatch.setattr(CA, "helper_command", _sleeper)
    tic = time.perf_counter()
    with CA.ahead("demo", environ={"PATH": os.environ.get("PATH", "")}) as proc:
        assert proc is not None and proc.poll() is None
    assert proc.poll() is not None  # stopped, not left running
    assert time.perf_counter() - tic < 8  # terminated, not waited for (10 s) and killed


def test_no_helper_when_switched_off(monkeypatch):
    monkeypatch.setattr(CA, "helper_command", _sleeper)
    with CA.ahead("demo", environ={CA.SWITCH: "0"}) as proc:
        assert proc is None


def _no_compile(*args, **kwargs):
    raise AssertionError("compiled a plan whose kernels are all cached")


def test_the_helper_ends_at_once_when_the_cache_holds_the_plan(monkeypatch):
    monkeypatch.setattr(CA, "missing", lambda plan: [])
    monkeypatch.setattr(CA, "compile_plan", _no_compile)
    assert CA.main(["demo"]) == 0
    monkeypatch.setattr(CA, "missing", lambda plan: ["x"])
    with pytest.raises(AssertionError, match="compiled a plan"):
        CA.main(["demo"])


@pytest.mark.parametrize("command", [["/nonexistent/python"], [None, "-c", "pass"]],
                         ids=["no such file", "no sys.executable"])
def test_a_helper_that_cannot_start_breaks_nothing(monkeypatch, command):
    monkeypatch.setattr(CA, "helper_command", lambda plan: command)
    with CA.ahead("demo", environ={}) as proc:
        assert proc is None


def test_the_helper_compiles_its_plan_in_helper_order(monkeypatch):
    seen = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def compile(self, sig):
            seen.append(self.name)

    monkeypatch.setattr(CA, "_dispatcher", Fake)
    done = CA.compile_plan("demo")
    want = _names(CA.helper_order(CA.load_plan("demo")))
    assert done == want and seen == want
    assert want[0] != _names(CA.load_plan("demo"))[0]  # not the command's own first kernel


def test_dolda_demo_with_the_helper_runs_and_leaves_no_process_behind():
    """The real wiring: ``dolda demo`` with the helper switched on (the suite switches it off)
    succeeds, and no helper it started is alive once it has returned.  With the suite's
    warm cache the helper checks it and ends by itself; that a helper still compiling is
    stopped is the sleeper test's (test_a_helper_runs_in_the_block_and_is_gone_after_it)."""
    import subprocess

    psutil = pytest.importorskip("psutil")
    env = dict(os.environ, **{CA.SWITCH: "1"})
    demo = subprocess.Popen([sys.executable, "-m", "dolda.cli", "demo", "--docs", "100",
                             "--topics", "3", "--iterations", "5", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = demo.communicate(timeout=600)
    assert demo.returncode == 0, err[-2000:]
    assert "Held-out accuracy" in out
    mark = f"--parent {demo.pid}"
    alive = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "_compile_ahead" in cmd and cmd.endswith(mark):
            alive.append(cmd)
    assert alive == []
