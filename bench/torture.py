"""The fault campaign: real worker processes, a real SMTP server, racing replies, and faults
at every named point of the send path. Afterwards a checker counts every broken promise.

    python bench/torture.py --profile long --seed 1 --report bench/results/torture-long.json

What runs (all against a fresh scratch PostgreSQL database, dropped afterwards):

* `--workers` long-running `replyguard worker` processes with a running simulated clock
  (`--now`), a lease of `--lease` seconds, a transport timeout of 2 s, retries after 2 s,
  several send slots each, sending for several mailboxes (one campaign each) over pooled SMTP
  connections (RSET between messages, a fresh connection after any error);
* an aiosmtpd server on loopback (the oracle, tests/support/smtp_servers.py) with a seeded
  schedule of 4xx/5xx answers, drops mid-DATA, accept-then-hang and hang-on-QUIT; it logs
  every message it accepted with the time its DATA command arrived;
* reply injectors that record human replies (the real `record_reply`) for leads whose step
  is due or in flight right now, noting the time just before and after each COMMIT;
* faults: each worker process is spawned with one failpoint armed (`kill` or `stop`) at a
  random named point; the harness also SIGKILLs random workers, SIGSTOPs them for longer
  than the lease then SIGCONTs them (a stale owner wakes up), and terminates their
  database sessions with `pg_terminate_backend`. Killed or crashed workers are respawned.

Then the faults stop, a clean SMTP server answers everything, and `worker --once` passes run
with the clock moved beyond the lease until nothing is recovered any more. The checker
(bench/torture_check.py) reads the oracle's log, the reply log and the database.

Seeds make every random choice reproducible (`--seed`); the interleaving of processes is up to
the operating system, so a rerun replays the same fault plan, not the same history.
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the project imports

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil
from bench.torture_check import Verdict, check
from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer, read_log, seeded_schedule

from replyguard.adapters.db.engine import make_engine, normalize_url
from replyguard.adapters.db.migrate import upgrade
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock, ensure_aware
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.settings import Settings

DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
CLI = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]
#: The same command line with failpoints armed (and, with --broken-guard, the send guard
#: broken): test-only wiring that the product does not have (tests/support/fault_worker.py).
FAULT_CLI = [sys.executable, str(ROOT / "tests" / "support" / "fault_worker.py")]
START = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)  # a Monday; the campaign sends all day anyway
#: The workers send by SMTP, which they refuse with unsubscribe links to localhost.
PUBLIC_URL = "https://replyguard.torture.test"
HARNESS_APP = "rg-torture"  # our own sessions, which pg_terminate_backend must spare

#: The send path's failpoints; claim-level points are hit once per batch, so armed more often.
POINTS = {
    "before_claim_commit": 0.12,
    "after_claim": 0.12,
    "after_recheck": 0.04,
    "after_marker": 0.04,
    "before_data": 0.04,
    "after_transport": 0.04,
    "before_record_commit": 0.04,
}

SMTP_WEIGHTS = {
    Behaviour.ACCEPT: 0.86,
    Behaviour.TEMPFAIL_RCPT: 0.02,
    Behaviour.REJECT_RCPT: 0.01,
    Behaviour.TEMPFAIL_DATA: 0.02,
    Behaviour.TEMPFAIL_END: 0.02,
    Behaviour.REJECT_END: 0.01,
    Behaviour.DROP_MID_DATA: 0.02,
    Behaviour.HANG_AFTER_ACCEPT: 0.015,
    Behaviour.DROP_AFTER_ACCEPT: 0.015,
    Behaviour.HANG_ON_QUIT: 0.01,
}


@dataclass(frozen=True)
class Profile:
    leads: int
    workers: int
    duration: float  # seconds of faults and replies
    reply_rate: float  # replies per second, over all injectors
    sigkill_every: float  # mean seconds between harness SIGKILLs
    sigstop_every: float  # mean seconds between harness SIGSTOPs
    terminate_every: float  # mean seconds between pg_terminate_backend calls
    lease: float = 6.0  # seconds; above the 2 s transport timeout + 1 s QUIT
    failpoint_share: float = 0.85  # share of spawned workers with one failpoint armed
    #: Seconds before the server answers MAIL, RCPT and DATA: a remote MTA's latency. It is
    #: also the window a broken guard leaves open between its marker and DATA.
    smtp_command_delay: float = 0.02
    #: A slow server on some sends: "SECONDS@SHARE" sleeps before DATA (the guard holds the
    #: lead lock through it); it also widens the window a broken guard leaves open.
    stall_before_data: str = "0.3@0.25"
    #: Run `bench/broken_guard_worker.py` instead of the real worker: the checker must fail.
    broken_guard: bool = False
    #: Mailboxes (one campaign each, the leads dealt among them): their emails share the
    #: workers' pooled SMTP connections (RSET between messages, a fresh one after any error).
    mailboxes: int = 3
    #: Send slots per worker process (REPLYGUARD_SEND_SLOTS): a crash holds one lead per slot.
    send_slots: int = 3
    #: Keep the replies and faults going past `duration` (up to five times as long) until this
    #: many replies found a step in flight: a loaded machine starts its workers late and sends
    #: less in the same seconds, and a run about the race must have raced. 0: stop on time.
    until_in_flight: int = 0


PROFILES = {
    "short": Profile(
        leads=200,
        workers=3,
        duration=25,
        reply_rate=6,
        sigkill_every=5,
        sigstop_every=8,
        terminate_every=2,
    ),
    "long": Profile(
        leads=3000,
        workers=4,
        duration=420,
        reply_rate=4,
        sigkill_every=3,
        sigstop_every=6,
        terminate_every=1.5,
    ),
}


class SimClock:
    """The harness's simulated time: START plus the wall time since the run began."""

    def __init__(self, start: datetime) -> None:
        self.start = ensure_aware(start)
        self.t0 = time.monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.t0)


