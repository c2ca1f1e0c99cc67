"""The token patterns dolda accepts: a subset of Python's regular expressions that cannot
backtrack catastrophically.

A token pattern is stored in every model file and run by ``predict`` and ``dolda serve``
on whatever text arrives, so a pattern such as ``(a+)+$`` or ``(\\w|\\w)*x`` (exponential
backtracking) or ``\\w*\\w*\\w*x`` (a high-degree polynomial) in a crafted file would hang
whoever loads it.  Python's ``re`` has no time limit and a linear-time engine would
tokenize differently, so the pattern is checked structurally instead, on the parse tree
of :mod:`re` itself, at fit and at load:

* no backreferences, no lookahead or lookbehind, no conditional groups;
* a quantifier that may repeat more than once (``*``, ``+``, ``{m,n}`` with n > 1)
  applies to one character item only (a literal, a class such as ``[\\w'-]`` or
  ``\\w``, or ``.``), never to a group, an alternation or another quantifier;
* at most :data:`MAX_VARIABLE_REPEATS` variable-length quantifiers in the whole pattern,
  and no two of them side by side (``\\w+\\w*``);
* the other choices (each ``?`` counts 2, each alternation its number of branches)
  multiply to at most :data:`MAX_CHOICES` (``a?a?a?...aaa`` is exponential too).

``?`` may apply to a group (``\\w+(?:'\\w+)?``).  Within these rules the work per start
position is at most a polynomial of degree :data:`MAX_VARIABLE_REPEATS` in the length
of the run the quantifiers can match.  The default pattern
(:data:`dolda.design.corpus.TOKEN_PATTERN`) is inside the subset, and nothing is
rewritten: an accepted pattern tokenizes exactly as ``re`` does.
"""

from __future__ import annotations

import functools

try:  # Python >= 3.11
    from re import _constants as _c, _parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

#: Largest token pattern accepted (characters).
MAX_PATTERN_LENGTH = 1_000
#: Most variable-length quantifiers (``*``, ``+``, ``{m,n}`` with m < n) in one pattern.
MAX_VARIABLE_REPEATS = 2
#: Largest product of the pattern's other choices (``?``: 2, an alternation: its branches).
MAX_CHOICES = 1024

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT}
if hasattr(_c, "POSSESSIVE_REPEAT"):
    _REPEATS.add(_c.POSSESSIVE_REPEAT)
#: One-character items a repeating quantifier may apply to.
_CHAR_ITEMS = {_c.LITERAL, _c.NOT_LITERAL, _c.IN, _c.ANY}
_REFUSED = {
    _c.GROUPREF: "a backreference",
    _c.GROUPREF_EXISTS: "a conditional group",
    _c.ASSERT: "a lookahead or lookbehind",
    _c.ASSERT_NOT: "a negative lookahead or lookbehind",
}


class UnsafePattern(ValueError):
    """A token pattern outside the safe subset (one line naming the construct)."""


def _single_char(body) -> bool:
    items = list(body)
    while len(items) == 1 and items[0][0] == _c.SUBPATTERN:  # (x) or (?:x) around one item
        items = list(items[0][1][-1])
    return len(items) == 1 and items[0][0] in _CHAR_ITEMS


def _walk(seq, counter) -> None:
    previous_variable = False
    for op, av in seq:
        variable = False
        if op in _REFUSED:
            raise UnsafePattern(f"it uses {_REFUSED[op]}")
        if op in _REPEATS:
            lo, hi, body = av
            if hi > 1:
                if not _single_char(body):
                    raise UnsafePattern("a quantifier that repeats (*, +, {m,n}) applies to a "
                                        "group, an alternation or another quantifier (nested "
                                        "quantifiers backtrack exponentially); quantify single "
                                        "characters or classes only")
                variable = lo != hi
                if variable:
                    counter[0] += 1
                    if previous_variable:
                        raise UnsafePattern("two variable-length quantifiers stand side by "
                                            "side (as in \\w+\\w*)")
            else:
                if lo != hi:
                    counter[1] *= 2
                _walk(body, counter)
        elif op == _c.SUBPATTERN:
            _walk(av[-1], counter)
        elif op == _c.BRANCH:
            counter[1] *= len(av[1])
            for branch in av[1]:
                _walk(branch, counter)
        elif hasattr(_c, "ATOMIC_GROUP") and op == _c.ATOMIC_GROUP:
            _walk(av, counter)
        elif op not in _CHAR_ITEMS and op != _c.AT:
            raise UnsafePattern(f"it uses the construct {op!s}, outside the safe subset")
        previous_variable = variable


@functools.lru_cache(maxsize=64)
def check_safe_pattern(pattern: str) -> str:
    """``pattern`` if it is a regular expression in the safe subset (module docstring),
    else :class:`UnsafePattern` (a ValueError) with one line naming what is refused."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsafePattern(f"it is longer than {MAX_PATTERN_LENGTH} characters")
    try:
        tree = _p.parse(pattern)
    except (_c.error, RecursionError, OverflowError) as exc:
        raise UnsafePattern(f"it is not a valid regular expression ({exc})") from None
    counter = [0, 1]
    try:
        _walk(tree, counter)
    except RecursionError:
        raise UnsafePattern("it nests groups too deeply") from None
    if counter[0] > MAX_VARIABLE_REPEATS:
        raise UnsafePattern(f"it has {counter[0]} variable-length quantifiers, at most "
                            f"{MAX_VARIABLE_REPEATS}")
    if counter[1] > MAX_CHOICES:
        raise UnsafePattern(f"its optional parts and alternations make {counter[1]} "
                            f"combinations, at most {MAX_CHOICES}")
    return pattern
