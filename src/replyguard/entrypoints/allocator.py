"""The C allocator of the long-running processes (`up`, `serve`): fewer glibc malloc arenas.

glibc's malloc gives each thread that allocates an arena of its own, up to eight per core.
`up` runs the web server's thread pool, the worker, the pollers and the notices in one
process; memory freed in one arena is not reused by a thread allocating in another, and an
arena's freed space is handed back to the system only from its top. Measured with
`python bench/memory.py --long up --up-minutes 30` (docs/benchmarks.md, "Peak memory"): RSS by
thirds of the run was 146.9, 148.9, 151.4 MiB with glibc's default, still rising at 30
minutes; with two arenas it levelled off (143.6, 144.7, 144.2 set by the environment; 142.0,
144.7, 145.5 set here), for the same work.

`MALLOC_ARENA_MAX` in the environment (glibc's own setting, `Environment.malloc_arena_max`)
always wins: then nothing is changed here. Not glibc (musl, macOS): nothing to do.
"""

from __future__ import annotations

import ctypes
import platform

#: glibc's `M_ARENA_MAX` option of `mallopt` (malloc.h).
M_ARENA_MAX = -8
#: Arenas for a process of a few busy threads: the main one and one shared by the others.
ARENAS = 2


def limit_arenas(arenas: int = ARENAS, *, already: str | None = None) -> bool:
    """Limit glibc's malloc to `arenas` arenas for the threads that allocate from now on
    (call it before they start), unless `already` (the environment's MALLOC_ARENA_MAX) is
    set. True when the limit was set."""
    if already or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
