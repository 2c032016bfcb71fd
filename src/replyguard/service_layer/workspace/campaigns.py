"""Creating and listing campaigns from their TOML file.

A campaign sends from a mailbox whose sender name, daily cap and cap day belong to the mailbox
(`service_layer/workspace/mailboxes.py`). A new mailbox takes them from the file; for an existing one,
a file that states different values is refused with the way to change the mailbox, so a
second campaign can never silently send under the first one's settings.

Every template of a file is trial-rendered once (`check_campaign`), which may spend a whole
render budget per template: that happens before any transaction is open (on SQLite a write
transaction holds the one write lock), and the transaction only parses the file again without
rendering. The entry points read the workspace's custom fields in a read-only unit of work,
call `check_campaign`, then open the write unit of work with the `CheckedCampaign`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_spec import CampaignSpec, CampaignSpecError, parse_campaign
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.mailboxes import MailboxSettings, campaigns_of, disagreements


@dataclass(frozen=True, slots=True)
class CampaignCreated:
    campaign_id: int
    name: str
    product: str
    steps: int
    created: bool  # False: an identical campaign already existed
    mailbox: str = ""
    from_name: str = ""
    daily_cap: int = 0
    cap_timezone: str = ""


@dataclass(frozen=True, slots=True)
class CheckedCampaign:
    """A campaign file whose every template rendered on a sample lead with these custom fields."""

    source: str
    fields: frozenset[str]


def check_campaign(source: str, fields: Iterable[str]) -> CheckedCampaign:
    """Parse the file and trial-render every template (CampaignSpecError naming the first that
    fails). Call it with no transaction open: it may spend a render budget per template."""
    names = frozenset(fields)
    parse_campaign(source, set(names))
    return CheckedCampaign(source, names)


def check_campaign_file(read: Callable[[], UnitOfWork], source: str) -> CheckedCampaign:
    """`check_campaign` with the workspace's custom fields, read in the read-only unit of work
    `read()` opens and closed again before any template is rendered."""
    with read() as uow:
        fields = custom_fields(uow)
    return check_campaign(source, fields)


def spec_of(uow: UnitOfWork, campaign: CheckedCampaign | str) -> CampaignSpec:
    """The spec of a checked file, parsed again inside the transaction without rendering (its
    variables checked against the custom fields as they are now). A plain text (tests, the
    demo's own files) is checked here, inside the transaction."""
    fields = custom_fields(uow)
    if isinstance(campaign, str):
        return parse_campaign(campaign, fields)
    return parse_campaign(campaign.source, fields, trial=False)


def source_of(campaign: CheckedCampaign | str) -> str:
    return campaign if isinstance(campaign, str) else campaign.source


def custom_fields(uow: UnitOfWork) -> set[str]:
    """Custom CSV columns seen in this workspace: usable as template variables."""
    names: set[str] = set()
    for fields in uow.session.scalars(
        select(m.Contact.fields).where(m.Contact.workspace_id == uow.workspace_id)
    ):
        names.update(fields or {})
    return names


def get_or_create_product(uow: UnitOfWork, name: str) -> m.Product:
    product = uow.session.scalar(
        select(m.Product).where(m.Product.workspace_id == uow.workspace_id, m.Product.name == name)
    )
    if product is None:
        product = m.Product(workspace_id=uow.workspace_id, name=name)
        uow.session.add(product)
        uow.session.flush()
    return product


def create_campaign(uow: UnitOfWork, campaign_file: CheckedCampaign | str) -> CampaignCreated:
    spec = spec_of(uow, campaign_file)
    source = source_of(campaign_file)
    existing = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.workspace_id == uow.workspace_id, m.Campaign.name == spec.name)
    )
    if existing is not None:
        if existing.source == source:
            return _created(uow, existing, spec, created=False)
        raise CampaignSpecError(
            f"campaign.name: a different campaign named {spec.name!r} already exists; to change it,"
            " run `replyguard campaign update FILE` (it shows what changes and asks first)"
        )
    product = get_or_create_product(uow, spec.product)
    mailbox = mailbox_for(uow, spec)
    campaign = m.Campaign(
        workspace_id=uow.workspace_id,
        product_id=product.id,
        mailbox_id=mailbox.id,
        name=spec.name,
        owner=spec.owner,
        timezone=spec.timezone,
        window_days=",".join(spec.window.day_names()),
        window_start=spec.window.start.strftime("%H:%M"),
        window_end=spec.window.end.strftime("%H:%M"),
        status="active",
        source=source,
        created_at=uow.clock.now(),
    )
    uow.session.add(campaign)
    uow.session.flush()
    for step in spec.steps:
        uow.session.add(
            m.CampaignStep(
                workspace_id=uow.workspace_id,
                campaign_id=campaign.id,
                position=step.position,
                wait_seconds=int(step.wait.nominal.total_seconds()),
                wait_days=step.wait.days,
                subject=step.subject,
                body=step.body,
                approval=step.approval,
            )
        )
    uow.add_event("campaign_created", campaign=spec.name, product=spec.product, steps=len(spec.steps))
    return _created(uow, campaign, spec, created=True)


def _created(uow: UnitOfWork, campaign: m.Campaign, spec: CampaignSpec, *, created: bool) -> CampaignCreated:
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    return CampaignCreated(
        campaign.id,
        spec.name,
        spec.product,
        len(spec.steps),
        created,
        mailbox.address,
        mailbox.from_name,
        mailbox.daily_cap,
        mailbox.timezone,
    )


