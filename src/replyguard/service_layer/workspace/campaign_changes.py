"""Changing a running campaign from its edited TOML file (`replyguard campaign update`).

What may change: the window, the leads' default time zone, the owner, the mailbox's sender
name and daily cap (when no other campaign shares the mailbox; otherwise `mailbox set`), and
every step not yet sent: its wait, subject, body and approval; steps may be added at the end
or removed. What may not: the product and the mailbox (a new campaign is the honest way).

Emails already sent are never rewritten. Queued ones are rendered again from the new
templates (`rendering.refresh_enrollment`; a changed email that a person approved waits for
approval again), their due times are planned again from the email before them, a removed
step is skipped in every running enrollment, and an added one is appended to every running
enrollment. `plan_update` computes the changes without writing; `apply_update` writes them
in one transaction and refuses if they are no longer the ones that were shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_spec import CampaignSpec, CampaignSpecError, StepSpec
from replyguard.domain.schedule import load_zone, plan_due
from replyguard.domain.states import Actor, ReplyState, StepState, check_step_move
from replyguard.service_layer.steps import new_step
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaign_status import require_not_archived
from replyguard.service_layer.workspace.campaigns import CheckedCampaign, find_campaign, source_of, spec_of
from replyguard.service_layer.workspace.enrollment import campaign_window, live_steps, step_wait
from replyguard.service_layer.workspace.mailboxes import campaigns_of
from replyguard.service_layer.workspace.rendering import (
    RenderFailed,
    lead_values,
    refresh_enrollment,
    render_texts,
)

_QUEUED = (StepState.SCHEDULED, StepState.AWAITING_APPROVAL)
_SENDABLE = (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE, ReplyState.HELD)


@dataclass(frozen=True, slots=True)
class Change:
    what: str
    before: str
    after: str

    def line(self) -> str:
        return f"{self.what}: {self.before} -> {self.after}"


@dataclass
class CampaignUpdate:
    name: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the changes do to leads
    rendered_again: int = 0


def plan_update(uow: UnitOfWork, source: CheckedCampaign | str) -> CampaignUpdate:
    """The changes `source` makes to its campaign, and what they will do; writes nothing.
    (The entry points pass a `CheckedCampaign`: its templates were trial-rendered before.)"""
    spec = spec_of(uow, source)
    campaign = find_campaign(uow, spec.name)
    require_not_archived(campaign)
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    product = uow.session.get_one(m.Product, campaign.product_id)
    if spec.product != product.name:
        raise CampaignSpecError(
            f"file.product: the campaign sells {product.name!r}; a campaign cannot move to another product"
        )
    if spec.mailbox != mailbox.address:
        raise CampaignSpecError(
            f"campaign.mailbox: the campaign sends from {mailbox.address}; the mailbox of a running"
            " campaign cannot change (its threads would change sender): create a new campaign"
        )
    update = CampaignUpdate(spec.name)
    _campaign_changes(campaign, spec, update)
    _mailbox_changes(uow, campaign, mailbox, spec, update)
    _step_changes(uow, campaign, spec, update)
    return update


def _campaign_changes(campaign: m.Campaign, spec: CampaignSpec, update: CampaignUpdate) -> None:
    window = f"{','.join(spec.window.day_names())} {spec.window.start:%H:%M}-{spec.window.end:%H:%M}"
    current = f"{campaign.window_days} {campaign.window_start}-{campaign.window_end}"
    for what, before, after in (
        ("window", current, window),
        ("timezone", campaign.timezone, spec.timezone),
        ("owner", campaign.owner, spec.owner),
    ):
        if before != after:
            update.changes.append(Change(what, before, after))


def _mailbox_changes(
    uow: UnitOfWork, campaign: m.Campaign, mailbox: m.Mailbox, spec: CampaignSpec, update: CampaignUpdate
) -> None:
    others = [n for n in campaigns_of(uow, mailbox.id) if n != campaign.name]
    for key, stated, current in (
        ("from_name", spec.from_name, mailbox.from_name),
        ("daily_cap", spec.daily_cap, mailbox.daily_cap),
        ("mailbox timezone", spec.mailbox_timezone, mailbox.timezone),
    ):
        if stated is None or stated == current:
            continue
        if others:
            option = {"from_name": "--from-name", "daily_cap": "--daily-cap"}.get(key, "--timezone")
            raise CampaignSpecError(
                f"campaign.{key.replace('mailbox ', '')}: the mailbox {mailbox.address} is shared with"
                f" campaign(s) {', '.join(repr(o) for o in others)}; change it for all of them with"
                f" `replyguard mailbox set {mailbox.address} {option} {stated}`"
            )
        update.changes.append(Change(f"mailbox {key}", str(current), str(stated)))


def _step_changes(uow: UnitOfWork, campaign: m.Campaign, spec: CampaignSpec, update: CampaignUpdate) -> None:
    current = live_steps(uow, campaign.id)
    for index in range(max(len(current), len(spec.steps))):
        old = current[index] if index < len(current) else None
        new = spec.steps[index] if index < len(spec.steps) else None
        label = f"step {index + 1}"
        if old is None and new is not None:
            update.changes.append(Change(label, "(none)", "added"))
            update.notes.append(f"{label} is appended to every running enrollment")
        elif new is None and old is not None:
            update.changes.append(Change(label, "present", "removed"))
            update.notes.append(
                f"{label} is skipped where it has not been sent ({_sent(uow, old.id)} sent, kept)"
            )
        elif old is not None and new is not None:
            changed = _template_changes(label, old, new)
            update.changes += changed
            if changed:
                update.notes.append(
                    f"{label}: {_sent(uow, old.id)} already sent (kept as sent);"
                    " queued ones are rendered again"
                )


def _template_changes(label: str, old: m.CampaignStep, new: StepSpec) -> list[Change]:
    changes = []
    old_wait = step_wait(old)
    if old_wait != new.wait:
        changes.append(
            Change(
                f"{label} wait",
                _wait_text(old_wait.days, old_wait.elapsed.total_seconds()),
                _wait_text(new.wait.days, new.wait.elapsed.total_seconds()),
            )
        )
    for what, before, after in (
        ("subject", old.subject, new.subject),
        ("body", old.body, new.body),
        ("approval", old.approval, new.approval),
    ):
        if before != after:
            changes.append(Change(f"{label} {what}", _short(before), _short(after)))
    return changes


def _wait_text(days: int, seconds: float) -> str:
    hours, minutes = divmod(int(seconds) // 60, 60)
    return "".join(f"{n}{u}" for n, u in ((days, "d"), (hours, "h"), (minutes, "m")) if n) or "0d"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 70 else text[:67] + "..."


def _sent(uow: UnitOfWork, campaign_step_id: int) -> int:
    return int(
        uow.session.scalar(
            select(func.count()).where(
                m.Step.campaign_step_id == campaign_step_id,
                m.Step.state.in_([StepState.SENT, StepState.SENDING, StepState.UNKNOWN]),
            )
        )
        or 0
    )


def apply_update(
    uow: UnitOfWork, campaign_file: CheckedCampaign | str, *, shown: list[Change] | None = None
) -> CampaignUpdate:
    """Apply `source` to its campaign in this unit of work (the caller commits). With `shown`,
    refuse if the changes differ from those a person confirmed."""
    update = plan_update(uow, campaign_file)
    if shown is not None and shown != update.changes:
        raise CampaignSpecError("the campaign changed since the differences were shown: run the update again")
    if not update.changes:
        return update
    spec = spec_of(uow, CheckedCampaign(source_of(campaign_file), frozenset()))
    campaign = find_campaign(uow, spec.name)
    now = uow.clock.now()
    _write_campaign(uow, campaign, spec, now)
    enrollments = uow.session.scalars(
        select(m.Enrollment)
        .where(m.Enrollment.campaign_id == campaign.id, m.Enrollment.state == "active")
        .order_by(m.Enrollment.id)
    ).all()
    uow.lock_leads(e.lead_id for e in enrollments)
    replan = any(
        c.what.endswith(("wait", "window", "timezone")) or c.after == "added" for c in update.changes
    )
    for enrollment in enrollments:
        _update_enrollment(uow, campaign, enrollment, now, replan=replan)
        update.rendered_again += refresh_enrollment(uow, enrollment, why="campaign update")
    campaign.source = source_of(campaign_file)
    uow.add_event("campaign_updated", campaign=campaign.name, changes=[c.line() for c in update.changes])
    return update


def _write_campaign(uow: UnitOfWork, campaign: m.Campaign, spec: CampaignSpec, now: datetime) -> None:
    campaign.owner, campaign.timezone = spec.owner, spec.timezone
    campaign.window_days = ",".join(spec.window.day_names())
    campaign.window_start = spec.window.start.strftime("%H:%M")
    campaign.window_end = spec.window.end.strftime("%H:%M")
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    mailbox.from_name = spec.from_name or mailbox.from_name
    mailbox.daily_cap = spec.daily_cap or mailbox.daily_cap
    mailbox.timezone = spec.mailbox_timezone or mailbox.timezone
    current = live_steps(uow, campaign.id)
    top = uow.session.scalar(
        select(func.max(m.CampaignStep.position)).where(m.CampaignStep.campaign_id == campaign.id)
    )
    for index, new in enumerate(spec.steps):
        if index < len(current):
            step = current[index]
        else:
            top = (top or 0) + 1
            step = m.CampaignStep(workspace_id=uow.workspace_id, campaign_id=campaign.id, position=top)
            uow.session.add(step)
        step.wait_seconds, step.wait_days = int(new.wait.nominal.total_seconds()), new.wait.days
        step.subject, step.body, step.approval = new.subject, new.body, new.approval
    for step in current[len(spec.steps) :]:
        step.retired_at = now
    uow.session.flush()


def _update_enrollment(
    uow: UnitOfWork, campaign: m.Campaign, enrollment: m.Enrollment, now: datetime, *, replan: bool
) -> None:
    """Bring one running enrollment to the campaign's steps: skip removed ones, append added
    ones, follow approval changes, and plan the queued ones' due times again."""
    templates = {
        s.id: s
        for s in uow.session.scalars(select(m.CampaignStep).where(m.CampaignStep.campaign_id == campaign.id))
    }
    steps = list(
        uow.session.scalars(
            select(m.Step).where(m.Step.enrollment_id == enrollment.id).order_by(m.Step.position)
        )
    )
    for step in steps:
        template = templates[step.campaign_step_id]
        if step.state not in _QUEUED:
            continue
        if template.retired_at is not None:
            check_step_move(StepState(step.state), StepState.SKIPPED, Actor.PERSON)
            step.state, step.updated_at = StepState.SKIPPED, now
            uow.add_event("step_skipped", lead_id=step.lead_id, step_id=step.id, by="campaign update")
        elif template.approval and step.state == StepState.SCHEDULED:
            step.state = StepState.AWAITING_APPROVAL
        elif not template.approval and step.state == StepState.AWAITING_APPROVAL:
            step.state = StepState.SCHEDULED
    present = {s.campaign_step_id for s in steps}
    added = [t for t in live_steps(uow, campaign.id) if t.id not in present]
    lead = uow.session.get_one(m.Lead, enrollment.lead_id)
    # A lead a person owns now (replied, stopped...) gets nothing new: only a person brings
    # its sequence back.
    if added and ReplyState(lead.reply_state) in _SENDABLE:
        _append(uow, campaign, enrollment, steps, added, now)
    if replan:
        _replan(uow, campaign, enrollment, steps, templates)


