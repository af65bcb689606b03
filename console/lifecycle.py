"""Process lifetime helpers shared by the watcher's supervisor and its sampling process."""

from __future__ import annotations

import contextlib
import ctypes
import signal


def exit_reason(returncode: int) -> str:
    """How a child ended, in words: 'signal SIGABRT' or 'exit code 3'."""
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def die_with_parent() -> None:
    """SIGTERM to this process when its parent dies (Linux's PR_SET_PDEATHSIG), so a killed
    supervisor or watcher never leaves a child running on its own."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


_libc: ctypes.CDLL | None = None

# Failures this process met (a Kafka or Redis call that failed): counted where they are raised or
# caught (GatewayError, StoreUnavailable, the Redis calls whose failure is only logged). A failure
# tends to leave objects in reference cycles (an exception and the frames of its traceback), which
# the watcher's processes, freezing what they keep after each cycle and pass, would otherwise keep
# until their next full collection (console/watcher/memory.py settle_gc).
_failures = [0]


def failure_seen() -> None:
    _failures[0] += 1


def failures_seen() -> int:
    return _failures[0]


def return_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim): a watcher's pass frees
    hundreds of megabytes of answers and arrays, which glibc otherwise keeps, so resident memory
    would stay at the high-water mark of the largest pass."""
    global _libc
    with contextlib.suppress(OSError, AttributeError):
        if _libc is None:
            _libc = ctypes.CDLL("libc.so.6")
        _libc.malloc_trim(0)


# glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
ARENA_MAX = 2
MMAP_THRESHOLD = 128 * 1024


def tune_malloc() -> None:
    """For the watcher's two processes, before they start threads: at most ARENA_MAX of glibc's
    heaps (by default each thread that allocates gets one of its own, up to eight per core, and each
    keeps its free blocks), and every block of MMAP_THRESHOLD bytes or more mapped on its own, so
    that freeing it gives its pages back at once (by default the threshold rises to the largest
    block freed, up to 32 MB, and a pass's arrays and answer tables are carved from the heap and
    leave it fragmented). So a large cluster's passes leave the processes no bigger than what they
    hold (bench/simulate.py measures it; figures in docs/benchmarks.md)."""
    global _libc
    with contextlib.suppress(OSError, AttributeError):
        if _libc is None:
            _libc = ctypes.CDLL("libc.so.6")
        _libc.mallopt(_M_ARENA_MAX, ARENA_MAX)
        _libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
