"""Draft templates per intent, and a campaign's own under [campaign.drafts]."""

from __future__ import annotations

import pytest
from tests.unit.test_campaign_spec import GOOD

from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.drafts import proposed_time, reply_subject, template_draft
from replyguard.domain.intent import Intent

VALUES = {"first_name": "Priya", "sender": "Dana", "company": "Fernhollow", "subject": "AW: Re: Hello"}


def test_default_draft_per_intent_and_a_threaded_subject() -> None:
    draft = template_draft(Intent.INTERESTED, VALUES)
    assert draft.subject == "Re: Hello" and draft.source == "template"
    assert draft.body.startswith("Hi Priya,") and draft.body.rstrip().endswith("Dana")
    assert "Fernhollow" in template_draft(Intent.WRONG_PERSON, VALUES).body
    assert reply_subject(None) == "Re: your message"


def test_a_campaign_overrides_a_draft_and_bad_keys_or_variables_are_refused() -> None:
    source = (
        GOOD + '\n[campaign.drafts]\ninterested = "Dear {{ first_name }}, when suits you? {{ sender }}"\n'
    )
    spec = parse_campaign(source)
    draft = template_draft(Intent.INTERESTED, VALUES, dict(spec.drafts))
    assert draft.body == "Dear Priya, when suits you? Dana" and draft.source == "campaign"
    with pytest.raises(CampaignSpecError, match=r"campaign.drafts: unknown key\(s\) keen"):
        parse_campaign(GOOD + '\n[campaign.drafts]\nkeen = "x"\n')
    with pytest.raises(CampaignSpecError, match=r"campaign\.drafts\.question"):
        parse_campaign(GOOD + '\n[campaign.drafts]\nquestion = "{{ salary }}"\n')


def test_a_sandbox_violation_falls_back_to_our_template() -> None:
    draft = template_draft(Intent.OTHER, VALUES, {"other": "{{ ''.__class__.__mro__ }}"})
    assert draft.source == "template" and "Priya" in draft.body


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Sounds interesting. Can we talk Thursday?", "Thursday"),
        ("Could we talk on Thursday at 10?", "Thursday at 10:00"),
        ("friday 3pm works", "Friday at 15:00"),
        ("How about Tuesday, 14:30?", "Tuesday at 14:30"),
        ("Monday 9 am?", "Monday at 09:00"),
        ("Wednesday at 12pm", "Wednesday at 12:00"),
        ("tomorrow at 9am", "Tomorrow at 09:00"),
        ("Thursday 20 March suits me", "Thursday"),  # a date, not 20:00
        ("Yes, sounds good.\n> Shall we say Monday at 9?", ""),  # our own words, quoted
        ("Call me at 10", ""),
    ],
)
def test_the_time_they_proposed_is_read_from_their_own_words(text: str, found: str) -> None:
    assert proposed_time(text) == found


def test_a_draft_follows_the_time_they_proposed_and_names_what_they_asked() -> None:
    """The demo's reply asks for Thursday: the draft offered Tuesday or Thursday at 15:00. And a
    pricing question's draft says what to answer in its first line."""
    follows = template_draft(Intent.INTERESTED, VALUES | {"their_time": "Thursday at 10:00"})
    assert "Thursday at 10:00 works for me" in follows.body and "Tuesday" not in follows.body
    assert "Would Tuesday at 10:00 or Thursday at 15:00" in template_draft(Intent.INTERESTED, VALUES).body
    asked = template_draft(Intent.QUESTION, VALUES | {"asked": "pricing"})
    first_line = asked.body.split("\n\n")[1].splitlines()[0]
    assert first_line.startswith("thanks for asking about pricing.") and "answer on pricing" in first_line
    assert "thanks for asking. [Your answer here.]" in template_draft(Intent.QUESTION, VALUES).body
