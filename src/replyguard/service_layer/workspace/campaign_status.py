"""Pausing, resuming and archiving a campaign: a person's decision, one transaction each.

The campaign's status is read by the worker's claim (only an active campaign's steps are
claimed) and again right before the hand-over (`send_guard`: a step claimed before the pause
goes back to the queue), so a pause committed is a pause kept: nothing of the campaign is
handed to a transport after it. Archiving also cancels every queued step of the campaign,
under the leads' locks, as a reply's cancellation does.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_status import ACTIONS, CampaignStatus, check_campaign_move
from replyguard.domain.states import CANCELLABLE, StepState, step_move
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork

ARCHIVED_REASON = "campaign archived"


class CampaignArchived(LookupError):
    """The campaign is archived: it takes no new leads and no changes."""


@dataclass(frozen=True, slots=True)
class StatusChanged:
    campaign_id: int
    name: str
    status: str
    cancelled: int = 0  # queued steps cancelled (archiving)


def set_campaign_status(uow: UnitOfWork, campaign_id: int, action: str, *, by: str) -> StatusChanged:
    """Pause, resume or archive the workspace's campaign `campaign_id` (the caller commits).
    Raises LookupError for a campaign not in this workspace, KeyError for an unknown action,
    IllegalTransition for a move the campaign's status does not allow."""
    target = ACTIONS[action]
    campaign = uow.session.scalar(
        select(m.Campaign)
        .where(m.Campaign.id == campaign_id, m.Campaign.workspace_id == uow.workspace_id)
        .with_for_update()
    )
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id}")
    check_campaign_move(campaign.status, target)
    campaign.status = target
    cancelled = _cancel_queued(uow, campaign) if target is CampaignStatus.ARCHIVED else 0
    event = {"pause": "campaign_paused", "resume": "campaign_resumed", "archive": "campaign_archived"}[action]
    uow.add_event(event, campaign=campaign.name, by=by, cancelled=cancelled)
    uow.session.flush()
    return StatusChanged(campaign.id, campaign.name, campaign.status, cancelled)


def _cancel_queued(uow: UnitOfWork, campaign: m.Campaign) -> int:
    templates = select(m.CampaignStep.id).where(m.CampaignStep.campaign_id == campaign.id)
    queued = select(m.Step.lead_id).where(
        m.Step.campaign_step_id.in_(templates), m.Step.state.in_(list(CANCELLABLE))
    )
    uow.lock_leads(uow.session.scalars(queued.distinct()))
    result = uow.session.execute(
        update(m.Step)
        .where(
            m.Step.campaign_step_id.in_(templates),
            m.Step.state.in_(step_move(CANCELLABLE, StepState.CANCELLED)),
        )
        .values(
            state=StepState.CANCELLED,
            cancel_reason=ARCHIVED_REASON,
            claim_token=None,
            lease_until=None,
            updated_at=uow.clock.now(),
        )
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def require_not_archived(campaign: m.Campaign) -> None:
    if campaign.status == CampaignStatus.ARCHIVED:
        raise CampaignArchived(f"campaign {campaign.name!r} is archived: it takes no new leads or changes")
