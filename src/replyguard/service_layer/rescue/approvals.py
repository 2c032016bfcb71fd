"""Approving steps from the campaign page or the API: by step, by position, or all waiting.

Every approval goes through `actions.approve_steps` (the lead lock, the re-read, the event);
this module only turns a campaign id and step ids into its terms, within the workspace.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.states import StepState
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.rescue.actions import approve_steps
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.leads import primary_address


def approve_in_campaign(
    uow: UnitOfWork,
    campaign_id: int,
    *,
    approver: str,
    step_ids: Iterable[int] | None = None,
    position: int | None = None,
) -> int:
    """Approve waiting steps of the campaign: the given ones (others, and ids that are not
    this campaign's waiting steps, are ignored), or every one at `position`, or all. Returns
    how many were approved. The caller commits."""
    campaign = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.id == campaign_id, m.Campaign.workspace_id == uow.workspace_id)
    )
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id}")
    if step_ids is None:
        return approve_steps(uow, campaign.name, position=position, approver=approver)
    wanted = sorted({int(i) for i in step_ids})[:1000]
    rows = uow.session.execute(
        select(m.Step.position, m.Lead.contact_id)
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .join(m.CampaignStep, m.CampaignStep.id == m.Step.campaign_step_id)
        .where(
            m.Step.id.in_(wanted),
            m.Step.workspace_id == uow.workspace_id,
            m.Step.state == StepState.AWAITING_APPROVAL,
            m.CampaignStep.campaign_id == campaign.id,
        )
    ).all()
    return sum(
        approve_steps(
            uow, campaign.name, email=primary_address(uow, contact_id), position=pos, approver=approver
        )
        for pos, contact_id in rows
    )
