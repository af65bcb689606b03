"""The watcher's processes tune glibc's allocator (console.lifecycle.tune_malloc) before their
threads start. Each case runs in a process of its own: the allocator's settings are for life."""

from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT

# Six threads each take a block from glibc; then 4 MB are taken and given back, and 1 MB taken.
# Prints how many heaps (arenas) glibc made, and whether the 1 MB block was mapped on its own.
SCRIPT = """
import ctypes, sys, threading
from console.lifecycle import tune_malloc
if sys.argv[1] == "tuned":
    tune_malloc()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
class Info(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc.mallinfo2.restype = Info
kept = []
ready = threading.Barrier(7)
def take():
    kept.append(libc.malloc(1000))
    ready.wait()
threads = [threading.Thread(target=take) for _ in range(6)]
for t in threads:
    t.start()
ready.wait()
for t in threads:
    t.join()
big = libc.malloc(4 << 20)
libc.free(big)  # (by default, the threshold rises to this block's size)
mapped_before = libc.mallinfo2().hblks
block = libc.malloc(1 << 20)
print("mapped", libc.mallinfo2().hblks - mapped_before)
libc.free(block)
sys.stdout.flush()
libc.malloc_stats()  # (to stderr: one "Arena N:" line per heap)
"""


def _run(mode: str) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    arenas = sum(line.startswith("Arena ") for line in done.stderr.splitlines())
    return arenas, int(done.stdout.split("mapped", 1)[1])


def test_the_watchers_processes_keep_few_heaps_and_map_large_blocks_on_their_own() -> None:
    tuned_arenas, tuned_mapped = _run("tuned")
    plain_arenas, plain_mapped = _run("plain")
    assert plain_arenas >= 4 and plain_mapped == 0, "the defaults this guards against (a heap per thread; a rising threshold)"
    assert tuned_arenas <= 2, tuned_arenas
    assert tuned_mapped == 1, "a 1 MB block is mapped on its own, whatever was freed before"
