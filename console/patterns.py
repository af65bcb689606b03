"""Regular expressions that users type (list searches, message filters), run with a time limit.

Python's `re` cannot be interrupted, so one catastrophic pattern such as `(a+)+$` could hold a web
worker or a scan for minutes. Patterns are checked by `re` (its error messages and its parse tree,
which the message filter reads literals from) and run by the `regex` package, whose searches take a
timeout. A search that runs out of time is a clear 400, never a hung request.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import regex

from console.errors import BadParameter


def compile_checked(pattern: str, ignore_case: bool, what: str) -> tuple[re.Pattern[str], regex.Pattern[str]]:
    """(`re` pattern, `regex` pattern) of a user's pattern; BadParameter naming `what` when invalid."""
    flags = re.IGNORECASE if ignore_case else 0
    try:
        checked = re.compile(pattern, flags)
        runner = regex.compile(pattern, regex.V0 | (regex.IGNORECASE if ignore_case else 0))
    except (re.error, regex.error, OverflowError, RecursionError) as exc:
        raise BadParameter(f"'{what}' is not a valid regular expression: {exc}.") from None
    return checked, runner


def too_slow(what: str, seconds: float) -> BadParameter:
    return BadParameter(f"The regular expression in '{what}' took longer than {seconds:g} s; it backtracks too much. "
                        "Simplify it (avoid nested repeats such as (a+)+).")


def limited_search(runner: regex.Pattern[str], what: str, seconds: float) -> Callable[[str], bool]:
    """A search that gives up after `seconds` on one text."""

    def search(text: str) -> bool:
        try:
            return runner.search(text, timeout=seconds) is not None
        except TimeoutError:
            raise too_slow(what, seconds) from None

    return search
