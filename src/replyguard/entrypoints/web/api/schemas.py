"""The REST API's public contract: pydantic models.

A response that shows a read model is generated from its dataclass (`@shows(ReadModel)`): the
field names, their order and their types come from the one dataclass the service layer fills, so
a rename there is a rename here — never a copy that drifts. A class body adds only what a client
reads beyond the type (a description, a nested API model where the read model keeps a tuple)
and `omit` names what the API does not show. Request bodies and the few answers the API puts
together itself are written out below. tests/web/test_api_contract.py keeps the OpenAPI
document as clients know it."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from functools import reduce
from operator import or_
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from replyguard.adapters import imap_check
from replyguard.domain import drafts, leads_csv, next_step
from replyguard.entrypoints.web.params import BodyId
from replyguard.service_layer.queries import (
    campaigns,
    charts,
    inbound,
    leads,
    mailboxes,
    thread_page,
    threads,
)
from replyguard.service_layer.rescue import decision_base, person_send, replan
from replyguard.service_layer.workspace import api_tokens, enrollment
from replyguard.service_layer.workspace import campaigns as campaign_files
from replyguard.service_layer.workspace import leads as lead_imports

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Model(BaseModel):
    model_config = ConfigDict(from_attributes=True)


#: Each read model's API model, so that a read model inside another is shown by its own.
_SHOWN: dict[type, type[BaseModel]] = {}


def shows(read_model: type, *, omit: frozenset[str] = frozenset()) -> Callable[[type[M]], type[M]]:
    """The API model of `read_model`: every field of the dataclass but `omit`, in its order,
    with its type (nested read models by their API models, tuples as lists); a field the class
    body declares keeps the body's type and Field. A declared or omitted name the dataclass lacks
    is an error at import."""

    def build(declared: type[M]) -> type[M]:
        names = [f.name for f in dataclasses.fields(read_model)]
        unknown = (set(declared.model_fields) | omit) - set(names)
        if unknown:
            raise TypeError(f"{declared.__name__}: {sorted(unknown)} not in {read_model.__qualname__}")
        hints = typing.get_type_hints(read_model)
        fields: dict[str, Any] = {}
        for name in names:
            if name in omit:
                continue
            if name in declared.model_fields:
                info = declared.model_fields[name]
                fields[name] = (info.annotation, info)
            else:
                fields[name] = (_api_type(hints[name]), ...)
        base: type[BaseModel] = declared.__mro__[1]
        model: type[BaseModel] = create_model(
            declared.__name__,
            __base__=base,
            __module__=__name__,
            __doc__=declared.__doc__,
            **fields,
        )
        _SHOWN[read_model] = model
        return typing.cast(type[M], model)

    return build


def _api_type(hint: Any) -> Any:
    """A read model's field type as the API shows it."""
    if hint in _SHOWN:
        return _SHOWN[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return list[_api_type(args[0])]  # type: ignore[misc]
    if origin is list:
        return list[_api_type(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[_api_type(args[0]), _api_type(args[1])]  # type: ignore[misc]
    if origin in (types.UnionType, typing.Union):
        return reduce(or_, (_api_type(a) for a in args))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        raise TypeError(f"{hint.__qualname__} is shown before its API model is defined")
    return hint


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


@shows(campaigns.CampaignRow)
class CampaignRow(Model):
    pass


@shows(campaigns.StepTemplate)
class StepTemplate(Model):
    pass


@shows(campaigns.CampaignDetail)
class Campaign(Model):
    source: str = Field(description="The TOML the campaign was created from")
    queue: dict[str, int] = Field(description="Steps per queue state")


@shows(campaigns.QueueRow)
class QueueRow(Model):
    pass


@shows(campaigns.CancelReasons)
class CancelReasons(Model):
    pass


@shows(campaigns.DaySends)
class DaySends(Model):
    pass


@shows(campaigns.SendsPerDay)
class SendsPerDay(Model):
    pass


@shows(charts.DayKinds)
class DayKinds(Model):
    pass


@shows(charts.CampaignActivity)
class CampaignActivity(Model):
    pass


class CampaignSource(BaseModel):
    toml: str = Field(
        min_length=1, max_length=200_000, description="A campaign file (see examples/campaign.toml)"
    )


@shows(campaign_files.CampaignCreated, omit=frozenset({"mailbox", "from_name", "daily_cap", "cap_timezone"}))
class CampaignCreated(Model):
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


@shows(enrollment.EnrollReport)
class Enrolled(Model):
    skipped: list[Skipped]


class LeadsBulk(BaseModel):
    """The Leads page's bulk form: people (contact ids, `LeadRow.contact_id`) and what to do."""

    action: Literal["enroll", "stop", "assign"]
    people: list[BodyId] = Field(min_length=1, max_length=500, description="contact ids")
    campaign: str | None = Field(default=None, max_length=200, description="enroll: the campaign")
    product: str | None = Field(default=None, max_length=200, description="stop: only this product")
    owner: str | None = Field(default=None, max_length=320, description="assign: a user's address")


class LeadsBulkDone(BaseModel):
    changed: int = Field(description="enrolled leads, stopped leads or assigned people")
    already: int = Field(default=0, description="enroll: leads already in the campaign")
    skipped: list[Skipped]


@shows(leads_csv.RowError)
class RowError(Model):
    pass


@shows(lead_imports.ImportReport)
class Imported(Model):
    pass


@shows(leads.LeadRow)
class LeadRow(Model):
    pass


@shows(leads.ProductLead)
class ProductLead(Model):
    pass


@shows(leads.ContactInfo)
class Contact(Model):
    pass


@shows(leads.LeadStep)
class LeadStep(Model):
    pass


@shows(leads.TimelineEntry)
class TimelineEntry(Model):
    pass


@shows(leads.LeadDetail)
class Lead(Model):
    pass


@shows(inbound.InboundRow)
class InboundRow(Model):
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


@shows(inbound.SuppressionRow)
class Suppression(Model):
    pass


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


@shows(api_tokens.TokenView, omit=frozenset({"user_id"}))
class Token(Model):
    scope: str = Field(description="read, write or admin")
    user: str | None = Field(description="the person it acts for; none: the operator's")
    parent_id: int | None = Field(description="the token that made it: it dies with it")


@shows(threads.InboxRow)
class ThreadRow(Model):
    state: str = Field(description="open, snoozed or done (a snooze whose time came is open)")
    actions: list[str] = Field(description="The decisions that fit now (POST .../decisions)")
    first_line: str = Field(description="The first line of what they wrote (quotes left out)")


@shows(next_step.OtherProduct)
class OtherProduct(BaseModel):
    pass


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


@shows(drafts.Draft)
class Draft(BaseModel):
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


@shows(replan.PlannedStep)
class PlannedStep(Model):
    pass


@shows(thread_page.HistoryEntry)
class HistoryEntry(Model):
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


@shows(decision_base.DecisionResult)
class DecisionOut(BaseModel):
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


@shows(person_send.SendResult)
class AnswerSent(BaseModel):
    state: str = Field(description="sent, sending (another request is sending it), failed or unknown")
    duplicate: bool = Field(description="True: this answer was sent (or is being sent) already")


class RetryResult(BaseModel):
    inbound_id: int
    status: str
    kind: str | None
    detail: str


@shows(mailboxes.MailboxRow)
class Mailbox(Model):
    smtp: str | None = Field(
        description="its own SMTP server, without a password; none: the default transport"
    )
    imap: str | None = Field(description="its own IMAP account, without a password")
    folders: list[str] = Field(description="the IMAP folders watched for replies")
    password_stored: bool = Field(description="a password is stored, encrypted (it is never shown)")
    oauth: str | None = Field(
        default=None, description="connected by OAuth2: google or microsoft (its tokens are never shown)"
    )
    grant_refused: bool = Field(
        default=False, description="the provider refused the OAuth2 grant: connect the mailbox again"
    )


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
    max_connections: int | None = Field(
        default=None, ge=0, le=100_000, description="most SMTP connections open at once; 0: no limit"
    )
    per_minute: int | None = Field(
        default=None, ge=0, le=100_000, description="most emails in any minute; 0: no limit"
    )


class MailboxSettingsChange(BaseModel):
    """A mailbox's own settings, for every campaign that sends from it; what is left out stays."""

    model_config = ConfigDict(extra="forbid")
    from_name: str | None = Field(default=None, max_length=200)
    daily_cap: int | None = Field(default=None, ge=1, le=1_000_000)
    timezone: str | None = Field(
        default=None, max_length=64, description="the zone whose days the cap counts"
    )
    max_connections: int | None = Field(
        default=None, ge=0, le=100_000, description="most SMTP connections open at once; 0: no limit"
    )
    per_minute: int | None = Field(
        default=None, ge=0, le=100_000, description="most emails in any minute; 0: no limit"
    )


@shows(imap_check.Check)
class MailboxCheck(Model):
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


@shows(charts.FirstAction)
class FirstAction(BaseModel):
    acted: int = Field(description="Replies whose thread a person acted on")
    waiting: int = Field(description="Replies still waiting for a first action")
    buckets: list[Bucket]