@dataclass
class Slot:
    index: int
    proc: subprocess.Popen[bytes] | None = None
    failpoint: str | None = None  # "name=action" armed in the current process
    harness_killed: bool = False
    stopped_until: float | None = None  # SIGCONT due (monotonic)
    stop_source: str = ""


@dataclass
class Tally:
    faults: Counter[str] = field(default_factory=Counter)
    exits: Counter[str] = field(default_factory=Counter)
    spawned: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.faults[key] += n


# ---------------------------------------------------------------------------- setup
def scratch_database(admin_url: str, name: str) -> str:
    admin = create_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(normalize_url(admin_url)).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    admin = create_engine(normalize_url(admin_url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def harness_engine(url: str, pool: int = 8) -> Engine:
    return create_engine(
        url,
        pool_size=pool,
        max_overflow=pool,
        pool_pre_ping=True,
        connect_args={"application_name": HARNESS_APP},
    )


CAMPAIGN = """
product = "Torture{n}"
[campaign]
name = "Torture{n}"
mailbox = "rep{n}@seller.test"
from_name = "Rep"
owner = "rep{n}@seller.test"
timezone = "UTC"
send_window = { days = ["mon","tue","wed","thu","fri","sat","sun"], start = "00:00", end = "23:59" }
daily_cap = 1000000
[[campaign.steps]]
wait = "0d"
subject = "Hello {{ first_name }}"
body = "Hi {{ first_name }}, first."
[[campaign.steps]]
wait = "0d"
body = "Second."
[[campaign.steps]]
wait = "0d"
body = "Third."
"""


def populate(url: str, leads: int, duration: float, rng: random.Random, mailboxes: int = 1) -> int:
    """Campaigns (one per mailbox, the leads dealt round-robin), leads and enrollments through
    the real services, then due times spread over the run (steps of one lead in order) with
    one SQL update."""
    engine = make_engine(url)
    upgrade(engine)
    app = App(engine=engine, clock=FixedClock(START), settings=Settings())
    app.init_database()
    header = "email,first_name,last_name,company,title,timezone,alt_emails,owner\n"
    for n in range(mailboxes):
        mine = range(n, leads, mailboxes)
        csv = header + "".join(f"lead{i}@example{i % 97}.test,L{i},,,,,,\n" for i in mine)
        with app.uow() as uow:
            create_campaign(uow, CAMPAIGN.replace("{n}", str(n)))
            import_leads(uow, f"Torture{n}", list(read_leads(csv.encode())))
            uow.commit()
        with app.uow() as uow:
            report = EnrollReport()
            enroll_leads(uow, f"Torture{n}", candidate_lead_ids(uow, f"Torture{n}", None), report)
            uow.commit()
    with engine.begin() as conn:
        rows = conn.execute(text("SELECT id, lead_id, position FROM steps ORDER BY lead_id, position")).all()
        first: dict[int, float] = {}
        updates = []
        for row in rows:
            if row.position == 1:
                at = rng.uniform(0, 0.55) * duration
            else:
                at = min(first[row.lead_id] + rng.uniform(0.05, 0.25) * duration, 0.95 * duration)
            first[row.lead_id] = at
            updates.append({"sid": row.id, "due": START + timedelta(seconds=at)})
        conn.execute(text("UPDATE steps SET due_at = :due WHERE id = :sid"), updates)
    engine.dispose()
    return len(rows)


# ---------------------------------------------------------------------------- workers
class Workers:
    def __init__(
        self,
        url: str,
        smtp_url: str,
        profile: Profile,
        clock: SimClock,
        rng: random.Random,
        tally: Tally,
        logdir: Path,
    ) -> None:
        self.url, self.smtp_url, self.profile, self.clock = url, smtp_url, profile, clock
        self.rng, self.tally, self.logdir = rng, tally, logdir
        self.slots = [Slot(i) for i in range(profile.workers)]
        self.lock = threading.Lock()
        self.running = True

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "REPLYGUARD_TRANSPORT": self.smtp_url,
            "REPLYGUARD_PUBLIC_URL": PUBLIC_URL,
            "REPLYGUARD_LEASE_SECONDS": str(self.profile.lease),
            "REPLYGUARD_RETRY_BASE_SECONDS": "2",
            "REPLYGUARD_SEND_SLOTS": str(self.profile.send_slots),
        }

    def fault_worker(self, failpoint: str | None, seed: int) -> list[str]:
        """The fault worker's own options: the armed failpoints, their seed, the broken guard."""
        armed = [failpoint] if failpoint else []
        if self.profile.stall_before_data and not (failpoint or "").startswith("before_data="):
            armed.append(f"before_data=sleep:{self.profile.stall_before_data}")
        broken = ["--broken-guard"] if self.profile.broken_guard else []
        return [*FAULT_CLI, "--failpoints", ",".join(armed), "--seed", str(seed), *broken, "--"]

    def spawn(self, slot: Slot) -> None:
        failpoint = None
        if self.rng.random() < self.profile.failpoint_share:
            name = self.rng.choice(sorted(POINTS))
            action = "kill" if self.rng.random() < 0.8 else "stop"
            failpoint = f"{name}={action}@{POINTS[name]}"
        seed = self.rng.randrange(1 << 30)
        with (self.logdir / f"worker{slot.index}.log").open("ab") as errlog:
            slot.proc = subprocess.Popen(
                [
                    *self.fault_worker(failpoint, seed),
                    "--db",
                    self.url,
                    "--now",
                    self.clock.now().isoformat(),
                    "worker",
                ],
                env=self.env(),
                stdout=subprocess.DEVNULL,
                stderr=errlog,
            )
        slot.failpoint, slot.harness_killed, slot.stopped_until = failpoint, False, None
        self.tally.spawned += 1

    def start(self) -> None:
        for slot in self.slots:
            self.spawn(slot)

    def tick(self) -> None:
        """Notice exits (classify, respawn) and self-stopped workers (SIGCONT after the hold)."""
        now = time.monotonic()
        with self.lock:
            for slot in self.slots:
                proc = slot.proc
                assert proc is not None
                code = proc.poll()
                if code is not None:
                    self._classify_exit(slot, code)
                    if self.running:
                        self.spawn(slot)
                    continue
                if slot.stopped_until is None and slot.failpoint and "=stop@" in slot.failpoint:
                    try:
                        stopped = psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED
                    except psutil.NoSuchProcess:
                        stopped = False
                    if stopped:
                        point = slot.failpoint.split("=", 1)[0]
                        self.tally.add(f"failpoint SIGSTOP at {point} (held past the lease)")
                        slot.stopped_until = now + self.profile.lease + self.rng.uniform(0.5, 3)
                        slot.stop_source = "failpoint"
                if slot.stopped_until is not None and now >= slot.stopped_until:
                    proc.send_signal(signal.SIGCONT)
                    slot.stopped_until = None  # the stale owner wakes up and carries on

    def _classify_exit(self, slot: Slot, code: int) -> None:
        if code == -signal.SIGKILL and slot.harness_killed:
            self.tally.exits["killed by the harness"] += 1
        elif code == -signal.SIGKILL and slot.failpoint:
            point = slot.failpoint.split("=", 1)[0]
            self.tally.add(f"SIGKILL at failpoint {point}")
            self.tally.exits["killed at a failpoint"] += 1
        elif code in (0, -signal.SIGTERM):
            self.tally.exits["exited on SIGTERM"] += 1
        else:
            self.tally.exits[f"crashed (exit {code}, e.g. its database session was terminated)"] += 1

    def sigkill_random(self) -> None:
        with self.lock:
            live = [s for s in self.slots if s.proc and s.proc.poll() is None and not s.harness_killed]
            if not live:
                return
            slot = self.rng.choice(live)
            assert slot.proc is not None
            slot.harness_killed = True
            slot.proc.send_signal(signal.SIGKILL)
            self.tally.add("SIGKILL by the harness (anywhere)")

    def sigstop_random(self) -> None:
        with self.lock:
            live = [
                s
                for s in self.slots
                if s.proc and s.proc.poll() is None and s.stopped_until is None and not s.harness_killed
            ]
            if not live:
                return
            slot = self.rng.choice(live)
            assert slot.proc is not None
            slot.proc.send_signal(signal.SIGSTOP)
            slot.stopped_until = time.monotonic() + self.profile.lease + self.rng.uniform(0.5, 3)
            slot.stop_source = "harness"
            self.tally.add("SIGSTOP by the harness past the lease, then SIGCONT")

    def stop_all(self) -> None:
        with self.lock:
            self.running = False
            for slot in self.slots:
                if slot.proc and slot.proc.poll() is None:
                    slot.proc.send_signal(signal.SIGCONT)
                    slot.proc.send_signal(signal.SIGTERM)
        # A worker stops within seconds of SIGTERM, but one whose email hangs on a faulty
        # server has 5 s before that email is cut: after a shorter grace it is killed, one
        # more kill the final recovery must clean up after.
        deadline = time.monotonic() + 3
        for slot in self.slots:
            assert slot.proc is not None
            try:
                slot.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                slot.proc.kill()
                slot.proc.wait()
                self.tally.add("SIGKILL at the end of the fault phase (SIGTERM not heeded in 3 s)")
                slot.harness_killed = True
            self._classify_exit(slot, slot.proc.returncode)


# ---------------------------------------------------------------------------- replies and faults
def inject_replies(
    engine: Engine,
    clock: SimClock,
    rate: float,
    rng: random.Random,
    stop: threading.Event,
    *,
    replied: set[int],
    log: list[dict[str, Any]],
    guard: threading.Lock,
) -> None:
    """Reply to leads whose step is in flight or due right now; note the time just before and
    just after each COMMIT."""
    app = App(engine=engine, clock=clock, settings=Settings())
    while not stop.wait(rng.expovariate(rate)):
        now = clock.now()
        try:
            with engine.connect() as conn:
                if rng.random() < 0.6:
                    # In flight first: the race that matters is a reply during a send.
                    sql = "SELECT lead_id, state FROM steps WHERE state IN ('claimed', 'sending')"
                    busy = conn.execute(text(sql)).all()
                    sending = [r.lead_id for r in busy if r.state == "sending"]
                    candidates = sending or [r.lead_id for r in busy]
                else:
                    sql = "SELECT lead_id FROM steps WHERE state = 'scheduled' AND due_at BETWEEN :a AND :b"
                    window = {"a": now - timedelta(seconds=2), "b": now + timedelta(seconds=1)}
                    candidates = conn.execute(text(sql), window).scalars().all()
        except DBAPIError:
            continue
        with guard:
            fresh = sorted(set(candidates) - replied)
            if not fresh:
                continue
            lead_id = rng.choice(fresh)
            replied.add(lead_id)
        entry: dict[str, Any] = {"lead_id": lead_id, "committed": False, "before_commit": None}
        try:
            with app.uow() as uow:
                outcome = record_reply(
                    uow,
                    lead_id,
                    IncomingReply(kind=ReplyKind.HUMAN_REPLY, received_at=clock.now(), text="Interested."),
                    app.settings,
                )
                entry |= {"reply_id": outcome.reply_id, "in_flight": outcome.in_flight}
                entry["before_commit"] = time.time()  # a lower bound of the commit time
                uow.commit()
                entry["after_commit"] = time.time()
                entry["committed"] = True
        except DBAPIError as exc:
            entry["error"] = exc.__class__.__name__
        with guard:
            log.append(entry)


def terminate_sessions(engine: Engine, dbname: str, rng: random.Random, tally: Tally) -> None:
    with engine.connect() as conn:
        pids = (
            conn.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'replyguard'"
                    " AND datname = :db AND pid <> pg_backend_pid()"
                ),
                {"db": dbname},
            )
            .scalars()
            .all()
        )
        if not pids:
            return
        pid = rng.choice(pids)
        killed = conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
        conn.commit()
    if killed:
        tally.add("pg_terminate_backend of a worker session")


