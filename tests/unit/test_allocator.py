"""`up` and `serve` limit glibc's malloc arenas (entrypoints/allocator.py): their threads
allocate from at most two arenas, and MALLOC_ARENA_MAX, when set, is left to glibc."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

# Six threads allocate at once and stay alive until all have: each would get an arena of its
# own. glibc's malloc_info then lists the arenas (one <heap nr=...> per arena).
ARENAS_USED = r"""
import ctypes, os, sys, tempfile, threading
from replyguard.entrypoints.allocator import limit_arenas
from replyguard.settings import Environment

already = Environment.read().malloc_arena_max
limited = limit_arenas(already=already) if sys.argv[1] == "limit" else None
together = threading.Barrier(6)
held = []

def allocate():
    together.wait()
    held.append([bytes(1000) for _ in range(500)])  # over 512 bytes: malloc's, not Python's
    together.wait()

threads = [threading.Thread(target=allocate) for _ in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)
path = os.path.join(tempfile.mkdtemp(), "malloc.xml")
stream = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, stream)
libc.fclose(stream)
print(limited, open(path).read().count("<heap nr="))
"""


def arenas(mode: str, **env: str) -> tuple[str, int]:
    environment = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    out = subprocess.run(
        [sys.executable, "-c", ARENAS_USED, mode], env=environment, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


def test_threads_allocate_from_two_arenas_once_limited() -> None:
    limited, used = arenas("limit")
    assert limited == "True"
    assert used <= 2


def test_without_the_limit_the_same_threads_spread_over_more_arenas() -> None:
    # The control: the measurement above sees arenas (glibc's default is 8 per core).
    _, used = arenas("none")
    assert used > 2


def test_malloc_arena_max_in_the_environment_is_left_to_glibc() -> None:
    limited, used = arenas("limit", MALLOC_ARENA_MAX="4")
    assert limited == "False"
    assert 2 < used <= 4
