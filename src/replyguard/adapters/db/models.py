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
)
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
    __tablename__ = "mailboxes"
    __table_args__ = (UniqueConstraint("workspace_id", "address"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    address: Mapped[str] = mapped_column(String(320))
    from_name: Mapped[str] = mapped_column(String(200))
    daily_cap: Mapped[int]
    timezone: Mapped[str] = mapped_column(String(64))  # the day a daily cap counts in


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
    daily_cap: Mapped[int]
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
    wait_seconds: Mapped[int]
    subject: Mapped[str | None] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    approval: Mapped[bool] = mapped_column(Boolean, default=False)


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
    __table_args__ = (UniqueConstraint("contact_id", "product_id"),)
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
    created_at: Mapped[datetime]


class Enrollment(Base):
    __tablename__ = "enrollments"
    __table_args__ = (UniqueConstraint("lead_id", "campaign_id"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"))
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    state: Mapped[str] = mapped_column(String(20), default="active")
    created_at: Mapped[datetime]


class Step(Base):
    """One scheduled email of an enrollment. `send_key` makes a second copy impossible."""

    __tablename__ = "steps"
    __table_args__ = (
        UniqueConstraint("enrollment_id", "position"),
        Index("ix_steps_due", "state", "due_at"),
        Index("ix_steps_lead_state", "lead_id", "state"),
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
    inbound_message_id: Mapped[int | None] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"))
    kind: Mapped[str] = mapped_column(String(20))
    from_address: Mapped[str | None] = mapped_column(String(320))
    subject: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    return_date: Mapped[date | None] = mapped_column(Date)
    evidence: Mapped[list[str]] = mapped_column(JSON, default=list)
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


class Notice(Base):
    """A hand-off to a person: everything needed to act on a reply."""

    __tablename__ = "notices"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    lead_id: Mapped[int] = mapped_column(ForeignKey("leads.id"), index=True)
    reply_id: Mapped[int | None] = mapped_column(ForeignKey("replies.id"))
    recipient: Mapped[str] = mapped_column(String(320))
    kind: Mapped[str] = mapped_column(String(30))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    read_at: Mapped[datetime | None]


class Event(Base):
    """Append-only: the timeline of every state change. Never updated, never deleted."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"))
    lead_id: Mapped[int | None] = mapped_column(ForeignKey("leads.id"), index=True)
    step_id: Mapped[int | None] = mapped_column(ForeignKey("steps.id"))
    kind: Mapped[str] = mapped_column(String(40))
    at: Mapped[datetime]
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class InboundMessage(Base):
    """Every message received, stored raw before anything else (invariant 5)."""

    __tablename__ = "inbound_messages"
    __table_args__ = (UniqueConstraint("workspace_id", "dedupe_key"),)
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id"), index=True)
    dedupe_key: Mapped[str] = mapped_column(String(64))
    message_id: Mapped[str | None] = mapped_column(String(998))
    source: Mapped[str] = mapped_column(String(40))
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    received_at: Mapped[datetime]
    status: Mapped[str] = mapped_column(String(20), default="stored")
    error: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str | None] = mapped_column(String(20))
    lead_id: Mapped[int | None] = mapped_column(ForeignKey("leads.id"))
    processed_at: Mapped[datetime | None]


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
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_until: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    # Health, for the inbound page and /metrics: the last completed read of the folder, the
    # last error (never with a password: see service_layer/source_health.py) and how many.
    last_poll_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    last_error_at: Mapped[datetime | None]
    error_count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


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


class LoginAttempt(Base):
    """A sign-in attempt: the login rate limit's memory, shared by every web process and kept
    across restarts. Not workspace-scoped: it is written before anyone is known. The account
    is stored as a digest: people type passwords into the email field too."""

    __tablename__ = "login_attempts"
    __table_args__ = (
        Index("ix_login_attempts_account_at", "account_key", "at"),
        Index("ix_login_attempts_ip_at", "ip", "at"),
    )
    id: Mapped[int] = mapped_column(Id, primary_key=True)
    account_key: Mapped[str] = mapped_column(String(64))
    ip: Mapped[str] = mapped_column(String(64))
    succeeded: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[datetime] = mapped_column(index=True)
