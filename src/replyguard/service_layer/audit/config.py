"""`replyguard audit --config`: setups that pass the six checks today and fail in production.

The six checks prove the machine stops when a reply reaches it. These checks look at what
decides whether replies reach it at all, and whether a person hears about them: an inbound
source per sending mailbox, pollers that really reach their folder, a public URL for one-click
unsubscribe, a notice channel that reaches owners, a notice outbox that drains, and decisions
(unknown outcomes, probable matches) left waiting for more than a day. Read-only. The audit's
own canaries are left out of every count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.audit import CheckResult, Status
from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import ReplyState, StepState, ThreadState
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.settings import NotifySettings, Settings

#: A poller that reached its folder less recently than this is not polling.
POLL_STALE = timedelta(minutes=15)
#: How far back a reply counts as proof that a mailbox's replies reach us.
INBOUND_SEEN = timedelta(days=30)
#: A notice not delivered after this long is stuck.
NOTICE_STUCK = timedelta(minutes=15)
#: A decision a person owes for longer than this is overdue.
DECISION_LATE = timedelta(days=1)
#: A step due longer ago than this and still queued: no worker is sending.
OVERDUE = timedelta(hours=1)
_LOCAL = ("localhost", "127.", "0.0.0.0", "::1", "[::1]")  # noqa: S104 - a host name we refuse


@dataclass(frozen=True, slots=True)
class Setup:
    """What the checks need besides the database: the settings as the services see them."""

    settings: Settings
    notify: NotifySettings | None
    notify_error: str | None  # REPLYGUARD_NOTIFY_* did not parse
    transport_spec: str


def _row(
    name: str, title: str, status: Status, summary: str, details: list[str], **evidence: Any
) -> CheckResult:
    return CheckResult(name, title, status, summary, tuple(details), evidence)


def _worst(statuses: list[Status]) -> Status:
    return Status.FAIL if Status.FAIL in statuses else Status.WARN if Status.WARN in statuses else Status.PASS


def _not_canary() -> Any:
    return m.Lead.audit_run_id.is_(None)


def _campaigns(uow: UnitOfWork, name: str | None) -> list[m.Campaign]:
    if name is not None:
        return [find_campaign(uow, name)]
    return list(
        uow.session.scalars(
            select(m.Campaign)
            .where(m.Campaign.workspace_id == uow.workspace_id, m.Campaign.status == "active")
            .order_by(m.Campaign.name)
        )
    )


def inbound_sources(uow: UnitOfWork, campaigns: list[m.Campaign], now: datetime) -> CheckResult:
    """Every sending mailbox needs a way for replies to come back."""
    cursors = uow.session.scalars(
        select(m.MailboxCursor).where(m.MailboxCursor.workspace_id == uow.workspace_id)
    ).all()
    users = {c.source_key: _imap_user(c.source_key) for c in cursors}
    details, statuses, seen = [], [], {}
    for mailbox in {c.mailbox_id: uow.session.get_one(m.Mailbox, c.mailbox_id) for c in campaigns}.values():
        local = mailbox.address.partition("@")[0]
        polled = [k for k, user in users.items() if user in (mailbox.address, local)]
        last = uow.session.execute(
            select(func.max(m.InboundMessage.received_at), func.count())
            .join(m.Lead, m.Lead.id == m.InboundMessage.lead_id)
            .where(
                m.InboundMessage.workspace_id == uow.workspace_id,
                m.InboundMessage.received_at >= now - INBOUND_SEEN,
                m.InboundMessage.source != "audit",
                _not_canary(),
                m.Lead.id.in_(select(m.Step.lead_id).where(m.Step.mailbox_id == mailbox.id)),
            )
        ).one()
        if polled:
            statuses.append(Status.PASS)
            details.append(f"{mailbox.address}: read by {', '.join(polled)}")
        elif last[1]:
            statuses.append(Status.PASS)
            details.append(
                f"{mailbox.address}: {last[1]} replies in 30 days, the last at {last[0]:%Y-%m-%d %H:%M}"
            )
        else:
            statuses.append(Status.FAIL)
            details.append(
                f"{mailbox.address}: no IMAP poller reads it and no reply to it arrived in 30 days "
                "(webhook, LMTP or ingest): replies to it would never stop a sequence"
            )
        seen[mailbox.address] = {"pollers": polled, "replies_30d": last[1]}
    status = _worst(statuses)
    summary = {
        Status.PASS: "every sending mailbox has an inbound source",
        Status.FAIL: "a sending mailbox has no inbound source",
    }.get(status, "")
    return _row("inbound_source", "Inbound source", status, summary, details, mailboxes=seen)


def _imap_user(key: str) -> str:
    rest = key.partition("://")[2]
    return unquote(rest.rpartition("@")[0]).lower()


def source_polling(uow: UnitOfWork, now: datetime) -> CheckResult:
    """A poller must reach its folder, not just hold its lease."""
    cursors = uow.session.scalars(
        select(m.MailboxCursor)
        .where(m.MailboxCursor.workspace_id == uow.workspace_id)
        .order_by(m.MailboxCursor.source_key)
    ).all()
    if not cursors:
        return _row("source_polling", "Source polling", Status.PASS, "no IMAP source is configured", [])
    details, statuses, sources = [], [], {}
    for c in cursors:
        alive = c.lease_until is not None and c.lease_until >= now
        fresh = c.checked_at is not None and c.checked_at >= now - POLL_STALE
        checked = f"{c.checked_at:%Y-%m-%d %H:%M}" if c.checked_at else "never"
        if fresh:
            statuses.append(Status.PASS)
            details.append(f"{c.source_key}: reached its folder at {checked}")
        elif alive:
            statuses.append(Status.FAIL)
            details.append(
                f"{c.source_key}: a poller holds it but has not reached the folder since {checked} "
                "(login, TLS or network failing?)"
            )
        else:
            statuses.append(Status.FAIL)
            details.append(f"{c.source_key}: not polled since {checked} (is `replyguard poll` running?)")
        sources[c.source_key] = {
            "checked_at": c.checked_at.isoformat() if c.checked_at else None,
            "lease_until": c.lease_until.isoformat() if c.lease_until else None,
            "lease_owner": c.lease_owner,
        }
    status = _worst(statuses)
    summary = "every source was reached lately" if status is Status.PASS else "a source is not being read"
    return _row("source_polling", "Source polling", status, summary, details, sources=sources)


def public_url(settings: Settings) -> CheckResult:
    """One-click unsubscribe (RFC 8058) needs a public HTTPS address of `replyguard serve`."""
    url = settings.public_url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host or host.startswith(_LOCAL) or "." not in host:
        return _row(
            "public_url",
            "Unsubscribe URL",
            Status.FAIL,
            "one-click unsubscribe links point at no public address",
            [
                f"REPLYGUARD_PUBLIC_URL is {url!r}: mail providers cannot reach it, so their unsubscribe "
                "button does nothing; set it to the public https:// address of `replyguard serve`"
            ],
            public_url=url,
        )
    if parts.scheme != "https":
        return _row(
            "public_url",
            "Unsubscribe URL",
            Status.WARN,
            "one-click unsubscribe links are not HTTPS",
            [f"{url}: RFC 8058 asks for an HTTPS link; Gmail and Yahoo ignore others"],
            public_url=url,
        )
    return _row("public_url", "Unsubscribe URL", Status.PASS, f"links point at {url}", [], public_url=url)


def notice_channels(setup: Setup, campaigns: list[m.Campaign]) -> CheckResult:
    """Owners hear about replies only through a channel that reaches them."""
    owners = sorted({c.owner for c in campaigns})
    title = "Notice channel"
    if setup.notify_error or setup.notify is None:
        return _row(
            "notice_channel",
            title,
            Status.FAIL,
            "the notice settings are wrong",
            [setup.notify_error or "no notice settings"],
            owners=owners,
        )
    notify, transport = setup.notify, setup.transport_spec.strip().lower()
    channels = []
    if notify.email:
        channels.append("email")
    if notify.webhook_url:
        channels.append("webhook")
    if notify.slack_url:
        channels.append("slack")
    to_inbox = transport.startswith(("smtp://", "smtp+starttls://", "smtps://"))
    details = [f"owners: {', '.join(owners) or 'none'}; channels: {', '.join(channels) or 'none'}"]
    if "email" in channels and not to_inbox:
        details.append(
            f"notice emails go to the transport {transport.partition(':')[0]}:, not to the owners' inboxes"
        )
    reaching = [c for c in channels if c != "email" or to_inbox]
    if not reaching:
        return _row(
            "notice_channel",
            title,
            Status.FAIL,
            "no notice reaches an owner",
            details,
            owners=owners,
            channels=channels,
        )
    return _row(
        "notice_channel",
        title,
        Status.PASS,
        f"notices reach owners by {', '.join(reaching)}",
        details,
        owners=owners,
        channels=channels,
    )


def notice_outbox(uow: UnitOfWork, now: datetime) -> CheckResult:
    """Notices must leave the outbox: is `replyguard notify` running, and do channels accept?"""
    person = (
        ~select(m.Lead.id).where(m.Lead.id == m.Notice.lead_id, m.Lead.audit_run_id.is_not(None)).exists()
    )
    waiting = uow.session.execute(
        select(func.count(), func.min(m.Notice.created_at)).where(
            m.Notice.workspace_id == uow.workspace_id,
            m.Notice.done_at.is_(None),
            m.Notice.created_at < now - NOTICE_STUCK,
            person,
        )
    ).one()
    given_up = uow.session.scalar(
        select(func.count())
        .select_from(m.NoticeDelivery)
        .where(m.NoticeDelivery.workspace_id == uow.workspace_id, m.NoticeDelivery.state == "failed")
    )
    errors = uow.session.execute(
        select(m.NoticeDelivery.channel, m.NoticeDelivery.last_error)
        .where(
            m.NoticeDelivery.workspace_id == uow.workspace_id,
            m.NoticeDelivery.state == "pending",
            m.NoticeDelivery.attempts > 0,
        )
        .order_by(m.NoticeDelivery.id.desc())
        .limit(3)
    ).all()
    details = []
    if waiting[0]:
        details.append(
            f"{waiting[0]} notices waiting since {waiting[1]:%Y-%m-%d %H:%M} "
            "(is `replyguard notify` running?)"
        )
    if given_up:
        details.append(f"{given_up} deliveries given up (replyguard notify --json shows them)")
    details += [f"retrying {channel}: {error}" for channel, error in errors]
    status = Status.FAIL if waiting[0] or given_up else Status.WARN if errors else Status.PASS
    summary = {
        Status.PASS: "the notice outbox drains",
        Status.WARN: "a notice channel is failing and being retried",
        Status.FAIL: "notices are stuck in the outbox",
    }[status]
    return _row(
        "notice_outbox", "Notice outbox", status, summary, details, stuck=waiting[0], given_up=given_up
    )


def waiting_decisions(uow: UnitOfWork, now: datetime) -> CheckResult:
    """Unknown send outcomes and probable matches hold leads until a person decides."""
    late = now - DECISION_LATE
    unknown = uow.session.execute(
        select(func.count(), func.min(m.Step.updated_at))
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .where(
            m.Step.workspace_id == uow.workspace_id,
            m.Step.state == StepState.UNKNOWN,
            m.Step.updated_at < late,
            _not_canary(),
        )
    ).one()
    probable = uow.session.execute(
        select(func.count(), func.min(m.RescueThread.created_at))
        .join(m.Lead, m.Lead.id == m.RescueThread.lead_id)
        .where(
            m.RescueThread.workspace_id == uow.workspace_id,
            m.RescueThread.kind == ThreadKind.PROBABLE_REPLY,
            m.RescueThread.state != ThreadState.DONE,
            m.RescueThread.created_at < late,
            _not_canary(),
        )
    ).one()
    details = []
    if unknown[0]:
        details.append(
            f"{unknown[0]} unknown send outcomes since {unknown[1]:%Y-%m-%d %H:%M}: did they go out?"
        )
    if probable[0]:
        details.append(f"{probable[0]} probable replies unconfirmed since {probable[1]:%Y-%m-%d %H:%M}")
    status = Status.FAIL if details else Status.PASS
    summary = (
        "decisions are waiting for more than a day" if details else "no decision waits for more than a day"
    )
    if details:
        details.append("see `replyguard threads list`")
    return _row(
        "waiting_decisions",
        "Waiting decisions",
        status,
        summary,
        details,
        unknown_outcomes=unknown[0],
        probable_replies=probable[0],
    )


def worker_running(uow: UnitOfWork, now: datetime) -> CheckResult:
    """Steps long past due and still queued: nothing is sending."""
    overdue = uow.session.execute(
        select(func.count(), func.min(m.Step.due_at))
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .where(
            m.Step.workspace_id == uow.workspace_id,
            m.Step.state == StepState.SCHEDULED,
            m.Step.due_at < now - OVERDUE,
            m.Lead.reply_state == ReplyState.ACTIVE,
            m.Campaign.status == "active",
            _not_canary(),
        )
    ).one()
    if overdue[0]:
        return _row(
            "worker",
            "Worker",
            Status.WARN,
            "steps are overdue",
            [
                f"{overdue[0]} steps due since {overdue[1]:%Y-%m-%d %H:%M} are not sent: "
                "is `replyguard worker` running?"
            ],
            overdue=overdue[0],
        )
    return _row("worker", "Worker", Status.PASS, "nothing is overdue", [], overdue=0)


def canaries(campaigns: list[m.Campaign]) -> CheckResult:
    """The daily audit needs a canary per campaign (or --canary on its command line)."""
    missing = []
    for campaign in campaigns:
        try:
            canary = parse_campaign(campaign.source, trial=False).canary
        except CampaignSpecError:
            canary = None
        if canary is None:
            missing.append(campaign.name)
    if missing:
        return _row(
            "canary",
            "Canary",
            Status.WARN,
            "campaigns without a canary",
            [f"{', '.join(missing)}: `replyguard audit` needs --canary EMAIL"],
            missing=missing,
        )
    return _row("canary", "Canary", Status.PASS, "every campaign has a canary", [], missing=[])


def config_checks(uow: UnitOfWork, setup: Setup, campaign: str | None) -> list[CheckResult]:
    now = uow.clock.now()
    scope = _campaigns(uow, campaign)
    return [
        inbound_sources(uow, scope, now),
        source_polling(uow, now),
        public_url(setup.settings),
        notice_channels(setup, scope),
        notice_outbox(uow, now),
        waiting_decisions(uow, now),
        worker_running(uow, now),
        canaries(scope),
    ]
