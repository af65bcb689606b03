"""What a rule's target names: a name, a glob (`orders-*`), `*` for every subject, or `re:<regex>`
(run with console.patterns' time limit, so one backtracking pattern cannot hold the watcher)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from console.errors import BadParameter
from console.patterns import compile_checked, limited_search

REGEX_PREFIX = "re:"
GLOB_CHARACTERS = frozenset("*?[")
# A regex search on one subject gives up after this long: the rule then does not match it.
REGEX_SECONDS = 0.05


class Target:
    """A rule's target, compiled once; `matches(subject)` remembers each answer (the subjects of a
    cluster are the same names cycle after cycle)."""

    __slots__ = ("_cache", "_test", "exact", "text")

    def __init__(self, text: str) -> None:
        self.text = text.strip() or "*"
        self.exact: str | None = None  # the one subject it names, when it is a plain name
        self._cache: dict[str, bool] = {}
        self._test: Callable[[str], bool]
        if self.text == "*":
            self._test = lambda subject: True
        elif self.text.startswith(REGEX_PREFIX):
            _, runner = compile_checked(self.text[len(REGEX_PREFIX):], False, "target")
            search = limited_search(runner, "target", REGEX_SECONDS)
            self._test = lambda subject: _searched(search, subject)
        elif GLOB_CHARACTERS.intersection(self.text):
            pattern = self.text
            self._test = lambda subject: fnmatch.fnmatchcase(subject, pattern)
        else:
            self.exact = self.text
            self._test = self.text.__eq__

    @property
    def every(self) -> bool:
        return self.text == "*"

    def matches(self, subject: str) -> bool:
        found = self._cache.get(subject)
        if found is None:
            if len(self._cache) > 100_000:  # (subjects come and go: bounded all the same)
                self._cache.clear()
            found = self._cache[subject] = self._test(subject)
        return found


def _searched(search: Callable[[str], bool], subject: str) -> bool:
    try:
        return search(subject)
    except BadParameter:  # (too slow on this subject: it is not matched, rather than stalling the cycle)
        return False


def check_target(text: str) -> str:
    """The target as stored; BadParameter with a sentence when its regex does not compile."""
    if len(text) > 500:
        raise BadParameter("'target' must be at most 500 characters.")
    return Target(text).text
