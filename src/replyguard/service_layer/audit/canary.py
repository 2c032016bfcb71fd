"""Which address the audit writes to, and why it refuses some.

The canary is an address the team owns: `--canary EMAIL`, or `canary = "..."` in the
campaign's TOML. Each run enrolls fresh plus-addresses of it (`domain/audit.canary_address`),
so runs never share a lead and a daily cron keeps a readable history.
"""

from __future__ import annotations

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import InvalidAddress, UnsafeHeaderValue, base_address, normalize_address
from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.service_layer.workspace.leads import contact_for_address


class AuditSetupError(ValueError):
    """The audit cannot run as asked (no canary, a canary that is a lead, a paused campaign, a
    first email that did not go out). One line for a person; the run is recorded as an error."""


def campaign_canary(uow: UnitOfWork, campaign_name: str, given: str | None) -> str:
    """The canary for this run: `given` (--canary) first, else the campaign file's `canary`."""
    if given:
        try:
            return normalize_address(given)
        except (InvalidAddress, UnsafeHeaderValue) as exc:
            raise AuditSetupError(f"--canary: {exc}") from exc
    campaign = find_campaign(uow, campaign_name)
    try:
        configured = parse_campaign(campaign.source, trial=False).canary
    except CampaignSpecError:
        configured = None
    if configured is None:
        raise AuditSetupError(
            f"campaign {campaign_name!r} has no canary: pass --canary EMAIL (an address the team "
            'owns) or set canary = "..." in its campaign file'
        )
    return configured


def check_canary(uow: UnitOfWork, base: str) -> None:
    """Refuse a canary that is not plainly the team's own, unread address.

    - an address of a contact (a prospect): the audit would write to and stop a real lead;
    - a sending mailbox itself: our own canary emails would come back through that mailbox's
      inbound source and be read as replies (docs/audit.md, "Choosing the canary").
    """
    address = normalize_address(base)
    mailboxes = uow.session.scalars(
        select(m.Mailbox.address).where(m.Mailbox.workspace_id == uow.workspace_id)
    ).all()
    if base_address(address) in {base_address(a) for a in mailboxes}:
        raise AuditSetupError(
            f"canary {address} is a sending mailbox: replyguard would read its own canary emails "
            "there as replies. Use an address the team owns that replyguard does not read"
        )
    contact = contact_for_address(uow, address)
    if contact is None:
        return
    prospect = uow.session.scalar(
        select(m.Lead.id).where(m.Lead.contact_id == contact.id, m.Lead.audit_run_id.is_(None)).limit(1)
    )
    if prospect is not None:
        raise AuditSetupError(
            f"canary {address} is the address of a lead (contact {contact.id}): the audit never "
            "writes to a prospect. Use an address the team owns"
        )
