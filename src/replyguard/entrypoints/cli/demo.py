"""`replyguard demo`: a workspace built from examples/, run across simulated days.

It enrolls the example leads in both example campaigns, runs the worker hour by hour on a
simulated clock, records a human reply and an out-of-office on day 2, and shows that the
replying lead's queue stopped while everything else went on.
"""

import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from sqlalchemy.engine import make_url

from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import bootstrap
from replyguard.domain.clock import Clock, FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.rescue.actions import approve_steps
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads
from replyguard.service_layer.workspace.leads import answered_subject, find_lead, import_leads

OWNER = "dana@northwind-analytics.test"  # owns both example campaigns
START = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)  # a Monday morning, before any window opens


class DemoFilesMissing(ValueError):
    pass


def run_demo(db_url: str, examples: Path, outbox: Path, out: Console) -> int:
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite" and url.database:
        for suffix in ("", "-wal", "-shm"):
            Path(url.database + suffix).unlink(missing_ok=True)
    # The main example first: its reply and approval are the story the demo tells.
    files = sorted(examples.glob("campaign*.toml"), key=lambda f: (f.name != "campaign.toml", f.name))
    if not files or not (examples / "leads.csv").exists():
        raise DemoFilesMissing(f"{examples}: no campaign*.toml and leads.csv there (see --examples)")
    if (outbox / "new").is_dir():
        shutil.rmtree(outbox)  # a fresh demo sends into a fresh outbox
    clock = FixedClock(START)
    app = bootstrap(db_url, clock=clock, transport=f"maildir:{outbox}")
    app.init_database()
    app.use_transport(MaildirTransport(outbox))
    rows = list(read_leads((examples / "leads.csv").read_bytes()))
    campaigns = []
    with app.uow() as uow:
        for file in files:
            created = create_campaign(uow, file.read_text(encoding="utf-8"))
            import_leads(uow, created.product, rows)
            campaigns.append(created)
        uow.commit()
    for created in campaigns:
        report = EnrollReport()
        with app.uow() as uow:
            enroll_leads(uow, created.name, candidate_lead_ids(uow, created.name, None), report)
            uow.commit()
        out.print(
            f"enrolled {report.enrolled} leads in [bold]{escape(created.name)}[/]"
            f" ({escape(created.product)})",
            markup=True,
        )
    worker = Worker(app)
    replier, replier_product = "priya@fernhollow.test", campaigns[0].product
    away = "marc.keller@brightline-logistics.test"
    sent = 0
    thread_id: int | None = None
    for hour in range(0, 24 * 10):
        clock.set(START + timedelta(hours=hour))
        if hour == 24 * 4:
            with app.uow() as uow:
                approved = approve_steps(uow, campaigns[0].name, approver="demo")
                uow.commit()
            out.print(f"{_t(clock)}  a person approved {approved} 'last note' steps")
        if hour == 24 + 10:
            thread_id = _reply(app, replier, replier_product, ReplyKind.HUMAN_REPLY, None, out)
            _reply(app, away, replier_product, ReplyKind.OUT_OF_OFFICE, date(2026, 12, 21), out)
            _deliver_notices(app, out)
        if hour == 24 + 11 and thread_id is not None:
            _owner_decides_the_other_product(app, thread_id, out)
        sent += worker.run_once().sent
    out.print(
        f"\n{sent} emails sent into [bold]{escape(str(outbox))}/new[/] (open any .eml with a mail client)\n",
        markup=True,
    )
    _table(app, out)
    _open_threads(app, out)
    app.close()
    return 0


def _open_threads(app: object, out: Console) -> None:
    """Where automation stopped and a person takes over: the Reply Rescue inbox."""
    from replyguard.bootstrap import App
    from replyguard.entrypoints.cli.threads_cmd import print_table
    from replyguard.service_layer.rescue.thread_views import list_threads

    assert isinstance(app, App)
    with app.uow() as uow:
        items = list_threads(uow, app.settings, state="open")
    print_table(items, "Reply Rescue: open threads (replyguard threads show ID)")


def _t(clock: Clock) -> str:
    return clock.now().strftime("%a %Y-%m-%d %H:%M UTC")


def _deliver_notices(app: object, out: Console) -> None:
    """The owner hears of the reply when it lands, as under `up` (the demo's notices are
    emails into the same Maildir), not days later when `up` first runs."""
    from replyguard.bootstrap import App

    assert isinstance(app, App)
    report = app.notice_delivery().run_once()
    if report.delivered:
        out.print(f"{_t(app.clock)}  the campaign owner is told: {report.delivered} notice(s) delivered")


def _owner_decides_the_other_product(app: object, thread_id: int, out: Console) -> None:
    """Priya is also in the Forecasting sequence. Its emails are a person's decision, not the
    machine's: here the owner pauses them while the conversation about Reports goes on (the
    thread also offers to leave them running)."""
    from replyguard.bootstrap import App
    from replyguard.service_layer.rescue.decisions import Request, decide

    assert isinstance(app, App)
    with app.uow() as uow:
        result = decide(
            uow, thread_id, Request(action="pause_others", by=OWNER, until=date(2027, 1, 4)), app.settings
        )
        uow.commit()
    out.print(
        f"{_t(app.clock)}  the owner decided on the other product of thread {thread_id}: {result.message}"
    )


def _reply(
    app: object, email: str, product: str, kind: ReplyKind, back: date | None, out: Console
) -> int | None:
    """Record the reply; the id of the thread it opened for a person, if any."""
    from replyguard.bootstrap import App

    assert isinstance(app, App)
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        outcome = record_reply(
            uow,
            lead.id,
            IncomingReply(
                kind=kind,
                received_at=app.clock.now(),
                return_date=back,
                source="demo",
                subject=answered_subject(uow, lead.id),
                text=(
                    "Sounds interesting — can we talk Thursday? Also, how does pricing work for a team of 12?"
                    if back is None
                    else "I am out of the office until 21 December."
                ),
            ),
            app.settings,
        )
        uow.commit()
    what = "replied" if kind is ReplyKind.HUMAN_REPLY else f"is out of office until {back}"
    out.print(
        f"{app.clock.now():%a %Y-%m-%d %H:%M UTC}  [bold]{escape(email)}[/] {what} ({escape(product)}): "
        f"state {outcome.lead_state}, {outcome.cancelled} queued steps cancelled, "
        f"{outcome.rescheduled} moved after the pause — in the same transaction",
        markup=True,
    )
    return outcome.thread_id


def _table(app: object, out: Console) -> None:
    from replyguard.bootstrap import App
    from replyguard.service_layer.queries.leads import list_leads

    assert isinstance(app, App)
    table = Table(title="After ten simulated days")
    for column in ("lead", "product", "reply state", "sent", "cancelled", "queued"):
        table.add_column(column)
    with app.uow() as uow:
        leads = list_leads(uow)
    for lead in leads:
        queued = sum(lead.steps.get(s, 0) for s in ("scheduled", "claimed", "awaiting_approval"))
        style = "bold green" if lead.reply_state != "active" else ""
        table.add_row(
            lead.email,
            lead.product,
            Text(lead.reply_state, style=style),
            str(lead.steps.get("sent", 0)),
            str(lead.steps.get("cancelled", 0)),
            str(queued),
        )
    out.print(table)
