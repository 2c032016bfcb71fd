"""IMAP IDLE APPEND -> lead stopped, with N connected mailboxes watched by one poller runner
(issue 24, item 4): a private Dovecot with one user per mailbox, `App.mailbox_pollers()` (one
IDLE connection per mailbox's INBOX), the real ingest and reply transaction.

    python bench/imap_mailboxes.py [--mailboxes 50] [--rounds 4] [--db sqlite|postgresql]

Two measures: `sequential` (one reply at a time: APPEND to a mailbox, wait until its lead is
stopped) and `burst` (one reply to every mailbox at once; each lead's latency from its own
APPEND). Latency = the APPEND's return -> the lead's reply state `replied` seen in the database
(read every 2 ms).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import START, scratch_db, summary_ms, write_result
from rich.console import Console
from sqlalchemy import select
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import campaign_toml, csv_of, enroll_all

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.db.migrate import upgrade
from replyguard.adapters.imap_source import ImapPoller
from replyguard.adapters.secret_box import new_key
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.service_layer.workspace.mailbox_accounts import Account, connect_mailbox
from replyguard.settings import Settings


def address(i: int) -> str:
    return f"rep{i}@m{i}.test"


def lead(i: int, j: int) -> str:
    return f"lead{i}-{j}@l{i}.test"


def build(url: str, n: int, rounds: int, port: int, outbox: Path) -> App:
    engine = make_engine(url, pool_size=n + 10) if url.startswith("postgresql") else make_engine(url)
    upgrade(engine)
    app = App(engine=engine, clock=FixedClock(START), settings=Settings(), transport_spec=f"maildir:{outbox}")
    app.init_database()
    app.secret_keys = (new_key(),)
    with app.uow() as uow:
        for i in range(n):
            create_campaign(uow, campaign_toml(f"C{i}", f"P{i}", mailbox=address(i)))
            rows = csv_of([{"email": lead(i, j), "first_name": "Lee"} for j in range(rounds)])
            import_leads(uow, f"P{i}", list(read_leads(rows)))
            imap = f"imap://127.0.0.1:{port}/INBOX?starttls=no"
            connect_mailbox(uow, app.secret_box(), address(i), Account(None, imap, f"pw{i}"))
        uow.commit()
    for i in range(n):
        enroll_all(app, f"C{i}")
    assert Worker(app).run_once().sent == n * rounds
    return app


def replies(app: App) -> dict[str, tuple[int, str, str]]:
    """{lead address: (lead id, our first email's Message-ID, its subject)}."""
    with app.engine.connect() as conn:
        rows = conn.execute(
            select(m.Step.to_address, m.Step.lead_id, m.Step.message_id, m.Step.subject).where(
                m.Step.position == 1
            )
        ).all()
    return {email: (lead_id, mid, subject) for email, lead_id, mid, subject in rows}


def raw_reply(who: str, to: str, mid: str, subject: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = who, to, f"Re: {subject}"
    msg["Message-ID"], msg["In-Reply-To"] = f"<r-{who}>", mid
    msg["Date"] = "Mon, 07 Dec 2026 10:05:00 +0000"
    msg.set_content("Yes, let's talk.\n")
    return msg.as_bytes(policy=policy.SMTP)


def replied(app: App, ids: list[int]) -> set[int]:
    query = select(m.Lead.id).where(m.Lead.reply_state == "replied", m.Lead.id.in_(ids))
    with app.engine.connect() as conn:
        return set(conn.execute(query).scalars())


def wait_stopped(app: App, pending: dict[int, float], seen: dict[int, float], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for lead_id in replied(app, list(pending)):
            seen[lead_id] = time.perf_counter() - pending.pop(lead_id)
        time.sleep(0.002)
    if pending:
        raise RuntimeError(f"{len(pending)} leads not stopped within {timeout} s")


def run(kind: str, n: int, rounds: int, console: Console) -> dict[str, object]:
    users = {address(i): f"pw{i}" for i in range(n)}
    with (
        DovecotServer(dovecot_or_skip(), users=users) as imap,
        scratch_db(kind, "imapmb") as url,
        tempfile.TemporaryDirectory(prefix="rg-bench-outbox-") as outbox,
    ):
        app = build(url, n, rounds, imap.port, Path(outbox))
        made: list[ImapPoller] = []
        runner = app.mailbox_pollers()
        make = runner.make

        def tracked(source_url: str) -> ImapPoller:
            poller = make(source_url)
            assert isinstance(poller, ImapPoller)
            made.append(poller)
            return poller

        runner.make = tracked
        stop = threading.Event()
        thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        thread.start()
        t0 = time.perf_counter()
        while not (len(made) == n and all(p.stats.idle_commands >= 1 for p in made)):
            time.sleep(0.01)
        console.print(f"{kind}: {n} mailboxes in IDLE after {time.perf_counter() - t0:.1f} s")
        info = replies(app)
        sequential: list[float] = []
        burst: list[float] = []
        try:
            for j in range(rounds):
                seen: dict[int, float] = {}
                targets = range(n) if j % 2 == 0 else []
                for i in targets:  # sequential rounds: one reply at a time
                    lead_id, mid, subject = info[lead(i, j)]
                    imap.append(raw_reply(lead(i, j), address(i), mid, subject), user=address(i))
                    wait_stopped(app, {lead_id: time.perf_counter()}, seen)
                sequential += list(seen.values())
                if j % 2 == 1:  # burst rounds: a reply to every mailbox at once
                    pending: dict[int, float] = {}
                    for i in range(n):
                        lead_id, mid, subject = info[lead(i, j)]
                        imap.append(raw_reply(lead(i, j), address(i), mid, subject), user=address(i))
                        pending[lead_id] = time.perf_counter()
                    wait_stopped(app, pending, seen)
                    burst += list(seen.values())
        finally:
            stop.set()
            thread.join(60)
            app.close()
        connections = sum(p.stats.connections for p in made)
    result = {"mailboxes": n, "sequential": summary_ms(sequential), "burst": summary_ms(burst)}
    result["imap_connections"] = connections
    console.print(f"{kind}: {result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mailboxes", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    console = Console()
    found = {kind: run(kind, args.mailboxes, args.rounds, console) for kind in args.db.split(",")}
    path = write_result("imap_mailboxes", {"rounds": args.rounds, "results": found})
    console.print(f"written to {path}")


if __name__ == "__main__":
    main()
