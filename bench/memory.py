"""Resident memory (RSS) of replyguard's long-running processes.

Quick mode (the default): peak RSS of a `replyguard worker --once` sending N due steps (null
transport, PostgreSQL), and of `replyguard ingest` reading a generated mbox of N messages
(SQLite), each at two sizes so growth with N shows.

    python bench/memory.py [--steps 1000,10000] [--messages 2000,20000]

Long mode (issue 25): the process is sampled while it works — VmRSS from /proc/<pid>/status
every second, the peak (VmHWM, read every 0.1 s up to its exit) — and RSS is reported at 10%,
25%, 50%, 75% and 100% of what it did, with the slope (least squares over the samples past
the first 10%, MiB per 10k units of work).

    python bench/memory.py --long worker,ingest,up [--leads 100000] [--total-steps 1000000]
        [--ingest-messages 100000] [--minutes 15] [--up-minutes 10]

* worker: `replyguard worker --quiet` (the daemon loop, null transport) on PostgreSQL over a
  workspace of --leads leads and --total-steps steps built by SQL copies
  (`bench/web_pages.build(due=True)`): every lead's first step due, the rest scheduled days
  ahead. Stopped (SIGTERM) once every due step is sent or after --minutes.
* ingest: `replyguard ingest FILE.mbox` on SQLite, a generated mbox of --ingest-messages
  messages (`bench.messages.mix`) to the 2,000 leads of a services-built workspace. Stopped
  after --minutes if it has not finished.
* up: `replyguard up` on SQLite (a --up-leads workspace, first steps due, null transport,
  one IMAP poller on a private Dovecot) for --up-minutes while the worker sends, a feeder
  APPENDs replies to the poller's folder and a signed-in client GETs the main pages in a loop.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import START, scratch_db, workspace, write_result
from bench.messages import mix
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

CLI = "from replyguard.entrypoints.cli.app import main; main()"
# Runs the command as a child and prints the child's peak RSS in KiB (Linux ru_maxrss).
PEAK = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True);"
    "sys.stderr.write(r.stderr.decode()[-2000:] if r.returncode else '');"
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
MARKS = (0.10, 0.25, 0.50, 0.75, 1.00)


def peak_rss_mib(args: list[str], env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, sys.executable, "-c", CLI, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    code, kib = done.stdout.split()
    if code != "0":
        raise RuntimeError(f"{args} failed: {done.stderr}")
    return round(int(kib) / 1024, 1)


def worker_rss(steps: int) -> dict[str, object]:
    with scratch_db("postgresql", "mem") as url:
        app = workspace(url, steps)
        app.close()
        mib = peak_rss_mib(
            ["--db", url, "--now", START.isoformat(), "worker", "--once"], {"REPLYGUARD_TRANSPORT": "null:"}
        )
        check = app.engine
        with check.connect() as conn:
            sent = conn.execute(text("SELECT count(*) FROM steps WHERE state = 'sent'")).scalar_one()
        check.dispose()
    return {"what": "worker --once", "n": steps, "done": sent, "peak_rss_mib": mib}


def write_mbox(path: Path, targets: list[tuple[str, str | None]], messages: int) -> None:
    with path.open("wb") as out:
        for raw in mix(targets, messages):
            body = raw.replace(b"\r\n", b"\n").replace(b"\nFrom ", b"\n>From ")
            out.write(b"From MAILER-DAEMON Mon Dec  7 10:00:00 2026\n" + body + b"\n")


def first_steps(url: str) -> list[tuple[str, str | None]]:
    """(address, Message-ID) of every lead's first step: what the generated replies answer."""
    from sqlalchemy import create_engine

    from replyguard.adapters.db.engine import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT to_address, message_id FROM steps WHERE position = 1 ORDER BY id"))
        found = [(r.to_address, r.message_id) for r in rows]
    engine.dispose()
    return found


def ingest_rss(messages: int) -> dict[str, object]:
    with scratch_db("sqlite", "mem") as url, tempfile.TemporaryDirectory() as tmp:
        workspace(url, 2000).close()
        mbox = Path(tmp) / "inbound.mbox"
        write_mbox(mbox, first_steps(url), messages)
        size = mbox.stat().st_size
        mib = peak_rss_mib(["--db", url, "--now", START.isoformat(), "ingest", str(mbox)], {})
    return {"what": "ingest (mbox)", "n": messages, "mbox_mib": round(size / 2**20, 1), "peak_rss_mib": mib}


# --- long mode: a process sampled while it works -------------------------------------------


