"""A campaign's own state, which a person sets: active, paused or archived.

Only an active campaign sends: the worker's claim skips the steps of any other
(`sending/claiming.py`) and the send-time re-check gives back a claimed one whose campaign
was paused meanwhile (`send_policy.limits_deferral`). Pausing keeps every queued step as it
is, so resuming carries on where it stopped (steps overdue by then go at the next window
opening). Archiving ends the campaign for good: its queued steps are cancelled, it takes no
new leads and no changes, and it is never resumed.
"""

from __future__ import annotations

import enum

from replyguard.domain.states import IllegalTransition


class CampaignStatus(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    ARCHIVED = "archived"


_MOVES: dict[CampaignStatus, frozenset[CampaignStatus]] = {
    CampaignStatus.ACTIVE: frozenset({CampaignStatus.PAUSED, CampaignStatus.ARCHIVED}),
    CampaignStatus.PAUSED: frozenset({CampaignStatus.ACTIVE, CampaignStatus.ARCHIVED}),
    CampaignStatus.ARCHIVED: frozenset(),
}

#: What a person asks for, and the status it leads to.
ACTIONS: dict[str, CampaignStatus] = {
    "pause": CampaignStatus.PAUSED,
    "resume": CampaignStatus.ACTIVE,
    "archive": CampaignStatus.ARCHIVED,
}


def check_campaign_move(current: str, target: CampaignStatus) -> None:
    """Raise IllegalTransition, in words a person reads, unless `current` may become `target`."""
    state = CampaignStatus(current)
    if target in _MOVES[state]:
        return
    if state is target:
        raise IllegalTransition(f"the campaign is {state} already")
    if state is CampaignStatus.ARCHIVED:
        raise IllegalTransition("the campaign is archived: an archived campaign never sends again")
    raise IllegalTransition(f"a campaign cannot go from {state} to {target}")
