"""Page render times with 100k leads, 1M steps and 20k Reply Rescue threads, through real
HTTP to the app under uvicorn, on SQLite and PostgreSQL.

    python bench/web_pages.py [--leads 100000] [--steps 1000000] [--requests 50] [--db sqlite,postgresql]
                              [--pages reports,inbox]

1,000 leads are imported and enrolled through the services; the rest is copied from them with
SQL (contacts, addresses, leads, enrollments, steps with ids offset per copy), then each lead
gets more steps until the campaign holds --steps. States are spread like a campaign that has
run for two weeks (sent, scheduled, waiting for approval, cancelled with reasons, failed,
unknown), with replies and a `step_sent` event per sent step. Every reply has its rescue
thread (a fifth of the leads: 20,000 at 100k): 60% open, 10% snoozed, 30% done with a person's
decision some hours after the reply; kinds and intents mixed, a seventh assigned. Each page is
requested --requests times after 5 warm-ups by a signed-in session; p50/p95/max are reported.
--pages measures only the pages whose label contains one of its comma-separated words.
--keep URL builds the workspace in that database the first time (an empty SQLite file or
PostgreSQL database), and measures the one found there afterwards, migrated to the code's head:
old and new code (PYTHONPATH) measured in turns on the same data, without a build each time
(one kept database per code version when the new code adds a migration: the old code's Alembic
refuses a revision it does not know; copy the SQLite file, or CREATE DATABASE ... TEMPLATE).
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import uvicorn
from bench.common import START, percentile, scratch_db, workspace, write_result
from rich.console import Console
from rich.table import Table
from sqlalchemy import Connection, inspect, text

from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.db.migrate import upgrade
from replyguard.bootstrap import App
from replyguard.domain.access import Level, Principal
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.service_layer import step_tallies as tallies
from replyguard.service_layer.workspace.accounts import add_user
from replyguard.service_layer.workspace.api_tokens import create_token
from replyguard.settings import Settings

PASSWORD = "benchmark password"  # noqa: S105 (a scratch database, dropped after the run)
SEED = 1000
BLOCK = 10_000_000  # id offset per copy: no copied id meets another


def copy_leads(conn: Connection, copies: int) -> None:
    """Copies 1..copies of the first SEED leads, with everything hanging off them."""
    g = f"WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {copies})"
    o = f"g.n * {BLOCK}"
    statements = [
        "INSERT INTO contacts (id, workspace_id, first_name, last_name, company, title, timezone, "
        f"owner, fields, created_at) {g} SELECT c.id + {o}, c.workspace_id, c.first_name || g.n, "
        "'Copy', 'Company ' || (c.id % 500), c.title, c.timezone, c.owner, c.fields, c.created_at "
        "FROM contacts c, g",
        "INSERT INTO contact_addresses (id, workspace_id, contact_id, address, domain, is_primary) "
        f"{g} SELECT a.id + {o}, a.workspace_id, a.contact_id + {o}, 'c' || g.n || '.' || a.address, "
        "a.domain, a.is_primary FROM contact_addresses a, g",
        "INSERT INTO leads (id, workspace_id, contact_id, product_id, reply_state, "
        "reply_state_updated_at, last_reply_id, paused_until, hold_reason, created_at) "
        f"{g} SELECT l.id + {o}, l.workspace_id, l.contact_id + {o}, l.product_id, l.reply_state, "
        "l.reply_state_updated_at, NULL, NULL, NULL, l.created_at FROM leads l, g",
        "INSERT INTO enrollments (id, workspace_id, lead_id, campaign_id, state, created_at) "
        f"{g} SELECT e.id + {o}, e.workspace_id, e.lead_id + {o}, e.campaign_id, e.state, "
        "e.created_at FROM enrollments e, g",
        f"INSERT INTO steps ({STEP_COLUMNS}) {g} SELECT "
        f"{step_copy(f's.id + {o}', f's.enrollment_id + {o}', f's.lead_id + {o}', 's.position', 'g.n')} "
        "FROM steps s, g",
    ]
    for sql in statements:
        conn.execute(text(sql))


STEP_COLUMNS = (
    "id, workspace_id, enrollment_id, lead_id, mailbox_id, campaign_step_id, position, state, due_at, "
    'send_key, message_id, to_address, subject, subject_key, body, in_reply_to, "references", '
    "claim_token, lease_until, send_day, attempts, last_error, cancel_reason, cancel_requested, crossed, "
    "sent_at, updated_at"
)


def step_copy(step_id: str, enrollment: str, lead: str, position: str, tag: str) -> str:
    return (
        f"{step_id}, s.workspace_id, {enrollment}, {lead}, s.mailbox_id, s.campaign_step_id, {position}, "
        f"s.state, s.due_at, s.send_key || '.' || {tag}, '<c' || {tag} || '.' || substr(s.message_id, 2), "
        's.to_address, s.subject, s.subject_key, s.body, s.in_reply_to, s."references", NULL, NULL, '
        "s.send_day, 0, NULL, NULL, s.cancel_reason IS NOT NULL AND 1 = 0, s.crossed, s.sent_at, s.updated_at"
    )


def more_steps(conn: Connection, extra_per_lead: int) -> None:
    """Positions 4.. for every lead, copied from its first three (same templates)."""
    rounds = -(-extra_per_lead // 3)
    g = f"WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {rounds})"
    # Literals past 2**31 make PostgreSQL compute in bigint (int * int would overflow).
    new_id = f"s.id + {5 * BLOCK * 100} + g.n * {BLOCK * 1000}"
    copied = step_copy(new_id, "s.enrollment_id", "s.lead_id", "s.position + 3 * g.n", "'m' || g.n")
    conn.execute(
        text(
            f"INSERT INTO steps ({STEP_COLUMNS}) {g} SELECT {copied} FROM steps s, g "
            f"WHERE s.position <= 3 AND 3 * (g.n - 1) + s.position <= {extra_per_lead}"
        )
    )


def spread_states(conn: Connection, postgres: bool) -> None:
    """A campaign that has been sending for 200 days: 40% sent (2,000 a day from its one
    mailbox, far above any real mailbox's cap), 30% scheduled, 10% waiting for approval, 15%
    cancelled with three reasons, 3% failed, 2% unknown; replies from a fifth of the leads
    in the last 30 days, and a `step_sent` event per sent step."""

    def days_ago(days: str) -> tuple[str, str]:
        if postgres:
            return (
                f"(CAST(:start AS DATE) - CAST({days} AS INTEGER))",
                f"(CAST(:now AS TIMESTAMPTZ) - make_interval(days => ({days})::int))",
            )
        return f"date(:start, '-' || ({days}) || ' days')", f"datetime(:now, '-' || ({days}) || ' days')"

    day, sent_at = days_ago("id % 200")
    at = {"start": "2026-12-07", "now": "2026-12-07 10:00:00"}
    state = (
        "CASE WHEN id % 100 < 40 THEN 'sent' WHEN id % 100 < 70 THEN 'scheduled' "
        "WHEN id % 100 < 80 THEN 'awaiting_approval' WHEN id % 100 < 95 THEN 'cancelled' "
        "WHEN id % 100 < 98 THEN 'failed' ELSE 'unknown' END"
    )
    reason = (
        "CASE WHEN id % 100 >= 80 AND id % 100 < 95 THEN (CASE WHEN id % 3 = 0 THEN 'reply:human_reply' "
        "WHEN id % 3 = 1 THEN 'stopped by a person' ELSE 'refused' END) END"
    )
    sent = "id % 100 < 40"
    conn.execute(
        text(
            f"UPDATE steps SET state = {state}, cancel_reason = {reason}, "
            f"send_day = CASE WHEN {sent} THEN {day} END, sent_at = CASE WHEN {sent} THEN {sent_at} END"
        ),
        at,
    )
    conn.execute(
        text(
            "INSERT INTO events (workspace_id, lead_id, step_id, kind, at, data) "
            "SELECT workspace_id, lead_id, id, 'step_sent', sent_at, '{}' FROM steps WHERE state = 'sent'"
        )
    )
    _, received = days_ago("id % 30")
    kind = (
        "CASE id % 4 WHEN 0 THEN 'human_reply' WHEN 1 THEN 'out_of_office' "
        "WHEN 2 THEN 'bounce_hard' ELSE 'auto_reply' END"
    )
    conn.execute(
        text(
            "INSERT INTO replies (workspace_id, lead_id, kind, source, evidence, received_at, recorded_at) "
            f"SELECT workspace_id, id, {kind}, 'bench', '[]', {received}, {received} "
            "FROM leads WHERE id % 5 = 0"
        ),
        at,
    )


INTENTS = (
    "interested",
    "question",
    "referral",
    "later",
    "not_interested",
    "unsubscribe",
    "wrong_person",
    "other",
)


def add_threads(conn: Connection, postgres: bool) -> None:
    """A rescue thread per reply, and a person's decision on each done one (the first-action
    chart reads those events)."""
    kind = (
        "CASE r.id % 10 WHEN 0 THEN 'probable_reply' WHEN 1 THEN 'unknown_outcome' "
        "WHEN 2 THEN 'step_failed' ELSE 'human_reply' END"
    )
    intent = "CASE r.id % 8 " + " ".join(f"WHEN {i} THEN '{name}'" for i, name in enumerate(INTENTS)) + " END"
    state = "CASE WHEN r.id % 10 < 6 THEN 'open' WHEN r.id % 10 < 7 THEN 'snoozed' ELSE 'done' END"
    later = "r.received_at + make_interval(days => 40)" if postgres else "datetime(r.received_at, '+40 days')"
    conn.execute(
        text(
            "INSERT INTO threads (workspace_id, lead_id, product_id, contact_id, mailbox_id, kind, subject, "
            "reply_id, text, evidence, intent, intent_data, next_step, actions, crossed, candidates, owner, "
            "assignee, state, snoozed_until, created_at, updated_at) "
            f"SELECT r.workspace_id, r.lead_id, l.product_id, l.contact_id, "
            f"(SELECT min(id) FROM mailboxes), {kind}, 'Re: A question', r.id, "
            "'Thanks for writing. How much is it for a team of twelve?', '[]', "
            f"{intent}, '{{}}', '', '[]', r.id % 50 = 0, '[]', 'owner@example.test', "
            f"CASE WHEN r.id % 7 = 0 THEN 'zoe@example.test' END, {state}, "
            f"CASE WHEN r.id % 10 = 6 THEN {later} END, r.received_at, r.received_at "
            "FROM replies r JOIN leads l ON l.id = r.lead_id"
        )
    )
    at = (
        "t.created_at + make_interval(hours => (t.id % 48)::int)"
        if postgres
        else "datetime(t.created_at, '+' || (t.id % 48) || ' hours')"
    )
    data = (
        "json_build_object('thread_id', t.id, 'action', 'done', 'by', 'bench', 'message', 'done')"
        if postgres
        else "json_object('thread_id', t.id, 'action', 'done', 'by', 'bench', 'message', 'done')"
    )
    conn.execute(
        text(
            "INSERT INTO events (workspace_id, lead_id, step_id, kind, at, data) "
            f"SELECT t.workspace_id, t.lead_id, NULL, 'thread_decision', {at}, {data} "
            "FROM threads t WHERE t.state = 'done'"
        )
    )


def due_first(conn: Connection, postgres: bool, spread_s: int = 0) -> None:
    """A campaign that starts now (the memory bench's worker): every step scheduled, each
    lead's first one due at START, every later one two days after the one before it — so a
    worker at START finds one due email per lead and none of the rest. `spread_s`: the first
    steps due over the `spread_s` seconds before START (by step id) instead of all at START.

    All at one instant is what enrolling every lead at once gives, and it costs the claim a
    sort of every due step (ORDER BY due_at, id over an index on (state, due_at): 2.9 s per
    claim of 20 at 100k due on PostgreSQL, docs/benchmarks.md "Peak memory (RSS)")."""
    start = "2026-12-07 10:00:00" + ("+00:00" if postgres else "")
    if postgres:
        later = "CAST(:start AS TIMESTAMPTZ) + make_interval(days => 2 * (position - 1))"
        spread = "CAST(:start AS TIMESTAMPTZ) - make_interval(secs => id % :spread)"
    else:  # the text form UTCDateTime stores on SQLite, so that `due_at <= :now` compares right
        later = "strftime('%Y-%m-%d %H:%M:%S.000000', :start, '+' || (2 * (position - 1)) || ' days')"
        spread = "strftime('%Y-%m-%d %H:%M:%S.000000', :start, '-' || (id % :spread) || ' seconds')"
    conn.execute(
        text(f"UPDATE steps SET state = 'scheduled', due_at = {later} WHERE position > 1"), {"start": start}
    )
    if spread_s > 0:
        conn.execute(
            text(f"UPDATE steps SET due_at = {spread} WHERE position = 1"),
            {"start": start, "spread": spread_s},
        )


def build(
    url: str, leads: int, steps: int, console: Console, *, due: bool = False, due_spread_s: int = 0
) -> App:
    """The workspace of the page benchmark; `due=True`: the same leads and steps, but as a
    campaign starting now (`due_first`: `leads` emails due, no history, no threads)."""
    t0 = time.perf_counter()
    app = workspace(url, SEED)
    with app.engine.begin() as conn:
        copy_leads(conn, leads // SEED - 1)
    with app.engine.begin() as conn:
        more_steps(conn, max(0, steps // leads - 3))
    postgres = app.postgres
    if due:
        with app.engine.begin() as conn:
            due_first(conn, postgres, due_spread_s)
    else:
        with app.engine.begin() as conn:
            spread_states(conn, postgres)
        with app.engine.begin() as conn:
            add_threads(conn, postgres)
    with app.engine.begin() as conn:
        # The step-count ledger got a row per copied step and move (SQLite's triggers are per
        # row): folded as the worker's first pass would (service_layer/step_tallies.py).
        tallies.fold(conn, app.workspace_id)
    if postgres:
        # What autovacuum does for a table in use: fresh statistics and the visibility map
        # that lets a count read the index alone. SQLite gathers no statistics by itself, so
        # it gets none here either: the pages must be fast with the planner's defaults.
        with app.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
    with app.engine.begin() as conn:
        counts = conn.execute(
            text(
                "SELECT (SELECT count(*) FROM leads), (SELECT count(*) FROM steps), "
                "(SELECT count(*) FROM threads)"
            )
        ).one()
    with app.uow() as uow:
        add_user(uow, "bench@example.test", PASSWORD)
        uow.commit()
    took = time.perf_counter() - t0
    console.print(
        f"{app.engine.dialect.name}: {counts[0]:,} leads, {counts[1]:,} steps, {counts[2]:,} threads "
        f"in {took:.0f} s"
    )
    return app


@contextmanager
def serving(app: App) -> Iterator[str]:
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `replyguard up` does
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(app), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def signed_in(client: httpx.Client) -> None:
    token = re.search(r'name="login_token" value="([^"]+)"', client.get("/login").text)
    assert token
    client.post(
        "/login", data={"email": "bench@example.test", "password": PASSWORD, "login_token": token.group(1)}
    )


def pages(app: App) -> dict[str, str]:
    with app.engine.connect() as conn:
        campaign = conn.execute(text("SELECT id FROM campaigns")).scalar_one()
        lead = conn.execute(text("SELECT max(id) FROM leads")).scalar_one()
        thread = conn.execute(
            text("SELECT max(id) FROM threads WHERE state = 'open' AND kind = 'human_reply'")
        ).scalar_one()
    return {
        "inbox (open threads)": "/inbox",
        "inbox, every state": "/inbox?state=all",
        "inbox, filtered (intent, owner)": "/inbox?intent=question&owner=zoe%40example.test",
        "inbox, page 100": "/inbox?page=100",
        "thread page": f"/threads/{thread}",
        "threads API (50 open)": "/api/v1/threads",
        "campaign page (awaiting approval)": f"/campaigns/{campaign}",
        "campaign page, sent tab": f"/campaigns/{campaign}?state=sent",
        "campaign page, cancelled tab (reasons)": f"/campaigns/{campaign}?state=cancelled",
        "campaign page, sent tab, page 200": f"/campaigns/{campaign}?state=sent&page=200",
        "campaign page, step 2 previewed for a lead": f"/campaigns/{campaign}?step=2&lead={lead}",
        "campaign API, per-step counts": f"/api/v1/campaigns/{campaign}/step-stats",
        "campaign edit page": f"/campaigns/{campaign}/edit",
        "campaigns list": "/campaigns",
        "leads list": "/leads",
        "leads search": "/leads?q=lead4242",
        "lead page (timeline)": f"/leads/{lead}",
        "inbound": "/inbound",
        "reports (30 days)": "/reports",
        "metrics scrape": "/metrics",
    }


def kept(url: str, console: Console) -> App | None:
    """The workspace a run with --keep built at `url` (migrated to this code's head), or None
    when there is none yet: old and new code can then be measured on the same data."""
    engine = make_engine(url, pool_size=10)
    if "campaigns" not in inspect(engine).get_table_names():
        engine.dispose()
        return None
    upgrade(engine)
    if url.startswith("postgresql"):
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))  # a new index has no statistics yet
    console.print(f"{engine.dialect.name}: the workspace kept at {url}")
    return App(engine=engine, clock=FixedClock(START), settings=Settings())


def api_token(app: App) -> str:
    with app.uow() as uow:
        name = f"bench {time.time_ns()}"  # unique: a kept workspace is measured again
        _view, token = create_token(uow, name, Principal.operator("bench"), scope=Level.ADMIN)
        uow.commit()
    return token


def measure(base: str, paths: dict[str, str], requests: int, token: str) -> list[dict[str, object]]:
    rows = []
    with httpx.Client(base_url=base, timeout=120) as client:
        signed_in(client)
        bearer = {"Authorization": f"Bearer {token}"}
        for name, path in paths.items():
            samples = []
            for i in range(5 + requests):
                t = time.perf_counter()
                response = client.get(path, headers=bearer if path.startswith("/api/") else None)
                elapsed = time.perf_counter() - t
                assert response.status_code == 200, (path, response.status_code)
                if i >= 5:
                    samples.append(elapsed * 1000)
            rows.append(
                {
                    "page": name,
                    "path": path,
                    "n": len(samples),
                    "p50_ms": round(percentile(samples, 50), 1),
                    "p95_ms": round(percentile(samples, 95), 1),
                    "max_ms": round(max(samples), 1),
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--leads", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--db", default="sqlite,postgresql")
    parser.add_argument("--pages", default="", help="only pages whose label contains one of these words")
    parser.add_argument(
        "--keep", default="", help="a database URL: the workspace built there once, then reused"
    )
    args = parser.parse_args()
    if args.keep:
        args.db = "kept"
    wanted = [w.strip() for w in args.pages.split(",") if w.strip()]
    console = Console()
    results = []
    for kind in args.db.split(","):
        with scratch_db(kind, "web") if not args.keep else nullcontext(args.keep) as url:
            app = kept(url, console) if args.keep else None
            app = app or build(url, args.leads, args.steps, console)
            db = app.engine.dialect.name
            chosen = {k: v for k, v in pages(app).items() if not wanted or any(w in k for w in wanted)}
            with serving(app) as base:
                for row in measure(base, chosen, args.requests, api_token(app)):
                    results.append({"db": db, **row})
                    console.print(f"{db}: {row['page']}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms")
            app.close()
    table = Table(title=f"pages with {args.leads:,} leads and {args.steps:,} steps (real HTTP, signed in)")
    for col in ("db", "page", "p50 ms", "p95 ms", "max ms"):
        table.add_column(col, justify="left" if col == "page" else "right")
    for r in results:
        table.add_row(str(r["db"]), str(r["page"]), f"{r['p50_ms']}", f"{r['p95_ms']}", f"{r['max_ms']}")
    console.print(table)
    # A run of some pages only is kept apart: web_pages.json stays the last run of every page.
    name = "web_pages" if not wanted else "web_pages_" + "_".join(w.replace(" ", "-") for w in wanted)
    name += "_kept" if args.keep else ""
    path = write_result(name, {"leads": args.leads, "steps": args.steps, "pages": wanted, "rows": results})
    console.print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