def _append(
    uow: UnitOfWork,
    campaign: m.Campaign,
    enrollment: m.Enrollment,
    steps: list[m.Step],
    added: list[m.CampaignStep],
    now: datetime,
) -> None:
    lead = uow.session.get_one(m.Lead, enrollment.lead_id)
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    try:
        texts = render_texts(added, lead_values(uow, contact, campaign.owner))
    except RenderFailed as exc:
        uow.add_event("steps_not_added", lead_id=lead.id, campaign=campaign.name, why=str(exc))
        return
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    address = steps[0].to_address
    for template, text in zip(added, texts, strict=True):
        position = len(steps) + 1
        step = new_step(uow, enrollment, template, position, mailbox, secret, address, text, now)
        uow.session.add(step)
        steps.append(step)
    uow.session.flush()
    uow.add_event("steps_added", lead_id=lead.id, campaign=campaign.name, count=len(added))


def _replan(
    uow: UnitOfWork,
    campaign: m.Campaign,
    enrollment: m.Enrollment,
    steps: list[m.Step],
    templates: dict[int, m.CampaignStep],
) -> None:
    """Due times of queued steps from the email before each (its send time if it went out)."""
    lead = uow.session.get_one(m.Lead, enrollment.lead_id)
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    zone = load_zone(contact.timezone or campaign.timezone)
    window = campaign_window(campaign)
    base = enrollment.created_at
    for step in steps:
        template = templates.get(step.campaign_step_id) or uow.session.get_one(
            m.CampaignStep, step.campaign_step_id
        )
        if step.state in _QUEUED:
            due = plan_due(base, step_wait(template), window, zone)
            if lead.paused_until is not None and due < lead.paused_until:
                due = window.next_open(lead.paused_until, zone)
            step.due_at = due
        if step.state == StepState.SKIPPED:
            continue
        base = step.sent_at or step.due_at
