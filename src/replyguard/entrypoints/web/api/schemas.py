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