def chaos(
    workers: Workers,
    admin: Engine,
    dbname: str,
    profile: Profile,
    rng: random.Random,
    stop: threading.Event,
    tally: Tally,
) -> None:
    next_at = {
        "kill": rng.expovariate(1 / profile.sigkill_every),
        "stop": rng.expovariate(1 / profile.sigstop_every),
        "term": rng.expovariate(1 / profile.terminate_every),
    }
    t0 = time.monotonic()
    while not stop.wait(0.05):
        workers.tick()
        elapsed = time.monotonic() - t0
        if elapsed >= next_at["kill"]:
            workers.sigkill_random()
            next_at["kill"] += rng.expovariate(1 / profile.sigkill_every)
        if elapsed >= next_at["stop"]:
            workers.sigstop_random()
            next_at["stop"] += rng.expovariate(1 / profile.sigstop_every)
        if elapsed >= next_at["term"]:
            with contextlib.suppress(DBAPIError):
                terminate_sessions(admin, dbname, rng, tally)
            next_at["term"] += rng.expovariate(1 / profile.terminate_every)


# ---------------------------------------------------------------------------- the run
def final_recovery(
    url: str, smtp_url: str, clock: SimClock, lease: float, workers: int
) -> tuple[datetime, list[dict[str, Any]]]:
    """`worker --once` processes with the clock beyond every lease, no faults, a server that
    accepts everything, until a pass finds nothing to claim or recover."""
    at = clock.now() + timedelta(seconds=lease + 60)
    passes: list[dict[str, Any]] = []
    env = {
        **os.environ,
        "REPLYGUARD_TRANSPORT": smtp_url,
        "REPLYGUARD_PUBLIC_URL": PUBLIC_URL,
        "REPLYGUARD_LEASE_SECONDS": str(lease),
    }
    command = [*CLI, "--db", url, "--now", at.isoformat(), "worker", "--once", "--json"]
    for _ in range(10):
        procs = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(workers)
        ]
        outputs = [proc.communicate(timeout=900) for proc in procs]
        for proc, (_out, err) in zip(procs, outputs, strict=True):
            if proc.returncode != 0:
                raise RuntimeError(f"the clean recovery pass failed: {err[-2000:]}")
        reports = [json.loads(out) for out, _err in outputs]
        report = {k: sum(r[k] for r in reports) for k in reports[0]}
        passes.append(report)
        if report["recovered"] == 0 and report["claimed"] == 0:
            break
    return at, passes


