"""Draft templates per intent, and a campaign's own under [campaign.drafts]."""

from __future__ import annotations

import pytest
from tests.unit.test_campaign_spec import GOOD

from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.drafts import reply_subject, template_draft
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
