"""Process lifetime helpers shared by the watcher's supervisor and its sampling process."""

from __future__ import annotations

import contextlib
import ctypes
import signal


def die_with_parent() -> None:
    """SIGTERM to this process when its parent dies (Linux's PR_SET_PDEATHSIG), so a killed
    supervisor or watcher never leaves a child running on its own."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