def run(
    profile: Profile,
    seed: int,
    admin_url: str = DEFAULT_DB,
    keep: bool = False,
    console: Console | None = None,
) -> dict[str, Any]:
    console = console or Console(stderr=True)
    rng = random.Random(seed)
    dbname = f"rg_torture_{seed}_{os.getpid()}"
    url = scratch_database(admin_url, dbname)
    tally = Tally()
    phases: dict[str, float] = {}
    started = time.monotonic()
    logging.getLogger("mail.log").setLevel(logging.CRITICAL)  # aiosmtpd's chatter about faults
    try:
        steps = populate(
            url, profile.leads, profile.duration, random.Random(f"{seed}:due"), profile.mailboxes
        )
        console.print(f"[bold]torture[/] seed {seed}: {profile.leads} leads, {steps} steps, db {dbname}")
        engine = harness_engine(url)
        admin = create_engine(normalize_url(admin_url), connect_args={"application_name": HARNESS_APP})
        logdir = Path(tempfile.mkdtemp(prefix="rg-torture-"))
        smtp_log = logdir / "smtp.jsonl"
        replies: list[dict[str, Any]] = []
        replied: set[int] = set()
        guard = threading.Lock()
        server = RecordingSmtpServer(
            schedule=seeded_schedule(seed, SMTP_WEIGHTS),
            log_path=smtp_log,
            command_delay=profile.smtp_command_delay,
        )
        with server:
            smtp_url = server.url(timeout=2)
            clock = SimClock(START)
            workers = Workers(url, smtp_url, profile, clock, rng, tally, logdir)
            stop = threading.Event()
            workers.start()
            threads = [
                threading.Thread(
                    target=inject_replies,
                    args=(engine, clock, profile.reply_rate / 2, random.Random(f"{seed}:reply{i}"), stop),
                    kwargs={"replied": replied, "log": replies, "guard": guard},
                    daemon=True,
                )
                for i in range(2)
            ]
            threads.append(
                threading.Thread(
                    target=chaos,
                    args=(workers, admin, dbname, profile, random.Random(f"{seed}:chaos"), stop, tally),
                    daemon=True,
                )
            )
            for thread in threads:
                thread.start()
            phases["setup"] = time.monotonic() - started
            stop.wait(profile.duration)
            _extend_until_raced(profile, replies, guard, stop)
            stop.set()
            threads[-1].join(timeout=60)  # the chaos thread first: no more stops after this
            workers.stop_all()  # SIGCONT then SIGTERM: a stopped worker may hold a lead lock
            for thread in threads[:-1]:
                thread.join(timeout=60)
            phases["faults"] = time.monotonic() - started - phases["setup"]
            behaviours = Counter(str(b) for b in server.transactions)
            sessions = {"connections": server.connections, "rset (a reused connection)": server.rsets}
            server.schedule, server.behaviour = None, Behaviour.ACCEPT
            final_now, passes = final_recovery(url, smtp_url, clock, profile.lease, profile.workers)
        phases["final recovery"] = time.monotonic() - started - phases["setup"] - phases["faults"]
        verdict = check(engine, read_log(smtp_log), replies, final_now)
        engine.dispose()
        admin.dispose()
    finally:
        if not keep:
            drop_database(admin_url, dbname)
    phases["total"] = time.monotonic() - started
    report = report_of(profile, seed, tally, behaviours, replies, passes, verdict, phases)
    report["smtp_sessions"] = sessions
    return report


