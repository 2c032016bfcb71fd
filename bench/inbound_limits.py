"""What the door checks cost: `over_limit` on large and crafted messages, the storable-text
step on a hostile classification, and the signature-only pass over a 30 MB unsigned Mailgun
body (time and the Python memory held at once). No database.

    python bench/inbound_limits.py
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import write_result
from rich.console import Console
from rich.table import Table

from replyguard.domain.inbound.classify import classify
from replyguard.domain.inbound.limits import MessageLimits, over_limit
from replyguard.domain.inbound.storable import storable_classification
from replyguard.entrypoints.http.forms import Body, parse_form

MIB = 1024 * 1024


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The fastest of `runs` runs, in milliseconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def messages() -> dict[str, bytes]:
    head = b"From: a@b.test\r\nSubject: x\r\nMessage-ID: <x@b.test>\r\n"
    plain = head + b"\r\n" + (b"x" * 76 + b"\r\n") * (30 * MIB // 78)
    parts = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n" for _ in range(20_000))
    crafted = head + b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n' + parts + b"--b--\r\n"
    nested = head + b"".join(
        b'Content-Type: multipart/mixed; boundary="n%d"\r\n\r\n--n%d\r\n' % (i, i) for i in range(150)
    )
    return {"30 MB plain": plain, "20,000 MIME parts": crafted, "150 nested multiparts": nested}


def unsigned_mailgun(size: int) -> Iterator[bytes]:
    yield b'--mg\r\nContent-Disposition: form-data; name="body-mime"\r\n\r\n'
    for _ in range(size // MIB):
        yield b"x" * MIB
    for name, value in ((b"timestamp", b"1"), (b"token", b"t" * 50), (b"signature", b"0" * 64)):
        yield b'\r\n--mg\r\nContent-Disposition: form-data; name="' + name + b'"\r\n\r\n' + value
    yield b"\r\n--mg--\r\n"


def main() -> int:
    rows: list[dict[str, object]] = []
    limits = MessageLimits()
    for name, raw in messages().items():
        verdict = over_limit(raw, limits) or "within the limits"
        rows.append(
            {
                "check": f"over_limit, {name}",
                "ms": round(best_of(5, lambda r=raw: over_limit(r, limits)), 1),
                "result": verdict,
            }
        )
    hostile = classify(
        b"From: a@b.test\r\nSubject: =?utf-7?q?+2D0-?=\r\nContent-Type: text/plain; charset=unicode-escape"
        b"\r\n\r\n" + b"word\\x00 " * 2000
    )
    rows.append(
        {
            "check": "storable_classification, NULs and a surrogate",
            "ms": round(best_of(20, lambda: storable_classification(hostile)), 3),
            "result": "cleaned",
        }
    )
    body = Body()
    for chunk in unsigned_mailgun(30 * MIB):
        body.write(chunk)
    keep = {"timestamp", "token", "signature"}.__contains__
    tracemalloc.start()
    started = time.perf_counter()
    form = parse_form("multipart/form-data; boundary=mg", body.chunks(), keep=keep, max_kept=1000)
    elapsed = (time.perf_counter() - started) * 1000
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    body.close()
    rows.append(
        {
            "check": "signature-only pass, 30 MB unsigned Mailgun body",
            "ms": round(elapsed, 1),
            "result": f"{sorted(form.parts)}; {peak / MIB:.1f} MiB held at peak (tracemalloc)",
        }
    )
    table = Table(title="inbound limits: cost of the checks before work")
    for column in ("check", "ms", "result"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[c]) for c in ("check", "ms", "result")))
    Console().print(table)
    print("written", write_result("inbound_limits", {"rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
