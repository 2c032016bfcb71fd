"""Building workspaces for tests through the real services (no SQL shortcuts)."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, ReplyOutcome, record_reply
from replyguard.service_layer.sending.worker import Worker, WorkerReport
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads
from replyguard.service_layer.workspace.leads import find_lead, import_leads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REPORTS = "Northwind Reports"
FORECASTING = "Northwind Forecasting"
Q1 = "Q1 reporting outreach"
PILOT = "Forecasting pilot"


def load_examples(app: App, *, enroll: bool = True) -> None:
    rows = list(read_leads((EXAMPLES / "leads.csv").read_bytes()))
    with app.uow() as uow:
        for name in ("campaign.toml", "campaign-forecasting.toml"):
            created = create_campaign(uow, (EXAMPLES / name).read_text(encoding="utf-8"))
            import_leads(uow, created.product, rows)
        uow.commit()
    if enroll:
        for campaign in (Q1, PILOT):
            enroll_all(app, campaign)


def enroll_all(app: App, campaign: str) -> EnrollReport:
    report = EnrollReport()
    with app.uow() as uow:
        enroll_leads(uow, campaign, candidate_lead_ids(uow, campaign, None), report)
        uow.commit()
    return report


def csv_of(leads: list[dict[str, str]]) -> bytes:
    header = ["email", "first_name", "last_name", "company", "title", "timezone", "alt_emails", "owner"]
    lines = [",".join(header)] + [",".join(lead.get(h, "") for h in header) for lead in leads]
    return ("\n".join(lines) + "\n").encode()


def campaign_toml(
    name: str,
    product: str,
    *,
    cap: int = 100,
    days: str = '"mon","tue","wed","thu","fri"',
    mailbox: str = "rep@seller.test",
    approval_last: bool = False,
) -> str:
    return f"""
product = "{product}"
[campaign]
name = "{name}"
mailbox = "{mailbox}"
from_name = "Rep"
owner = "{mailbox}"
timezone = "UTC"
send_window = {{ days = [{days}], start = "09:00", end = "17:00" }}
daily_cap = {cap}
[[campaign.steps]]
wait = "0d"
subject = "Hello {{{{ first_name }}}}"
body = "Hi {{{{ first_name }}}}, first."
[[campaign.steps]]
wait = "2d"
body = "Second."
[[campaign.steps]]
wait = "2d"
approval = {"true" if approval_last else "false"}
body = "Third."
"""


def simple_workspace(app: App, n: int, *, cap: int = 1000, product: str = "P", name: str = "C") -> list[str]:
    emails = [f"lead{i}@example{i % 7}.test" for i in range(n)]
    rows = list(read_leads(csv_of([{"email": e, "first_name": f"L{i}"} for i, e in enumerate(emails)])))
    with app.uow() as uow:
        create_campaign(uow, campaign_toml(name, product, cap=cap))
        import_leads(uow, product, rows)
        uow.commit()
    enroll_all(app, name)
    return emails


def reply(
    app: App, email: str, product: str, kind: ReplyKind = ReplyKind.HUMAN_REPLY, back: date | None = None
) -> ReplyOutcome:
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        outcome = record_reply(
            uow,
            lead.id,
            IncomingReply(kind=kind, received_at=app.clock.now(), return_date=back, from_address=email),
            app.settings,
            app.hooks,
        )
        uow.commit()
    return outcome


def run_days(
    app: App, clock: FixedClock, days: float, *, step: timedelta = timedelta(hours=1)
) -> WorkerReport:
    worker = Worker(app)
    total = WorkerReport()
    end = clock.now() + timedelta(days=days)
    while clock.now() < end:
        total.add(worker.run_once())
        clock.advance(step)
    return total


def step_counts(app: App, email: str, product: str) -> dict[str, int]:
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        return dict(
            uow.session.execute(
                select(m.Step.state, func.count()).where(m.Step.lead_id == lead.id).group_by(m.Step.state)
            ).all()
        )


def lead_state(app: App, email: str, product: str) -> str:
    with app.uow() as uow:
        return find_lead(uow, email, product).reply_state
