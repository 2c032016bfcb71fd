"""The REST API's public contract: pydantic models, built from the service layer's read
models (`from_attributes`), so that an internal rename is a visible change here."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from replyguard.entrypoints.web.params import BodyId

T = TypeVar("T")


class Model(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class PageOf(Model, Generic[T]):
    items: list[T]
    page: int
    per_page: int
    has_next: bool


class Me(Model):
    workspace_id: int
    token_id: int
    token_name: str
    scope: str = Field(description="read, write or admin: what the token was given")
    rights: str = Field(description="what it may do now: its scope, never more than its person's role")
    user: str | None = Field(description="the address of the person it acts for; none: the operator's")
    expires_at: datetime | None


class CampaignRow(Model):
    id: int
    name: str
    product: str
    mailbox: str
    owner: str
    status: str
    daily_cap: int
    created_at: datetime
    enrolled: int
    awaiting_approval: int


class StepTemplate(Model):
    position: int
    wait_seconds: int
    subject: str | None
    body: str
    approval: bool


class Campaign(Model):
    id: int
    name: str
    product_id: int
    product: str
    mailbox: str
    from_name: str
    owner: str
    timezone: str
    window_days: list[str]
    window_start: str
    window_end: str
    daily_cap: int
    mailbox_cap: int
    status: str
    created_at: datetime
    source: str = Field(description="The TOML the campaign was created from")
    steps: list[StepTemplate]
    enrolled: int
    queue: dict[str, int] = Field(description="Steps per queue state")


class QueueRow(Model):
    step_id: int
    position: int
    lead_id: int
    to_address: str
    subject: str
    state: str
    due_at: datetime
    sent_at: datetime | None
    cancel_reason: str | None
    crossed: bool
    attempts: int
    last_error: str | None
    lead_state: str


class CancelReasons(Model):
    counts: dict[str, int]
    counted: int
    complete: bool


class DaySends(Model):
    day: date
    campaign: int
    mailbox: int


class SendsPerDay(Model):
    mailbox: str
    mailbox_cap: int
    campaign_cap: int
    days: list[DaySends]


class DayKinds(Model):
    day: date
    replies: int
    out_of_office: int
    bounces: int
    other: int


class CampaignActivity(Model):
    campaign_id: int
    campaign: str
    product: str
    days: list[DayKinds]
    totals: dict[str, int]


class CampaignSource(BaseModel):
    toml: str = Field(
        min_length=1, max_length=200_000, description="A campaign file (see examples/campaign.toml)"
    )


class CampaignCreated(Model):
    campaign_id: int
    name: str
    product: str
    steps: int
    created: bool = Field(description="False: an identical campaign already existed")


class Approve(BaseModel):
    step_ids: list[BodyId] | None = Field(
        default=None, max_length=1000, description="These steps; omit to approve every waiting step"
    )
    position: int | None = Field(default=None, ge=1, description="Only steps at this position")


class Approved(BaseModel):
    approved: int


class CampaignStatus(Model):
    campaign_id: int
    name: str
    status: str = Field(description="active, paused or archived")
    cancelled: int = Field(description="Queued emails cancelled (archiving)")


class StepStats(Model):
    position: int
    sent: int
    replied: int = Field(description="Leads whose human reply came after this step's email")
    out_of_office: int
    bounced: int
    reply_rate: float | None = Field(description="replied / sent, in percent; null before any send")


class Enroll(BaseModel):
    email: str | None = Field(default=None, max_length=320, description="Only this lead; omit for all")


class Skipped(BaseModel):
    email: str
    why: str


class Enrolled(BaseModel):
    enrolled: int
    already: int
    skipped: list[Skipped]


class RowError(BaseModel):
    line: int
    message: str


class Imported(BaseModel):
    created: int
    updated: int
    errors: list[RowError]


class LeadRow(Model):
    lead_id: int
    contact_id: int
    email: str
    name: str
    company: str
    product: str
    reply_state: str
    reply_state_updated_at: datetime


class ProductLead(Model):
    lead_id: int
    product: str
    reply_state: str
    reply_state_updated_at: datetime
    paused_until: datetime | None
    hold_reason: str | None


class Contact(Model):
    contact_id: int
    name: str
    email: str
    alternates: list[str]
    company: str
    title: str
    timezone: str | None
    owner: str | None
    fields: dict[str, Any]


class LeadStep(Model):
    step_id: int
    campaign_id: int
    campaign: str
    position: int
    subject: str
    state: str
    due_at: datetime
    sent_at: datetime | None
    cancel_reason: str | None
    crossed: bool


class TimelineEntry(Model):
    id: int
    at: datetime
    kind: str
    lead_id: int | None
    product: str | None
    actor: str
    summary: str
    step_position: int | None
    data: dict[str, Any]


class Lead(Model):
    lead: ProductLead
    contact: Contact
    other_leads: list[ProductLead]
    steps: list[LeadStep]
    timeline: list[TimelineEntry]


class InboundRow(Model):
    id: int
    received_at: datetime
    status: str
    kind: str | None
    source: str
    message_id: str | None
    sender: str
    subject: str
    error: str | None
    lead_id: int | None
    thread_id: int | None = Field(default=None, description="The rescue thread it opened")


class Header(BaseModel):
    name: str
    value: str


class InboundMessage(BaseModel):
    message: InboundRow
    headers: list[Header]
    text: str
    html: str | None = Field(description="Sanitised HTML; remote images removed unless asked for")
    blocked_images: int
    size: int
    held_lead_ids: list[int]


class Suppression(Model):
    id: int
    address: str
    reason: str
    created_at: datetime


class SourceHealth(Model):
    id: int
    source: str
    last_uid: int
    last_poll_at: datetime | None
    lag_seconds: float | None
    last_error: str | None
    last_error_at: datetime | None
    error_count: int
    polled_by: str | None
    status: str


class Token(Model):
    id: int
    name: str
    prefix: str
    created_by: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    scope: str = Field(description="read, write or admin")
    expires_at: datetime | None
    user: str | None = Field(description="the person it acts for; none: the operator's")
    parent_id: int | None = Field(description="the token that made it: it dies with it")


class ThreadRow(Model):
    id: int
    state: str = Field(description="open, snoozed or done (a snooze whose time came is open)")
    kind: str
    intent: str | None
    intent_label: str | None
    subject: str | None
    product: str
    campaign: str | None
    lead_id: int
    lead: str
    lead_name: str
    company: str
    lead_state: str
    owner: str
    assignee: str | None
    crossed: bool
    recommended_next_step: str
    actions: list[str] = Field(description="The decisions that fit now (POST .../decisions)")
    other_active_products: list[str]
    snoozed_until: datetime | None
    created_at: datetime
    updated_at: datetime
    first_line: str = Field(description="The first line of what they wrote (quotes left out)")


class OtherProduct(BaseModel):
    product: str
    state: str
    next_step_at: datetime | None
    next_subject: str | None


class ConversationItem(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    sender: str = Field(alias="from", description="ours, ours:person:NAME or theirs:KIND")
    at: datetime | None
    subject: str | None
    text: str | None
    message_id: str | None
    crossed: bool


class UnknownStep(BaseModel):
    step_id: int
    position: int
    subject: str | None
    detail: str | None


class Draft(BaseModel):
    subject: str
    body: str
    source: str = Field(description="template, campaign or model")
    note: str = Field(
        "",
        description="set when the campaign's draft template failed: why; the built-in draft is shown",
    )


class PersonSendRow(BaseModel):
    id: int
    state: str
    by: str
    to: str
    subject: str
    message_id: str
    sent_at: datetime | None


class PlannedStep(BaseModel):
    campaign: str
    position: int
    subject: str
    due_at: datetime
    state: str


class HistoryEntry(Model):
    at: datetime
    kind: str
    by: str | None
    action: str | None
    message: str
    planned: list[PlannedStep]


class ThreadDetail(BaseModel):
    id: int
    url: str
    state: str
    kind: str
    reason: str | None
    intent: str | None
    intent_label: str | None
    intent_detail: dict[str, Any]
    subject: str | None
    product: str
    campaign: str | None
    campaigns: list[str]
    lead_id: int
    lead: str
    lead_name: str
    company: str
    lead_state: str
    mailbox: str | None
    owner: str
    assignee: str | None
    snoozed_until: datetime | None
    crossed: bool
    text: str | None = Field(description="Their new text, quoted history left out")
    evidence: list[str]
    recommended_next_step: str
    actions: list[str]
    other_active_products: list[OtherProduct]
    others_decided: str | None
    candidates: list[dict[str, Any]] = Field(description="A probable reply's candidate leads")
    conversation: list[ConversationItem]
    unknown_steps: list[UnknownStep]
    draft: Draft
    sent_by_people: list[PersonSendRow]
    history: list[HistoryEntry]
    resume_plan: list[PlannedStep] = Field(description="What `resume` would send, and when")
    received_html: str | None = Field(description="Their message's HTML, sanitised (remote images removed)")
    version: int = Field(
        description="Moves with every message, decision, answer and lead change; also the ETag. "
        "Send it back (If-Match or `version`) with a decision or an answer"
    )
    waiting_on_them: bool = Field(description="Answered after their last message: the draft is not offered")
    presence: list[dict[str, Any]] = Field(
        default_factory=list, description="Who else has the thread open or is answering it (fresh marks)"
    )
    created_at: datetime
    updated_at: datetime


class Decision(BaseModel):
    action: str = Field(
        max_length=40,
        description="resume, stop, pause_until, pause_others, leave_others, not_a_reply, confirm, "
        "reject, sent, not_sent, send_again, confirm_sender, reject_sender, resend_step, skip_step, "
        "assign, snooze, done, reopen",
    )
    until: date | None = Field(default=None, description="pause_until, pause_others: a day")
    until_at: datetime | None = Field(default=None, description="snooze: a time (UTC if no zone)")
    to: str | None = Field(default=None, max_length=320, description="assign: a person")
    lead: str | None = Field(default=None, max_length=320, description="confirm: the candidate (id or email)")
    step_id: BodyId | None = Field(default=None, description="unknown outcomes: which step")
    version: int | None = Field(
        default=None,
        ge=0,
        description="The thread's version the person saw (or If-Match); required for a decision "
        "that lets email go out (resume, restart, send_again, resend_step, not_a_reply, reject)",
    )
    confirm: bool = Field(default=False, description="restart: yes, send again to a lead a person stopped")


class Assign(BaseModel):
    to: str = Field(min_length=1, max_length=320)


class Snooze(BaseModel):
    until: datetime = Field(description="The thread comes back open then (UTC if no zone)")


class DecisionOut(BaseModel):
    thread_id: int
    action: str
    message: str
    lead_state: str | None
    planned: list[PlannedStep]
    new_thread_id: int | None
    version: int | None = Field(default=None, description="The thread's version after the decision")


class Answer(BaseModel):
    body: str = Field(min_length=1, max_length=100_000, description="The text, as the person wrote it")
    subject: str | None = Field(default=None, max_length=998, description="Default: Re: the thread's subject")
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=64, description="Default: from the thread, subject and body"
    )
    version: int | None = Field(
        default=None, ge=0, description="The thread's version the person answered (or If-Match); required"
    )
    another: bool = Field(
        default=False, description="Send although someone answered this version already (on purpose)"
    )


class AnswerSent(BaseModel):
    send_id: int
    state: str = Field(description="sent, sending (another request is sending it), failed or unknown")
    message_id: str
    to: str
    duplicate: bool = Field(description="True: this answer was sent (or is being sent) already")
    detail: str


class RetryResult(BaseModel):
    inbound_id: int
    status: str
    kind: str | None
    detail: str


class Mailbox(Model):
    id: int
    address: str
    from_name: str
    daily_cap: int
    timezone: str
    status: str
    paused_reason: str | None
    paused_at: datetime | None
    campaigns: list[str]
    smtp: str | None = Field(
        description="its own SMTP server, without a password; none: the default transport"
    )
    imap: str | None = Field(description="its own IMAP account, without a password")
    folders: list[str] = Field(description="the IMAP folders watched for replies")
    sent_folder: str | None
    password_stored: bool = Field(description="a password is stored, encrypted (it is never shown)")


class MailboxConnect(BaseModel):
    """Connect a mailbox to its own servers; the password is stored encrypted, never returned."""

    model_config = ConfigDict(extra="forbid")
    address: str = Field(max_length=320)
    smtp: str | None = Field(
        default=None, max_length=500, description="smtp+starttls://user@host:587 or smtps://user@host:465"
    )
    imap: str | None = Field(default=None, max_length=500, description="imaps://user@host:993/INBOX")
    password: str | None = Field(default=None, max_length=1000, description="for both servers; write-only")
    folders: list[str] = Field(default_factory=list, max_length=50)
    sent_folder: str | None = Field(default=None, max_length=200)
    from_name: str | None = Field(default=None, max_length=200)
    daily_cap: int | None = Field(default=None, ge=1, le=1_000_000)
    timezone: str | None = Field(default=None, max_length=64)


class MailboxCheck(BaseModel):
    what: str
    ok: bool
    words: str = Field(description="what happened, in words")


class MailboxTest(BaseModel):
    mailbox_id: int
    ok: bool
    checks: list[MailboxCheck]


class MailboxRemoved(BaseModel):
    mailbox_id: int
    result: str = Field(description="removed, or disconnected (campaigns still send from it)")


class Resumed(BaseModel):
    mailbox_id: int
    resumed: bool = Field(description="False: it was not paused")


class AuditRunLine(BaseModel):
    run_id: int
    kind: str
    campaign: str | None
    canary: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None
    failed: list[str]
    error: str | None


class AuditCheck(BaseModel):
    check: str
    title: str
    status: str
    passed: bool
    summary: str
    details: list[str]
    evidence: dict[str, Any]


class AuditRun(BaseModel):
    run_id: int
    kind: str
    campaign: str | None
    canary: str | None
    status: str
    passed: bool
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    checks: list[AuditCheck]
    canaries: list[dict[str, Any]]
    emails: list[dict[str, Any]]


class Bucket(BaseModel):
    label: str
    count: int


class FirstAction(BaseModel):
    campaign_id: int
    campaign: str
    product: str
    acted: int = Field(description="Replies whose thread a person acted on")
    waiting: int = Field(description="Replies still waiting for a first action")
    median_seconds: float | None
    p90_seconds: float | None
    oldest_waiting_seconds: float | None
    buckets: list[Bucket]