def mailbox_for(uow: UnitOfWork, spec: CampaignSpec) -> m.Mailbox:
    """The campaign's mailbox: created from the file's settings, or checked against them."""
    mailbox = uow.session.scalar(
        select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == spec.mailbox)
    )
    if mailbox is None:
        for key, value in (("from_name", spec.from_name), ("daily_cap", spec.daily_cap)):
            if value is None:
                raise CampaignSpecError(
                    f"campaign.{key}: missing; the mailbox {spec.mailbox} is new, so say its {key}"
                    " here or in a [mailbox] table"
                )
        assert spec.from_name is not None and spec.daily_cap is not None
        mailbox = m.Mailbox(
            workspace_id=uow.workspace_id,
            address=spec.mailbox,
            from_name=spec.from_name,
            daily_cap=spec.daily_cap,
            timezone=spec.mailbox_timezone or spec.timezone,
            status="active",
        )
        uow.session.add(mailbox)
        uow.session.flush()
        return mailbox
    check_agrees_with_mailbox(uow, mailbox, spec)
    return mailbox


_OPTION = {"from_name": "--from-name", "daily_cap": "--daily-cap", "timezone": "--timezone"}
_WHERE = {
    "from_name": "campaign.from_name",
    "daily_cap": "campaign.daily_cap",
    "timezone": "mailbox.timezone",
}


class MailboxDisagrees(CampaignSpecError):
    """A file states mailbox settings that differ from the existing mailbox's: every one of
    them at once (`differ`: {name: (the mailbox's, the file's)}). The message is the CLI's;
    the web words its own from the fields (`entrypoints/web/pages/campaign_new.py`)."""

    def __init__(self, mailbox: str, differ: dict[str, tuple[Any, Any]], shared_with: list[str]) -> None:
        self.mailbox, self.differ, self.shared_with = mailbox, differ, shared_with
        shared = (
            f" (shared with campaign(s) {', '.join(repr(u) for u in shared_with)})" if shared_with else ""
        )
        said = "; ".join(
            f"{_WHERE[key]}: this file says {stated!r}, but the mailbox {mailbox} has {current!r}"
            for key, (current, stated) in differ.items()
        )
        names = " and ".join(differ)
        options = " ".join(
            f"{_OPTION[key]} {shlex.quote(str(stated))}" for key, (_c, stated) in differ.items()
        )
        one = "it" if len(differ) == 1 else "them"
        super().__init__(
            f"{said}{shared}. A mailbox has one {names} for all its campaigns: change {one} with"
            f" `replyguard mailbox set {mailbox} {options}`, or leave {names} out of this file"
        )


def check_agrees_with_mailbox(uow: UnitOfWork, mailbox: m.Mailbox, spec: CampaignSpec) -> None:
    """Refuse a file whose mailbox settings differ from the mailbox's, naming every one with
    both values, the campaigns that share the mailbox, and how to change it (MailboxDisagrees)."""
    wanted = MailboxSettings(spec.from_name, spec.daily_cap, spec.mailbox_timezone)
    differ = disagreements(mailbox, wanted)
    if differ:
        users = [n for n in campaigns_of(uow, mailbox.id) if n != spec.name]
        raise MailboxDisagrees(mailbox.address, differ, users)


def find_campaign(uow: UnitOfWork, name: str) -> m.Campaign:
    campaign = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.workspace_id == uow.workspace_id, m.Campaign.name == name)
    )
    if campaign is None:
        known = uow.session.scalars(
            select(m.Campaign.name).where(m.Campaign.workspace_id == uow.workspace_id)
        ).all()
        raise LookupError(f"no campaign named {name!r} (known: {', '.join(known) or 'none'})")
    return campaign


def check_position(uow: UnitOfWork, campaign: m.Campaign, position: int) -> None:
    """Raise LookupError, naming the campaign's step positions, unless it has a step `position`
    (a step removed by `campaign update` still counts: its leads may have one)."""
    positions = sorted(
        uow.session.scalars(select(m.CampaignStep.position).where(m.CampaignStep.campaign_id == campaign.id))
    )
    if position not in positions:
        raise LookupError(
            f"campaign {campaign.name!r} has no step {position} (its steps: {', '.join(map(str, positions))})"
        )


def list_campaigns(uow: UnitOfWork) -> list[dict[str, Any]]:
    """What `campaign list` prints: each campaign with its mailbox and how far its leads are."""
    result = []
    campaigns = uow.session.scalars(
        select(m.Campaign).where(m.Campaign.workspace_id == uow.workspace_id).order_by(m.Campaign.name)
    ).all()
    for campaign in campaigns:
        mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
        product = uow.session.get_one(m.Product, campaign.product_id)
        enrollments = dict(
            uow.session.execute(
                select(m.Enrollment.state, func.count())
                .where(m.Enrollment.campaign_id == campaign.id)
                .group_by(m.Enrollment.state)
            ).all()
        )
        steps = dict(
            uow.session.execute(
                select(m.Step.state, func.count())
                .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
                .where(m.Enrollment.campaign_id == campaign.id)
                .group_by(m.Step.state)
            ).all()
        )
        result.append(
            {
                "name": campaign.name,
                "product": product.name,
                "status": campaign.status,
                "mailbox": mailbox.address,
                "mailbox_status": mailbox.status,
                "from_name": mailbox.from_name,
                "daily_cap": mailbox.daily_cap,
                "owner": campaign.owner,
                "timezone": campaign.timezone,
                "window": {
                    "days": campaign.window_days.split(","),
                    "start": campaign.window_start,
                    "end": campaign.window_end,
                },
                "steps": uow.session.scalar(
                    select(func.count()).where(
                        m.CampaignStep.campaign_id == campaign.id, m.CampaignStep.retired_at.is_(None)
                    )
                ),
                "enrollments": {str(k): v for k, v in sorted(enrollments.items())},
                "step_states": {str(k): v for k, v in sorted(steps.items())},
            }
        )
    return result