def proc_status_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a live process, in KiB ({} once it is gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    found = {}
    for line in lines:
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            found[key] = int(value.split()[0])
    return found


def counter(url: str, sql: str) -> Callable[[], int]:
    """A read of one number from the database under measurement (SQLite read-only, so that the
    sampler never takes the write lock); the last good value when a read fails. The callers
    read max(id) of a table that starts empty, not count(*): one index probe a second instead
    of a scan of a growing table (the rows are never deleted during a run)."""
    last = [0]
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1]
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2, check_same_thread=False)

        def read() -> Any:
            return conn.execute(sql).fetchone()[0]

    else:
        from sqlalchemy import create_engine

        from replyguard.adapters.db.engine import normalize_url

        engine = create_engine(normalize_url(url), pool_size=1)

        def read() -> Any:
            with engine.connect() as c:
                return c.execute(text(sql)).scalar_one()

    def count() -> int:
        with contextlib.suppress(Exception):
            last[0] = int(read())
        return last[0]

    return count


def watch(
    args: list[str],
    env: dict[str, str],
    progress: Callable[[], dict[str, int]],
    *,
    label: str,
    main: str | None,
    seconds: float,
    target: int | None = None,
    console: Console,
    every: float = 1.0,
    log: Path | None = None,
) -> dict[str, Any]:
    """Run `replyguard ARGS` and sample it every `every` s until it exits; SIGTERM once
    `progress()[main]` reaches `target` or after `seconds`. Returns the samples and the peak.

    The peak is the last VmHWM read (every 0.1 s), not the child's ru_maxrss: the kernel counts
    in a child's ru_maxrss the memory of the process it was forked from up to its exec — this
    bench, a few hundred MiB after building a workspace (the quick mode runs the command under
    a small wrapper for that reason)."""
    stderr = (log or Path(os.devnull)).open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    t0 = time.monotonic()
    samples: list[dict[str, Any]] = []
    stopped, stopped_at = False, None
    printed = 0.0
    sampled = -every
    hwm = 0
    while proc.poll() is None:
        elapsed = time.monotonic() - t0
        vm = proc_status_kib(proc.pid)
        hwm = max(hwm, vm.get("VmHWM", 0))
        if elapsed - sampled >= every:
            sampled = elapsed
            counts = progress()
            if vm:
                rss = {
                    "t": round(elapsed, 1),
                    "rss_mib": round(vm["VmRSS"] / 1024, 1),
                    "hwm_mib": round(hwm / 1024, 1),
                }
                samples.append(rss | counts)
            done = counts.get(main, 0) if main else 0
            if not stopped and (elapsed > seconds or (target is not None and done >= target)):
                proc.send_signal(signal.SIGTERM)
                stopped, stopped_at = True, elapsed
            if elapsed - printed >= 30 and samples:
                printed = elapsed
                last = samples[-1]
                what = ", ".join(f"{k} {v:,}" for k, v in counts.items())
                console.print(
                    f"  {label} {elapsed:5.0f} s: RSS {last['rss_mib']} MiB (peak {last['hwm_mib']}), {what}"
                )
        time.sleep(0.1)
    stderr.close()
    return {
        "label": label,
        "returncode": proc.returncode,
        "stopped_by_bench": stopped,
        "stopped_at_s": stopped_at,
        "seconds": round(time.monotonic() - t0, 1),
        "peak_rss_mib": round(hwm / 1024, 1),
        "final": progress(),
        "samples": samples,
    }


def summarize(run: dict[str, Any], main: str | None) -> dict[str, Any]:
    """RSS at 10/25/50/75/100% of the work (`main` counter, or the run time when None), and
    the slope past the first 10% (least squares), per 10k units (per minute for time)."""
    # Up to the stop: what a process frees while it shuts down is not what it held working.
    until = run.get("stopped_at_s") or float("inf")
    samples = [s for s in run["samples"] if s.get("rss_mib") and s["t"] <= until]
    axis = (lambda s: float(s[main])) if main else (lambda s: float(s["t"]))
    end = max((axis(s) for s in samples), default=0.0)
    marks = []
    for f in MARKS:
        hit = next((s for s in samples if axis(s) >= f * end), samples[-1] if samples else None)
        if hit is not None:
            marks.append({"at": f, "x": axis(hit), "t": hit["t"], "rss_mib": hit["rss_mib"]})
    tail = [s for s in samples if axis(s) >= 0.1 * end]
    slope = None
    if len(tail) >= 2:
        xs, ys = [axis(s) for s in tail], [s["rss_mib"] for s in tail]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        var = sum((x - mx) ** 2 for x in xs)
        if var:
            per = 10_000 if main else 60.0
            slope = round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var * per, 3)
    return {
        "marks": marks,
        "slope_mib_per": slope,
        "slope_unit": f"10k {main}" if main else "minute",
        "end": end,
        "start_rss_mib": samples[0]["rss_mib"] if samples else None,
        "peak_rss_mib": run["peak_rss_mib"],
    }