def _extend_until_raced(
    profile: Profile, replies: list[dict[str, Any]], guard: threading.Lock, stop: threading.Event
) -> None:
    """Past the duration, until `profile.until_in_flight` replies found a step in flight (or
    four more durations went by)."""
    deadline = time.monotonic() + 4 * profile.duration
    while profile.until_in_flight and time.monotonic() < deadline:
        with guard:
            raced = sum(1 for r in replies if r.get("in_flight"))
        if raced >= profile.until_in_flight:
            return
        stop.wait(0.2)


def report_of(
    profile: Profile,
    seed: int,
    tally: Tally,
    behaviours: Counter[str],
    replies: list[dict[str, Any]],
    passes: list[dict[str, Any]],
    verdict: Verdict,
    phases: dict[str, float],
) -> dict[str, Any]:
    return {
        "seed": seed,
        "profile": asdict(profile),
        "wall_seconds": {k: round(v, 1) for k, v in phases.items()},
        "faults": dict(sorted(tally.faults.items())),
        "smtp_transactions": dict(sorted(behaviours.items())),
        "worker_processes_spawned": tally.spawned,
        "worker_exits": dict(sorted(tally.exits.items())),
        "replies": {
            "injected": len(replies),
            "committed": sum(1 for r in replies if r.get("committed")),
            "found_a_step_in_flight": sum(1 for r in replies if r.get("in_flight")),
            "commit_errors": sum(1 for r in replies if "error" in r),
        },
        "final_recovery_passes": passes,
        "zero_counts": verdict.zeros,
        "examples": verdict.examples,
        "facts": verdict.facts,
        "ok": verdict.ok,
    }


