"""The relational schema (SQLAlchemy 2 typed models). Portable: SQLite and PostgreSQL.

Every table below `workspaces` carries `workspace_id`; every query filters on it.
Migrations in `replyguard/migrations` create exactly this schema (a test compares them).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy import text as sql_text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Aware datetimes in, aware UTC datetimes out, on every database.

    SQLite has no time zone type: values are stored as naive UTC so that text comparison in
    SQL (`due_at <= :now`) orders them correctly.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the database")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


Id = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Workspace(Base):
    __tablename__ = "workspaces"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    secret: Mapped[str] = mapped_column(String(64))  # keys send keys and Message-IDs
    created_at: Mapped[datetime]


class Product(Base):
    __tablename__ = "products"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))


class Mailbox(Base):
    """A sending identity. Its sender name, daily cap and cap day are its own, shared by every
    campaign that sends from it (set in one place: `replyguard mailbox set`)."""

    __tablename__ = "mailboxes"
    __table_args__ = (UniqueConstraint("workspace_id", "address"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    address: Mapped[str] = mapped_column(String(320))
    from_name: Mapped[str] = mapped_column(String(200))
    daily_cap: Mapped[int]
    timezone: Mapped[str] = mapped_column(String(64))  # the day a daily cap counts in
    #: SMTP connections the mailbox may have open at once, over a worker's send slots (None:
    #: as many as there are slots), and emails it may hand over in any minute (None: no limit).
    max_connections: Mapped[int | None]
    per_minute: Mapped[int | None]
    # "paused": a server refused the mailbox itself (credentials, sender, relaying): nothing is
    # claimed from it until a person resumes it.
    status: Mapped[str] = mapped_column(String(20), default="active")
    paused_reason: Mapped[str | None] = mapped_column(Text)
    paused_at: Mapped[datetime | None]
    # A connected account (`replyguard mailbox add`): its own SMTP submission server and IMAP
    # source, as URLs without a password, and its passwords encrypted (a Fernet token of a
    # JSON object, adapters/secret_box.py). None: the process's default transport sends for it.
    smtp_url: Mapped[str | None] = mapped_column(String(500))
    imap_url: Mapped[str | None] = mapped_column(String(500))
    #: The folders the poller watches (by default the IMAP URL's folder, INBOX).
    imap_folders: Mapped[list[str] | None] = mapped_column(JSON)
    sent_folder: Mapped[str | None] = mapped_column(String(200))
    secret: Mapped[str | None] = mapped_column(Text)
    connected_at: Mapped[datetime | None]
    # Connected by OAuth2 ("google", "microsoft"; `secret` then holds the grant's tokens): when
    # its access token expires, and when the provider refused the grant (the mailbox is then
    # paused until a person connects it again). Who connected it hears of a revoked grant.
    oauth_provider: Mapped[str | None] = mapped_column(String(20))
    token_expires_at: Mapped[datetime | None]
    grant_revoked_at: Mapped[datetime | None]
    connected_by: Mapped[str | None] = mapped_column(String(320))


class Campaign(Base):
    __tablename__ = "campaigns"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"), index=True)
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    owner: Mapped[str] = mapped_column(String(320))
    timezone: Mapped[str] = mapped_column(String(64))
    window_days: Mapped[str] = mapped_column(String(40))  # "mon,tue,wed"
    window_start: Mapped[str] = mapped_column(String(5))
    window_end: Mapped[str] = mapped_column(String(5))
    status: Mapped[str] = mapped_column(String(20), default="active")
    source: Mapped[str] = mapped_column(Text)  # the TOML it was created from
    created_at: Mapped[datetime]


class CampaignStep(Base):
    __tablename__ = "campaign_steps"
    __table_args__ = (UniqueConstraint("campaign_id", "position"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"))
    position: Mapped[int]
    wait_seconds: Mapped[int]  # the whole wait (a day counted as 86,400 seconds)
    wait_days: Mapped[int] = mapped_column(Integer, default=0)  # how much of it is calendar days
    subject: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    approval: Mapped[bool] = mapped_column(Boolean, default=False)
    retired_at: Mapped[datetime | None]  # removed by `campaign update`: not for new enrollments


class Contact(Base):
    __tablename__ = "contacts"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    first_name: Mapped[str] = mapped_column(String(200), default="")
    last_name: Mapped[str] = mapped_column(String(200), default="")
    company: Mapped[str] = mapped_column(String(300), default="")
    title: Mapped[str] = mapped_column(String(300), default="")
    timezone: Mapped[str | None] = mapped_column(String(64))
    owner: Mapped[str | None] = mapped_column(String(320))
    fields: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime]


class ContactAddress(Base):
    __tablename__ = "contact_addresses"
    __table_args__ = (UniqueConstraint("workspace_id", "address"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    contact_id: Mapped[int] = mapped_column(ForeignKey("contacts.id"), index=True)
    address: Mapped[str] = mapped_column(String(320))  # normalised, lower case
    domain: Mapped[str] = mapped_column(String(255), index=True)
    is_primary: Mapped[bool] = mapped_column(Boolean, default=False)


class Lead(Base):
    """A contact in one product's context. Holds THE reply state (invariant 1)."""

    __tablename__ = "leads"
    __table_args__ = (
        UniqueConstraint("contact_id", "product_id"),
        # The few leads of a product that wait (held, away): the campaign page's "held" queue.
        Index("ix_leads_product_state", "product_id", "reply_state"),
        # A run's canary leads, found by the audit. Partial: the index holds only canaries, so
        # the worker's claim (`audit_run_id IS NULL`) can never be planned through it. Without
        # statistics (a campaign imported a moment ago) PostgreSQL did exactly that: a bitmap
        # scan of every lead for every due step, 308 ms per claim of 20 at 1,500 leads.
        Index(
            "ix_leads_audit_run_id",
            "audit_run_id",
            postgresql_where=sql_text("audit_run_id IS NOT NULL"),
            sqlite_where=sql_text("audit_run_id IS NOT NULL"),
        ),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    contact_id: Mapped[int] = mapped_column(ForeignKey("contacts.id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"), index=True)
    reply_state: Mapped[str] = mapped_column(String(20), default="active")
    reply_state_updated_at: Mapped[datetime]
    # No foreign key: leads and replies reference each other, and a cycle of constraints
    # cannot be created portably (SQLite has no ALTER TABLE ADD CONSTRAINT).
    last_reply_id: Mapped[int | None] = mapped_column(Id)
    paused_until: Mapped[datetime | None]
    hold_reason: Mapped[str | None] = mapped_column(Text)
    # Set on the audit's canary leads only (`replyguard audit`): the run that created them.
    # The worker's normal claim, the notifier, thread lists and config checks leave them out.
    # No foreign key: added to a populated table, and SQLite cannot add one without a copy.
    audit_run_id: Mapped[int | None] = mapped_column(Id)
    created_at: Mapped[datetime]


class Enrollment(Base):
    __tablename__ = "enrollments"
    __table_args__ = (
        UniqueConstraint("lead_id", "campaign_id"),
        # A campaign's enrolled leads in lead order: the campaign page's lead picker reads
        # its first 200 and stops (queries/campaigns.lead_choices).
        Index("ix_enrollments_campaign_lead", "campaign_id", "lead_id"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"))
    # Its own index as well: counting a campaign's enrolments reads it (PostgreSQL keeps one
    # entry per campaign id, deduplicated: 84 pages for 100,000, where the pairs above take 300
    # and the count went to a sequential scan).
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    state: Mapped[str] = mapped_column(String(20), default="active")
    created_at: Mapped[datetime]


class Step(Base):
    """One scheduled email of an enrollment. `send_key` makes a second copy impossible."""

    __tablename__ = "steps"
    __table_args__ = (
        UniqueConstraint("enrollment_id", "position"),
        # The claim's order (due_at, id): steps due at one instant are read in id order.
        Index("ix_steps_due", "state", "due_at", "id"),
        # A lead's steps by state (the reply transaction's cancel reads the first two columns);
        # with sent_at, "the email this reply answers" (a lead's last sent step before it) is
        # one backward step in the index: the campaign page's per-step reply figures.
        Index("ix_steps_lead_state", "lead_id", "state", "sent_at"),
        # The daily cap (claiming) and sends per day (the campaign page) count a mailbox's
        # steps per day and state from this index alone; per campaign through campaign_step_id.
        Index("ix_steps_mailbox_day", "mailbox_id", "send_day", "state", "campaign_step_id"),
        # The campaign page: its queue counted by state and listed in due order from the index
        # alone (a campaign's steps are found through its few campaign_steps rows; `id` breaks
        # ties in due time, so a page is a range of the index: service_layer/queries/campaigns.py).
        Index("ix_steps_campaign_queue", "campaign_step_id", "state", "due_at", "id"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    enrollment_id: Mapped[int] = mapped_column(ForeignKey("enrollments.id"))
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"))
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"))
    campaign_step_id: Mapped[int] = mapped_column(ForeignKey("campaign_steps.id"))
    position: Mapped[int]
    state: Mapped[str] = mapped_column(String(20))
    due_at: Mapped[datetime]
    send_key: Mapped[str] = mapped_column(String(64), unique=True)
    message_id: Mapped[str] = mapped_column(String(300), unique=True)
    to_address: Mapped[str] = mapped_column(String(320))
    # The To name, subject and body are rendered together from one snapshot of the lead's data
    # (at enrollment, again when the data or the campaign changes), so they always agree.
    to_name: Mapped[str] = mapped_column(String(420), default="")
    subject: Mapped[str] = mapped_column(Text)
    # The subject without Re:/AW:/SV:... prefixes: how a reply with a changed thread is found.
    subject_key: Mapped[str] = mapped_column(String(200), index=True)
    body: Mapped[str] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(String(300))
    references: Mapped[str | None] = mapped_column(Text)
    claim_token: Mapped[str | None] = mapped_column(String(32))
    lease_until: Mapped[datetime | None]
    send_day: Mapped[date | None] = mapped_column(Date)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    cancel_reason: Mapped[str | None] = mapped_column(String(40))
    # Set by the reply transaction on a step that was in flight: it must never be retried.
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    crossed: Mapped[bool] = mapped_column(Boolean, default=False)  # went out as a reply came in
    sent_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]


class StepTally(Base):
    """A signed count of steps of a template in a state, written by the database's triggers on
    `steps` (migration 0030): each insert, state move and delete adds its rows, nothing updates
    one, and the count of (template, state) is the sum of its rows. No foreign keys: the rows
    are the triggers' ledger, folded (`service_layer/step_tallies.py`), never joined."""

    __tablename__ = "step_tallies"
    __table_args__ = (Index("ix_step_tallies_template", "workspace_id", "campaign_step_id", "state", "n"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(Id)
    campaign_step_id: Mapped[int] = mapped_column(Id)
    state: Mapped[str] = mapped_column(String(20))
    n: Mapped[int] = mapped_column(Integer)


class OutboundMessage(Base):
    """What was handed to a transport. Written before the call, so an instant reply matches."""

    __tablename__ = "outbound_messages"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    step_id: Mapped[int] = mapped_column(ForeignKey("steps.id"), unique=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"), index=True)
    message_id: Mapped[str] = mapped_column(String(300), unique=True)
    to_address: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20))  # handed | accepted | unknown
    transport_ref: Mapped[str | None] = mapped_column(Text)
    handed_at: Mapped[datetime]
    accepted_at: Mapped[datetime | None]


class Reply(Base):
    __tablename__ = "replies"
    # Replies per day per campaign (the charts) read a window of received_at.
    __table_args__ = (Index("ix_replies_workspace_received", "workspace_id", "received_at"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"), index=True)
    inbound_message_id: Mapped[int | None] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), index=True
    )
    kind: Mapped[str] = mapped_column(String(20))
    from_address: Mapped[str | None] = mapped_column(String(320))
    subject: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    return_date: Mapped[date | None] = mapped_column(Date)
    evidence: Mapped[list[str]] = mapped_column(JSON, default=list)
    # A bounce's reason in sisimai's taxonomy (domain/inbound/bounce_policy.py); None otherwise.
    bounce_reason: Mapped[str | None] = mapped_column(String(30))
    # A soft bounce: does it add up toward a hard one (decided on arrival; None: by its reason).
    bounce_counts: Mapped[bool | None] = mapped_column(Boolean)
    source: Mapped[str] = mapped_column(String(20))  # cli | inbound | api
    received_at: Mapped[datetime]
    recorded_at: Mapped[datetime]


class Suppression(Base):
    __tablename__ = "suppressions"
    __table_args__ = (UniqueConstraint("workspace_id", "address"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    address: Mapped[str] = mapped_column(String(320))
    reason: Mapped[str] = mapped_column(String(40))
    created_at: Mapped[datetime]


class RescueThread(Base):
    """The hand-off of one lead (or one probable reply) to a person: everything needed to act.

    Written in the same transaction as whatever made the lead wait (a reply, a hold, an unknown
    send outcome). A lead has at most one thread that is not done (`service_layer/rescue/threads.py`);
    a probable reply has its own thread, keyed by its inbound message. The conversation itself
    is read from steps, replies and person_sends; the columns here are its latest summary.
    """

    __tablename__ = "threads"
    __table_args__ = (
        Index("ix_threads_workspace_state", "workspace_id", "state"),
        Index("ix_threads_lead_state", "lead_id", "state"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"))
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"), index=True)
    contact_id: Mapped[int] = mapped_column(ForeignKey("contacts.id"))
    mailbox_id: Mapped[int | None] = mapped_column(ForeignKey("mailboxes.id"))
    kind: Mapped[str] = mapped_column(String(30))
    subject: Mapped[str | None] = mapped_column(Text)
    reply_id: Mapped[int | None] = mapped_column(ForeignKey("replies.id"))
    inbound_message_id: Mapped[int | None] = mapped_column(ForeignKey("inbound_messages.id"), index=True)
    step_id: Mapped[int | None] = mapped_column(ForeignKey("steps.id"))
    text: Mapped[str | None] = mapped_column(Text)
    evidence: Mapped[list[str]] = mapped_column(JSON, default=list)
    intent: Mapped[str | None] = mapped_column(String(30))
    intent_data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    next_step: Mapped[str] = mapped_column(Text, default="")
    actions: Mapped[list[str]] = mapped_column(JSON, default=list)
    crossed: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str | None] = mapped_column(Text)
    candidates: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    # The lead's state before the machine handed it over: what "not a reply" restores.
    state_before: Mapped[str | None] = mapped_column(String(20))
    owner: Mapped[str] = mapped_column(String(320))
    assignee: Mapped[str | None] = mapped_column(String(320))
    state: Mapped[str] = mapped_column(String(20), default="open")
    snoozed_until: Mapped[datetime | None]
    # A model's draft (and its reading of the intent), written after commit, never in the
    # reply transaction. None: no model asked; "pending", "done" or "failed".
    model_state: Mapped[str | None] = mapped_column(String(20))
    model_intent: Mapped[str | None] = mapped_column(String(30))
    draft_body: Mapped[str | None] = mapped_column(Text)
    # Moves with every inbound message, decision, answer sent and change of the lead's state
    # (`service_layer/rescue/thread_versions.py`); a person's decision names the version they saw.
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class ThreadChange(Base):
    """What moved a thread's version: the log a refused decision is told ("what changed since")."""

    __tablename__ = "thread_changes"
    __table_args__ = (Index("ix_thread_changes_thread_version", "thread_id", "version"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id"))
    version: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(30))  # message | decision | answer | lead_state | opened
    by: Mapped[str | None] = mapped_column(String(320))
    summary: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[datetime]


class ThreadPresence(Base):
    """Who has a thread open, or is answering it: a short-lived mark, refreshed while they are
    there and read only while it is fresh (no external service)."""

    __tablename__ = "thread_presence"
    __table_args__ = (UniqueConstraint("thread_id", "person"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id"))
    person: Mapped[str] = mapped_column(String(320))
    doing: Mapped[str] = mapped_column(String(20))  # viewing | answering
    seen_at: Mapped[datetime]


class PersonSend(Base):
    """An email a person sent from a rescue thread. `idempotency_key` makes a double submit one
    email; the row is written (state `sending`) before the transport is called."""

    __tablename__ = "person_sends"
    __table_args__ = (UniqueConstraint("workspace_id", "idempotency_key"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    thread_id: Mapped[int] = mapped_column(ForeignKey("threads.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"))
    mailbox_id: Mapped[int] = mapped_column(ForeignKey("mailboxes.id"))
    idempotency_key: Mapped[str] = mapped_column(String(64))
    message_id: Mapped[str] = mapped_column(String(300), unique=True)
    to_address: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    in_reply_to: Mapped[str | None] = mapped_column(Text)
    references: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(20))  # sending | sent | failed | unknown
    sent_by: Mapped[str] = mapped_column(String(320))
    detail: Mapped[str | None] = mapped_column(Text)
    # The thread's version the person answered (None: sent before versions existed).
    thread_version: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]


class Notice(Base):
    """A hand-off notice, and the transactional outbox it is delivered from.

    Written in the same transaction as its thread; delivered after commit by
    `service_layer/rescue/notices.py` to every configured channel (one `notice_deliveries` row each).
    `done_at` is set once no channel has anything left to try.
    """

    __tablename__ = "notices"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    # None for a notice about no lead: an inbound message kept for a person (quarantined, refused).
    lead_id: Mapped[int | None] = mapped_column(ForeignKey("leads.id"), index=True)
    reply_id: Mapped[int | None] = mapped_column(ForeignKey("replies.id"))
    thread_id: Mapped[int | None] = mapped_column(ForeignKey("threads.id"), index=True)
    recipient: Mapped[str] = mapped_column(String(320))
    kind: Mapped[str] = mapped_column(String(30))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    read_at: Mapped[datetime | None]
    done_at: Mapped[datetime | None] = mapped_column(index=True)


class NoticeDelivery(Base):
    """One notice on one channel: retried with backoff until delivered or given up."""

    __tablename__ = "notice_deliveries"
    __table_args__ = (
        UniqueConstraint("notice_id", "channel"),
        Index("ix_notice_deliveries_due", "state", "next_attempt_at"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    notice_id: Mapped[int] = mapped_column(ForeignKey("notices.id"))
    channel: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20), default="pending")  # pending | delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    lease_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None]


class Event(Base):
    """Append-only: the timeline of every state change. Never updated, never deleted."""

    __tablename__ = "events"
    # A kind of event in a time window (a person's actions on threads, for the reply → first
    # action chart) without reading every `step_sent` of the workspace.
    __table_args__ = (Index("ix_events_workspace_kind_at", "workspace_id", "kind", "at"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    lead_id: Mapped[int | None] = mapped_column(ForeignKey("leads.id"), index=True)
    step_id: Mapped[int | None] = mapped_column(ForeignKey("steps.id"))
    kind: Mapped[str] = mapped_column(String(40))
    at: Mapped[datetime]
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The transaction that wrote it: a uuid per UnitOfWork transaction (`uow.py`). Events that
    # share it were committed together — how the audit proves a reply and the cancellation of
    # its steps were one transaction. NULL for events the worker writes on its Core connection.
    tx: Mapped[str | None] = mapped_column(String(32))


class InboundMessage(Base):
    """Every message received, stored raw before anything else (invariant 5).

    Two levels of "the same message": `dedupe_key` (Message-ID and body) makes a re-delivery of
    the same bytes one row; `effect_key` (Message-ID and sender) makes copies that a transport
    changed (a webhook rebuilt from parsed fields, an IMAP and an LMTP copy) one effect — the
    first copy to be applied takes the key, the next is stored with `duplicate_of` pointing at it.
    """

    __tablename__ = "inbound_messages"
    __table_args__ = (
        UniqueConstraint("workspace_id", "dedupe_key"),
        # A unique index rather than a constraint: SQLite adds an index in place, while a new
        # constraint would copy the table (raw messages included) in the migration.
        Index("ux_inbound_messages_effect_key", "workspace_id", "effect_key", unique=True),
        Index("ix_inbound_messages_workspace_status", "workspace_id", "status"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    dedupe_key: Mapped[str] = mapped_column(String(64))
    message_id: Mapped[str | None] = mapped_column(String(998))
    source: Mapped[str] = mapped_column(String(40))
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    received_at: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(20), default="stored")  # domain.inbound.status
    error: Mapped[str | None] = mapped_column(Text)
    #: Processing attempts that failed; at MAX_ATTEMPTS the message is quarantined.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    kind: Mapped[str | None] = mapped_column(String(20))
    lead_id: Mapped[int | None] = mapped_column(ForeignKey("leads.id"))
    processed_at: Mapped[datetime | None]
    #: Imported from a mailbox's past (ingest_raw(history=True)): it only informs unless it
    #: proves to be newer than our first email to the lead (domain/reply_policy.py).
    history: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    sender: Mapped[str | None] = mapped_column(String(320))  # the From address we attribute
    #: The Authentication-Results verdict for the From domain (domain/authentication.py).
    auth: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    effect_key: Mapped[str | None] = mapped_column(String(64))
    # No foreign key to its own table, for the same reason.
    duplicate_of: Mapped[int | None] = mapped_column(Id)


class SenderConfirmation(Base):
    """What a person must confirm before a sender we cannot tie to a lead may change more
    than the lead's own sequence: learning the address as hers, and unsubscribing her."""

    __tablename__ = "sender_confirmations"
    __table_args__ = (Index("ix_sender_confirmations_state", "workspace_id", "state"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"), index=True)
    inbound_message_id: Mapped[int] = mapped_column(ForeignKey("inbound_messages.id"))
    reply_id: Mapped[int | None] = mapped_column(ForeignKey("replies.id"))
    sender: Mapped[str] = mapped_column(String(320))
    learn_address: Mapped[bool] = mapped_column(Boolean)
    unsubscribe: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(20), default="pending")  # pending|confirmed|rejected
    created_at: Mapped[datetime]
    decided_at: Mapped[datetime | None]
    decided_by: Mapped[str | None] = mapped_column(String(320))


class MailboxCursor(Base):
    """Where a mail source has read up to, and which poller may read it now.

    `source_key` is the source URL without its password, plus the folder. `last_uid` only
    moves after the message is stored (invariant 5); a new `uidvalidity` starts it again at 0.
    The lease columns serialize pollers on SQLite; PostgreSQL uses an advisory lock instead
    and writes them only so that people can see who is polling.
    """

    __tablename__ = "mailbox_cursors"
    __table_args__ = (UniqueConstraint("workspace_id", "source_key"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    source_key: Mapped[str] = mapped_column(String(500))
    # IMAP UIDs and UIDVALIDITY are unsigned 32-bit numbers: too big for a signed INTEGER.
    uidvalidity: Mapped[int | None] = mapped_column(BigInteger)
    last_uid: Mapped[int] = mapped_column(BigInteger, default=0)
    #: A history import (`poll --history`): messages up to this UID are history, not replies.
    history_until_uid: Mapped[int | None] = mapped_column(BigInteger)
    #: A folder read again under a new UIDVALIDITY: messages up to `history_until_uid` dated
    #: before this moment (when the cursor last advanced) are old mail that only informs.
    replay_before: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    # Health, for the inbound page and /metrics: the last completed read of the folder, the
    # last error (never with a password: see service_layer/inbound/source_health.py) and how many.
    last_poll_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[datetime | None]
    error_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # The last time a poller reached the folder (a poll round began): a source whose poller
    # runs but cannot log in keeps its lease fresh while this one ages (`audit --config`).
    checked_at: Mapped[datetime | None]


class WebhookNonce(Base):
    """A webhook token already accepted once: the same token again is a replay and is refused.

    Rows older than the freshness window can be deleted, since a request that old is refused
    by its timestamp anyway.
    """

    __tablename__ = "webhook_nonces"
    __table_args__ = (UniqueConstraint("workspace_id", "provider", "nonce"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    provider: Mapped[str] = mapped_column(String(20))
    nonce: Mapped[str] = mapped_column(String(200))
    seen_at: Mapped[datetime] = mapped_column(index=True)


class User(Base):
    """A person who signs in to the web workspace. Belongs to exactly one workspace, so an
    email address is unique across the installation: signing in needs no workspace name."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)  # normalised, lower case
    name: Mapped[str] = mapped_column(String(200), default="")
    password_hash: Mapped[str] = mapped_column(String(200))  # Argon2id, PHC string
    created_at: Mapped[datetime]
    last_login_at: Mapped[datetime | None]
    disabled_at: Mapped[datetime | None]
    # owner | admin | member | readonly (domain/access.py: what each may do)
    role: Mapped[str] = mapped_column(String(20), default="member", server_default="member")
    # Set by an admin's reset: the person chooses their own before anything else.
    must_change_password: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class OAuthRequest(Base):
    """A "Connect with Google/Microsoft" on its way: the person was sent to the provider and is
    expected back at the callback with this state, in this web session, within minutes. The
    PKCE verifier is encrypted like every secret at rest; the state is stored only as SHA-256."""

    __tablename__ = "oauth_requests"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    session_id: Mapped[int] = mapped_column(Id, index=True)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    address: Mapped[str] = mapped_column(String(320))
    provider: Mapped[str] = mapped_column(String(20))
    verifier: Mapped[str] = mapped_column(Text)
    by: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime]


class WebSession(Base):
    """A signed-in browser. The cookie holds a random token; only its SHA-256 is stored, so a
    copy of the database opens no session. `csrf_token` is the form token of this session."""

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)
    # What the person sees in their list of sessions, to recognise one.
    user_agent: Mapped[str | None] = mapped_column(String(200))
    ip: Mapped[str | None] = mapped_column(String(64))
    # Messages shown once on the next page (after a redirect), never carried in the URL.
    flash: Mapped[list[Any] | None] = mapped_column(JSON)


class ApiToken(Base):
    """A workspace's key to the REST API (`Authorization: Bearer`). Shown once at creation;
    stored as SHA-256 (the token is 256 random bits: a slow hash would add nothing)."""

    __tablename__ = "api_tokens"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # enough to recognise it in a list
    created_by: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    scope: Mapped[str] = mapped_column(String(10), default="read", server_default="read")  # read|write|admin
    expires_at: Mapped[datetime | None]
    # The person it acts for (never more than their role; dies with their account); none: the
    # operator's, made at the command line.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), index=True)
    # The token whose credentials made this one: it dies with it (service_layer/workspace/api_tokens.py).
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id"), index=True)


class LoginAttempt(Base):
    """A sign-in attempt: the login rate limit's memory, shared by every web process and kept
    across restarts. Not workspace-scoped: it is written before anyone is known. The account
    is stored as a digest: people type passwords into the email field too."""

    __tablename__ = "login_attempts"
    __table_args__ = (
        Index("ix_login_attempts_account_at", "account_key", "at"),
        Index("ix_login_attempts_ip_at", "ip", "at"),
        Index("ix_login_attempts_account_client_at", "account_key", "client", "at"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    account_key: Mapped[str] = mapped_column(String(64))
    ip: Mapped[str] = mapped_column(String(64))
    # Who tried, for the per-(account, client) wait: "device:<digest>" for a browser that
    # signed in to this account before, "ip:<address>" otherwise.
    client: Mapped[str] = mapped_column(String(80), default="", server_default="")
    succeeded: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[datetime] = mapped_column(index=True)


class LoginDevice(Base):
    """A browser that signed in to an account: its `rg_device` cookie (a random value, kept as
    SHA-256) lets it past the account-wide limit that strangers' failures can raise
    (domain/throttle.py)."""

    __tablename__ = "login_devices"
    __table_args__ = (UniqueConstraint("token_hash", "account_key"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    account_key: Mapped[str] = mapped_column(String(64), index=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    last_used_at: Mapped[datetime]


class AuditRun(Base):
    """One run of `replyguard audit`: the six checks on a campaign, or the setup checks
    (`--config`). `results` holds every row with its evidence, as printed; the history (CLI
    and, later, the web page) reads it through `service_layer/audit/run.py: audit_history`."""

    __tablename__ = "audit_runs"
    __table_args__ = (
        Index("ix_audit_runs_workspace_started", "workspace_id", "started_at"),
        # One run started from the browser at a time per workspace: a second click (another
        # tab, a colleague) finds this index taken and is shown the run already going.
        Index(
            "uq_audit_runs_one_web_run",
            "workspace_id",
            unique=True,
            sqlite_where=sql_text("started_by IS NOT NULL AND status = 'running'"),
            postgresql_where=sql_text("started_by IS NOT NULL AND status = 'running'"),
        ),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    kind: Mapped[str] = mapped_column(String(20))  # campaign | config
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaigns.id"))
    campaign: Mapped[str | None] = mapped_column(String(200))
    canary: Mapped[str | None] = mapped_column(String(320))
    status: Mapped[str] = mapped_column(String(20))  # running | passed | failed | error
    # {"rows": [CheckResult.to_json()...], "canaries": [...], "emails": [...]}
    results: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    #: The person who started it from the web page (None: the command line or cron).
    started_by: Mapped[str | None] = mapped_column(String(320))
    #: What a running audit is doing now, and since when (the page's progress; a web run whose
    #: stage has not moved for STALLED_AFTER is taken as interrupted).
    stage: Mapped[str | None] = mapped_column(String(200))
    stage_at: Mapped[datetime | None]