def long_worker(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    from bench.web_pages import build

    with scratch_db("postgresql", "memlong") as url:
        t0 = time.perf_counter()
        app = build(url, args.leads, args.total_steps, console, due=True, due_spread_s=args.due_spread)
        with app.engine.connect() as conn:
            due = conn.execute(
                text("SELECT count(*) FROM steps WHERE state = 'scheduled' AND due_at <= :now"),
                {"now": START},
            ).scalar_one()
            steps = conn.execute(text("SELECT count(*) FROM steps")).scalar_one()
        app.close()
        built = round(time.perf_counter() - t0)
        console.print(f"worker: {steps:,} steps, {due:,} due (built in {built} s); sending")
        sent = counter(url, "SELECT coalesce(max(id), 0) FROM outbound_messages")
        run = watch(
            ["--db", url, "--now", START.isoformat(), "worker", "--quiet"],
            {"REPLYGUARD_TRANSPORT": "null:"},
            lambda: {"sent": sent()},
            label="worker",
            main="sent",
            seconds=args.minutes * 60,
            target=due,
            console=console,
        )
    run |= {"steps": steps, "due": due, "due_spread_s": args.due_spread, "build_s": built, "db": "postgresql"}
    return run | {"summary": summarize(run, "sent")}


def long_ingest(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    with scratch_db("sqlite", "memlong") as url, tempfile.TemporaryDirectory() as tmp:
        workspace(url, 2000).close()
        mbox = Path(tmp) / "inbound.mbox"
        write_mbox(mbox, first_steps(url), args.ingest_messages)
        size = round(mbox.stat().st_size / 2**20, 1)
        console.print(f"ingest: mbox of {args.ingest_messages:,} messages, {size} MiB")
        stored = counter(url, "SELECT coalesce(max(id), 0) FROM inbound_messages")
        run = watch(
            ["--db", url, "--now", START.isoformat(), "ingest", str(mbox)],
            {},
            lambda: {"messages": stored()},
            label="ingest",
            main="messages",
            seconds=args.minutes * 60,
            console=console,
        )
    run |= {"messages": args.ingest_messages, "mbox_mib": size, "db": "sqlite"}
    return run | {"summary": summarize(run, "messages")}


class PageLoop:
    """A signed-in browser's worth of GETs of the main pages, in a loop, from a thread."""

    def __init__(self, base: str, paths: list[str]) -> None:
        self.base, self.paths = base, paths
        self.requests = 0
        self.errors = 0
        self.why: collections.Counter[str] = collections.Counter()  # "path status" or the exception
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import httpx
        from bench.web_pages import signed_in

        while not self.stop.is_set():
            try:
                with httpx.Client(base_url=self.base, timeout=60) as client:
                    signed_in(client)
                    while not self.stop.is_set():
                        for path in self.paths:
                            response = client.get(path)
                            self.requests += 1
                            if response.status_code != 200:
                                self.errors += 1
                                self.why[f"{path} {response.status_code}"] += 1
            except Exception as exc:
                self.errors += 1
                self.why[type(exc).__name__] += 1
                self.stop.wait(1)


@contextlib.contextmanager
def replies_fed(imap: Any, targets: list[tuple[str, str | None]], per_second: float) -> Iterator[list[int]]:
    """APPENDs generated replies to the poller's folder at `per_second` from a thread."""
    fed = [0]
    stop = threading.Event()

    def run() -> None:
        client = imap.client()
        try:
            for raw in mix(targets, 10_000_000, seed=2):
                if stop.is_set():
                    return
                client.append("INBOX", raw)
                fed[0] += 1
                stop.wait(1 / per_second)
        finally:
            with contextlib.suppress(Exception):
                client.logout()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield fed
    finally:
        stop.set()
        thread.join(10)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def long_up(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    from bench.web_pages import build
    from tests.support.imap_server import DovecotServer, dovecot_or_skip

    with (
        scratch_db("sqlite", "memup") as url,
        DovecotServer(dovecot_or_skip()) as imap,
        tempfile.TemporaryDirectory() as tmp,
    ):
        app = build(url, args.up_leads, args.up_leads * 10, console, due=True, due_spread_s=args.due_spread)
        with app.engine.connect() as conn:
            campaign = conn.execute(text("SELECT id FROM campaigns")).scalar_one()
            lead = conn.execute(text("SELECT max(id) FROM leads")).scalar_one()
        app.close()
        targets = first_steps(url)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        paths = [
            "/inbox",
            "/inbox?state=all",
            f"/campaigns/{campaign}",
            f"/campaigns/{campaign}?state=sent",
            "/campaigns",
            "/leads",
            f"/leads/{lead}",
            "/inbound",
            "/reports",
            "/metrics",
        ]
        pages = PageLoop(base, paths)
        sent = counter(url, "SELECT coalesce(max(id), 0) FROM outbound_messages")
        stored = counter(url, "SELECT coalesce(max(id), 0) FROM inbound_messages")
        log = Path(tmp) / "up.log"
        with replies_fed(imap, targets, args.up_replies_per_s) as fed:

            def progress() -> dict[str, int]:
                if not pages.thread.is_alive() and _answers(base):
                    pages.thread.start()
                return {
                    "sent": sent(),
                    "ingested": stored(),
                    "appended": fed[0],
                    "page_requests": pages.requests,
                    "page_errors": pages.errors,
                }

            run = watch(
                [
                    "--db",
                    url,
                    "--now",
                    START.isoformat(),
                    "up",
                    "--port",
                    str(port),
                    "--imap",
                    imap.url,
                    "--allow-localhost-unsubscribe",
                ],
                {"REPLYGUARD_TRANSPORT": "null:", "REPLYGUARD_PUBLIC_URL": base},
                progress,
                label="up",
                main=None,
                seconds=args.up_minutes * 60,
                console=console,
                log=log,
            )
            pages.stop.set()
        tail = log.read_text(errors="replace").splitlines()[-20:]
    run |= {"leads": args.up_leads, "db": "sqlite", "log_tail": tail, "page_errors_by_kind": dict(pages.why)}
    return run | {"summary": summarize(run, None)}


def _answers(base: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


def long_table(runs: dict[str, dict[str, Any]]) -> Table:
    table = Table(title="RSS while working (MiB): at 10/25/50/75/100% of the work")
    for col in ("process", "work", *(f"{int(f * 100)}%" for f in MARKS), "peak", "slope"):
        table.add_column(col, justify="left" if col in ("process", "work") else "right")
    for name, run in runs.items():
        s = run["summary"]
        work = ", ".join(f"{k} {v:,}" for k, v in run["final"].items()) + f" in {run['seconds']:.0f} s"
        marks = [f"{m['rss_mib']}" for m in s["marks"]]
        slope = f"{s['slope_mib_per']} / {s['slope_unit']}"
        table.add_row(name, work, *marks, f"{s['peak_rss_mib']}", slope)
    return table


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", default="1000,10000")
    parser.add_argument("--messages", default="2000,20000")
    parser.add_argument("--long", default="", help="worker,ingest,up: the long runs (issue 25) instead")
    parser.add_argument("--leads", type=int, default=100_000)
    parser.add_argument("--total-steps", type=int, default=1_000_000)
    parser.add_argument("--ingest-messages", type=int, default=100_000)
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--tag", default="", help="appended to the result file's name")
    parser.add_argument(
        "--due-spread",
        type=int,
        default=86_400,
        help="first steps due over this many seconds before the start (0: all at one instant)",
    )
    parser.add_argument("--up-minutes", type=float, default=10)
    parser.add_argument("--up-leads", type=int, default=20_000)
    parser.add_argument("--up-replies-per-s", type=float, default=4)
    args = parser.parse_args()
    console = Console()
    if args.long:
        runs: dict[str, dict[str, Any]] = {}
        for name in args.long.split(","):
            runs[name] = {"worker": long_worker, "ingest": long_ingest, "up": long_up}[name](args, console)
            console.print(long_table({name: runs[name]}))
            path = write_result(f"memory_long_{name}{args.tag}", {"run": runs[name]})
            console.print(f"written {path}")
        if len(runs) > 1:
            console.print(long_table(runs))
        return 0
    rows = [worker_rss(int(n)) for n in args.steps.split(",")]
    rows += [ingest_rss(int(n)) for n in args.messages.split(",")]
    table = Table(title="peak RSS (MiB)")
    for col in ("process", "N", "peak RSS MiB", "note"):
        table.add_column(col)
    for row in rows:
        note = f"mbox {row['mbox_mib']} MiB" if "mbox_mib" in row else f"{row['done']} sent"
        table.add_row(str(row["what"]), f"{row['n']:,}", f"{row['peak_rss_mib']}", note)
    console.print(table)
    console.print(f"written {write_result('memory', {'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