def print_summary(report: dict[str, Any], console: Console) -> None:
    faults = Table(title=f"faults injected (seed {report['seed']})")
    faults.add_column("fault")
    faults.add_column("count", justify="right")
    for name, n in report["faults"].items():
        faults.add_row(name, str(n))
    for name, n in report["smtp_transactions"].items():
        faults.add_row(f"SMTP transaction: {name}", str(n))
    for name, n in report.get("smtp_sessions", {}).items():
        faults.add_row(f"SMTP {name}", str(n))
    for name, n in report["replies"].items():
        faults.add_row(f"replies {name.replace('_', ' ')}", str(n))
    console.print(faults)
    zeros = Table(title="must be zero")
    zeros.add_column("check")
    zeros.add_column("count", justify="right")
    for name, n in report["zero_counts"].items():
        zeros.add_row(name, f"[{'green' if n == 0 else 'bold red'}]{n}[/]")
    console.print(zeros)
    facts = report["facts"]
    console.print(
        f"steps {facts['step_states']}; leads {facts['lead_states']}; "
        f"oracle accepted {facts['accepted_by_oracle']}; wall seconds {report['wall_seconds']}"
    )
    console.print("[bold green]PASS[/]" if report["ok"] else "[bold red]FAIL[/]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), default="long")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--leads", type=int)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--duration", type=float, help="seconds of faults and replies")
    parser.add_argument("--reply-rate", type=float, help="replies per second")
    parser.add_argument("--db", default=os.environ.get("REPLYGUARD_TEST_PG_URL", DEFAULT_DB))
    parser.add_argument("--report", type=Path, help="write the JSON report here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument(
        "--broken-guard", action="store_true", help="run test-only workers without a guard (must FAIL)"
    )
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    overrides = {
        "leads": args.leads,
        "workers": args.workers,
        "duration": args.duration,
        "reply_rate": args.reply_rate,
        "broken_guard": args.broken_guard or None,
    }
    profile = replace(profile, **{k: v for k, v in overrides.items() if v is not None})
    console = Console()
    report = run(profile, args.seed, args.db, keep=args.keep, console=console)
    print_summary(report, console)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        console.print(f"report written to {args.report}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
