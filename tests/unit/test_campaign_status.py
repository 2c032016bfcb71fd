"""A campaign's status machine: pause and resume back and forth, archive from either, and
nothing ever leaves archived."""

from __future__ import annotations

import pytest

from replyguard.domain.campaign_status import ACTIONS, CampaignStatus, check_campaign_move
from replyguard.domain.states import IllegalTransition


@pytest.mark.parametrize(
    ("current", "action"),
    [("active", "pause"), ("paused", "resume"), ("active", "archive"), ("paused", "archive")],
)
def test_allowed_moves(current: str, action: str) -> None:
    check_campaign_move(current, ACTIONS[action])


@pytest.mark.parametrize(
    ("current", "action", "words"),
    [
        ("active", "resume", "active already"),
        ("paused", "pause", "paused already"),
        ("archived", "resume", "archived"),
        ("archived", "pause", "archived"),
        ("archived", "archive", "archived already"),
    ],
)
def test_refused_moves_say_why(current: str, action: str, words: str) -> None:
    with pytest.raises(IllegalTransition, match=words):
        check_campaign_move(current, ACTIONS[action])


def test_every_status_is_reachable_by_an_action() -> None:
    assert set(ACTIONS.values()) == set(CampaignStatus)
