"""Pausing Python's cyclic garbage collector while many small acyclic objects are built."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects that form no cycles:
    each allocation would otherwise count towards a collection that walks them all and frees none."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
