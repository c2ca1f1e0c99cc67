"""Shared harness of the bad-input suites (tests/test_bad_input_*.py).

Every case names what it expects:

``"error"``
    a clear error: for the command line a non-zero exit with one ``Error:``
    line (a ``ClickException`` / ``BadParameter``) and no traceback; for the
    library a ``ValueError``/``TypeError`` (``NotFittedError``,
    ``ModelFormatError``, ``FileExistsError`` included) with a one-line message
    that matches the case's pattern;
``"ok"`` / ``"warn"``
    legal input: success (with a warning matching the pattern for ``"warn"``),
    and the case's own check of the result;
``"either"``
    a clear error or success, whichever the library chooses (never a traceback).

:func:`classify` records the outcome ("clear error", "traceback", "silent
acceptance", "hang", "ok") per command or method in :data:`OUTCOMES`; each
suite prints the table in a last test (``pytest -s`` shows it) and asserts that
no case ended in a traceback, a hang or a silent acceptance.
"""

from __future__ import annotations

import contextlib
import re
import signal
import warnings
from collections import Counter, defaultdict

#: command or method -> Counter of outcomes
OUTCOMES: dict[str, Counter] = defaultdict(Counter)
#: Seconds after which a case counts as a hang.
HANG_SECONDS = 60

LIBRARY_ERRORS = (ValueError, TypeError, FileExistsError, FileNotFoundError)


class Hang(Exception):
    pass


@contextlib.contextmanager
def alarm(seconds=HANG_SECONDS):
    """Raise :class:`Hang` in the main thread after ``seconds`` (POSIX only)."""
    if not hasattr(signal, "SIGALRM"):  # pragma: no cover
        yield
        return

    def handler(signum, frame):
        raise Hang(f"no answer after {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def record(where: str, outcome: str) -> str:
    OUTCOMES[where][outcome] += 1
    return outcome


def run_cli(args, input=None):
    """Invoke ``dolda`` in-process; returns (outcome, output, warnings text)."""
    from click.testing import CliRunner

    from dolda.cli import main

    with alarm():
        try:
            result = CliRunner().invoke(main, [str(a) for a in args], input=input)
        except Hang:
            return "hang", "", ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        text = "".join(traceback.format_exception(result.exception))
        return "traceback", result.output + text, ""
    output = result.output
    if "Traceback" in output:
        return "traceback", output, ""
    if result.exit_code == 0:
        return "ok", output, ""
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    if len(errors) != 1:
        return "traceback", output, ""
    return "clear error", output, ""


def check_cli(command, args, expect, pattern=None, input=None, check=None):
    outcome, output, _ = run_cli(args, input=input)
    if expect == "error":
        if outcome == "ok":
            outcome = "silent acceptance"
        record(command, outcome)
        assert outcome == "clear error", f"{outcome}: {output[-3000:]}"
        if pattern:
            error = next(line for line in output.splitlines() if line.startswith("Error:"))
            assert re.search(pattern, error), error
        return output
    record(command, "ok" if outcome == "ok" else outcome)
    assert outcome == "ok", f"{outcome}: {output[-3000:]}"
    if expect == "warn":
        assert re.search(pattern, output), output[-3000:]
    if check is not None:
        check(output)
    return output


def check_call(where, call, expect, pattern=None, check=None):
    """Run ``call()`` (the library) and classify it; see the module docstring."""
    with warnings.catch_warnings(record=True) as caught, alarm():
        warnings.simplefilter("always")
        try:
            value = call()
            error = None
        except Hang:
            record(where, "hang")
            raise AssertionError(f"{where}: hang") from None
        except LIBRARY_ERRORS as exc:
            error = exc
        except Exception as exc:  # noqa: BLE001 - anything else is a finding
            record(where, "traceback")
            raise AssertionError(f"{where}: {type(exc).__name__}: {exc}") from exc
    if expect == "either":  # legal or refused, both fine: never a traceback
        expect = "error" if error is not None else "ok"
    if expect == "error":
        if error is None:
            record(where, "silent acceptance")
            raise AssertionError(f"{where}: accepted silently")
        message = str(error)
        one_line = "\n" not in message.strip()
        record(where, "clear error" if one_line else "traceback")
        assert one_line, message
        if pattern:
            assert re.search(pattern, message), message
        return error
    if error is not None:
        record(where, "traceback")
        raise AssertionError(f"{where}: legal input refused: {type(error).__name__}: {error}")
    record(where, "ok")
    if expect == "warn":
        texts = " | ".join(str(w.message) for w in caught)
        assert re.search(pattern, texts), texts
    if check is not None:
        check(value)
    return value


def summary(title: str) -> str:
    kinds = ["clear error", "ok", "traceback", "silent acceptance", "hang"]
    lines = [f"{title}: {'command/method':<28} " + " ".join(f"{k:>17}" for k in kinds)]
    total = Counter()
    for where in sorted(OUTCOMES):
        counts = OUTCOMES[where]
        total.update(counts)
        lines.append(f"{'':<{len(title) + 2}}{where:<28} "
                     + " ".join(f"{counts[k]:>17}" for k in kinds))
    lines.append(f"{'':<{len(title) + 2}}{'TOTAL':<28} "
                 + " ".join(f"{total[k]:>17}" for k in kinds))
    return "\n".join(lines)
