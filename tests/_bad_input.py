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


# ------------------------------------------------- issue 34: the attack's outcome classes
#: command -> Counter of the attack's classes: "as expected", "data lost", "traceback",
#: "raw message", "silent", "unclear" (see :func:`check_case`).
CLASSES: dict[str, Counter] = defaultdict(Counter)
ATTACK_CLASSES = ("as expected", "data lost", "traceback", "raw message", "silent", "unclear")


def tally(command: str, outcome: str) -> str:
    """Count one case; with ``DOLDA_BAD_INPUT_TALLY=FILE`` also add it to that JSON file
    (to compare two trees: run the suite on each with the same FILE name)."""
    import json
    import os

    CLASSES[command][outcome] += 1
    target = os.environ.get("DOLDA_BAD_INPUT_TALLY")
    if target:
        try:
            with open(target, encoding="utf-8") as fh:
                counts = json.load(fh)
        except (OSError, ValueError):
            counts = {}
        row = counts.setdefault(command, {})
        row[outcome] = row.get(outcome, 0) + 1
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(counts, fh, indent=1, sort_keys=True)
    return outcome


def digest(path) -> str | None:
    """A fingerprint of a file or a directory tree (None: missing)."""
    import hashlib
    from pathlib import Path

    path = Path(path)
    if not path.exists():
        return None
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for p in files:
        h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def classify(outcome: str, output: str, expect: str, pattern, kind: str, lost: bool,
             check=None) -> str:
    """The attack's class of one command-line case (see :data:`ATTACK_CLASSES`).

    ``kind`` ("raw message" or "unclear") is the class of an error whose line does
    not match ``pattern``; ``check(output)`` returning False makes a success silent.
    """
    if lost:
        return "data lost"
    if outcome in ("traceback", "hang"):
        return "traceback"
    if expect == "error":
        if outcome == "ok":
            return "silent"
        error = next(line for line in output.splitlines() if line.startswith("Error:"))
        return "as expected" if not pattern or re.search(pattern, error) else kind
    if outcome != "ok":
        return kind
    if expect == "warn" and not re.search(pattern, output):
        return "silent"
    if check is not None and check(output) is False:
        return "silent"
    return "as expected"


def check_case(command, args, expect, pattern=None, kind="unclear", input=None, protect=(),
               check=None):
    """Run one command-line case, tally its class, and assert it is as expected."""
    before = {str(p): digest(p) for p in protect}
    outcome, output, _ = run_cli(args, input=input)
    lost = any(digest(p) != before[str(p)] for p in protect)
    result = classify(outcome, output, expect, pattern, kind, lost, check)
    tally(command, result)
    assert result == "as expected", f"{result}: {output[-3000:]}"
    return output


def class_summary(title: str) -> str:
    lines = [f"{title}: {'command':<22} " + " ".join(f"{k:>12}" for k in ATTACK_CLASSES)]
    total = Counter()
    for where in sorted(CLASSES):
        total.update(CLASSES[where])
        lines.append(f"{'':<{len(title) + 2}}{where:<22} "
                     + " ".join(f"{CLASSES[where][k]:>12}" for k in ATTACK_CLASSES))
    lines.append(f"{'':<{len(title) + 2}}{'TOTAL':<22} "
                 + " ".join(f"{total[k]:>12}" for k in ATTACK_CLASSES))
    return "\n".join(lines)
