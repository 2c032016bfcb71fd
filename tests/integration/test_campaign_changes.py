"""Campaigns that mean their own settings, and can change (issue 8, item 4).

A mailbox's sender name, cap and cap day belong to the mailbox: a second campaign that states
other values is refused with the way to change them; `mailbox set` changes them for all its
campaigns; `campaign update` changes a campaign (and its mailbox when it has it alone) without
ever rewriting an email already sent.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.campaign_spec import CampaignSpecError
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from tests.support.scenario import enroll_all
from tests.support.sequences import (
    THREE_STEPS,
    RecordingTransport,
    campaign_file,
    setup,
    steps_of,
    steps_toml,
)

MONDAY_10 = timedelta(hours=4)
ANN = {"email": "ann@corp.test", "first_name": "Ann"}


def _create(app: App, toml: str) -> None:
    with app.uow() as uow:
        create_campaign(uow, toml)
        uow.commit()


def _mailbox(app: App) -> m.Mailbox:
    with app.uow() as uow:
        mailbox = uow.session.scalars(select(m.Mailbox)).one()
        uow.commit()
        return mailbox


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cap": 50}, "campaign.daily_cap: this file says 50, but the mailbox rep@seller.test has 100"),
        (
            {"from_name": "Sam"},
            "campaign.from_name: this file says 'Sam', but the mailbox rep@seller.test has 'Rep'",
        ),
        (
            {"cap": 100, "extra": '[mailbox]\ntimezone = "Europe/Berlin"'},
            "mailbox.timezone: this file says 'Europe/Berlin', but the mailbox rep@seller.test has 'UTC'",
        ),
    ],
)
def test_a_second_campaign_disagreeing_with_its_mailbox_is_refused(
    app: App, change: dict[str, object], message: str
) -> None:
    _create(app, campaign_file("A", cap=100))
    with pytest.raises(CampaignSpecError) as info, app.uow() as uow:
        create_campaign(uow, campaign_file("B", **change))  # type: ignore[arg-type]
    assert message in str(info.value)
    assert "shared with campaign(s) 'A'" in str(info.value)
    assert "replyguard mailbox set rep@seller.test" in str(info.value)


def test_a_second_campaign_may_leave_the_mailbox_settings_out_or_repeat_them(app: App) -> None:
    _create(app, campaign_file("A", cap=100))
    _create(app, campaign_file("B", cap=None, from_name=None))
    _create(app, campaign_file("C", cap=100, timezone="Europe/Berlin"))  # the leads' default zone
    mailbox = _mailbox(app)
    assert (mailbox.from_name, mailbox.daily_cap, mailbox.timezone) == ("Rep", 100, "UTC")


def test_a_new_mailbox_needs_its_settings(app: App) -> None:
    with pytest.raises(
        CampaignSpecError, match=r"campaign\.daily_cap: missing; the mailbox rep@seller\.test is new"
    ):
        _create(app, campaign_file("A", cap=None))


def test_mailbox_set_raises_the_cap_for_every_campaign(app: App, clock: FixedClock) -> None:
    from replyguard.service_layer.workspace.mailboxes import MailboxSettings, set_mailbox

    leads = [{"email": f"l{i}@corp.test", "first_name": "L"} for i in range(10)]
    setup(app, campaign_file("A", cap=2, steps=steps_toml(("0d", "Hi", "One.", False))), leads)
    enroll_all(app, "A")
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    assert Worker(app, transport).run_once().sent == 2
    with app.uow() as uow:
        assert set_mailbox(uow, "rep@seller.test", MailboxSettings(daily_cap=5, from_name="Rep Two")) == {
            "from_name": ("Rep", "Rep Two"),
            "daily_cap": (2, 5),
        }
        uow.commit()
    # Steps today's cap already moved to tomorrow stay there; from tomorrow on, five a day.
    clock.advance(timedelta(days=1))
    assert Worker(app, transport).run_once().sent == 5
    assert transport.sent[-1].email.from_name == "Rep Two"


def test_campaign_update_changes_what_is_not_sent_and_nothing_that_is(app: App, clock: FixedClock) -> None:
    from replyguard.service_layer.workspace.campaign_changes import apply_update, plan_update

    setup(app, campaign_file("A", cap=100), [ANN])
    enroll_all(app, "A")
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()  # step 1 went out
    edited = campaign_file(
        "A",
        cap=300,
        from_name="Rep Smith",
        end="18:00",
        steps=steps_toml(
            ("0d", "Changed hello {{ first_name }}", "Changed first.", False),
            ("2d", None, "A better second, {{ first_name }}.", False),
            ("5d", None, "Third, {{ first_name }}.", False),
            ("1d", None, "A fourth, added.", False),
        ),
    )
    with app.uow() as uow:
        plan = plan_update(uow, edited)
    lines = [c.line() for c in plan.changes]
    assert "window: mon,tue,wed,thu,fri 09:00-17:00 -> mon,tue,wed,thu,fri 09:00-18:00" in lines
    assert "mailbox daily_cap: 100 -> 300" in lines and "mailbox from_name: Rep -> Rep Smith" in lines
    assert "step 3 wait: 2d -> 5d" in lines and "step 4: (none) -> added" in lines
    assert any(line.startswith("step 1 subject:") for line in lines)
    assert any("step 1: 1 already sent (kept as sent)" in note for note in plan.notes)
    with app.uow() as uow:
        done = apply_update(uow, edited, shown=plan.changes)
        uow.commit()
    assert done.rendered_again == 2
    first, second, third, fourth = steps_of(app, ANN["email"])
    assert (first.state, first.subject, first.body) == ("sent", "Hello Ann", "Hi Ann, first.")
    assert second.body == "A better second, Ann." and second.subject == "Re: Hello Ann"  # the sent thread
    assert third.due_at - second.due_at >= timedelta(days=5)
    assert fourth.state == "scheduled" and fourth.position == 4
    end = clock.now() + timedelta(days=14)
    while clock.now() < end:
        Worker(app, transport).run_once()
        clock.advance(timedelta(hours=1))
    bodies = [s.email.body for s in transport.sent]
    assert bodies == ["Hi Ann, first.", "A better second, Ann.", "Third, Ann.", "A fourth, added."]
    assert {s.email.from_name for s in transport.sent[1:]} == {"Rep Smith"}
    assert _mailbox(app).daily_cap == 300


def test_campaign_update_removes_a_step_and_skips_it_where_queued(app: App, clock: FixedClock) -> None:
    from replyguard.service_layer.workspace.campaign_changes import apply_update

    setup(app, campaign_file("A"), [ANN])
    enroll_all(app, "A")
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    two_steps = steps_toml(
        ("0d", "Hello {{ first_name }}", "Hi {{ first_name }}, first.", False),
        ("2d", None, "Second, {{ first_name }}.", False),
    )
    with app.uow() as uow:
        apply_update(uow, campaign_file("A", steps=two_steps))
        uow.commit()
    end = clock.now() + timedelta(days=10)
    while clock.now() < end:
        Worker(app, transport).run_once()
        clock.advance(timedelta(hours=1))
    assert [s.state for s in steps_of(app, ANN["email"])] == ["sent", "sent", "skipped"]
    with app.uow() as uow:
        assert uow.session.scalars(select(m.Enrollment.state)).one() == "completed"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"product": "Q"}, "file.product: the campaign sells 'P'"),
        ({"mailbox": "other@seller.test"}, "campaign.mailbox: the campaign sends from rep@seller.test"),
    ],
)
def test_campaign_update_refuses_a_new_product_or_mailbox(
    app: App, change: dict[str, str], message: str
) -> None:
    from replyguard.service_layer.workspace.campaign_changes import plan_update

    _create(app, campaign_file("A"))
    with pytest.raises(CampaignSpecError, match=message), app.uow() as uow:
        plan_update(uow, campaign_file("A", **change))  # type: ignore[arg-type]


def test_campaign_update_of_a_shared_mailbox_setting_points_to_mailbox_set(app: App) -> None:
    from replyguard.service_layer.workspace.campaign_changes import plan_update

    _create(app, campaign_file("A", cap=100))
    _create(app, campaign_file("B", cap=100))
    with (
        pytest.raises(
            CampaignSpecError,
            match=r"shared with campaign.s. 'B'.*mailbox set rep@seller\.test --daily-cap 7",
        ),
        app.uow() as uow,
    ):
        plan_update(uow, campaign_file("A", cap=7))


def test_campaign_update_applies_only_what_was_shown(app: App) -> None:
    from replyguard.service_layer.workspace.campaign_changes import apply_update, plan_update

    _create(app, campaign_file("A"))
    with app.uow() as uow:
        shown = plan_update(uow, campaign_file("A", end="18:00")).changes
    with pytest.raises(CampaignSpecError, match="changed since the differences were shown"), app.uow() as uow:
        apply_update(uow, campaign_file("A", end="19:00"), shown=shown)


def test_campaign_list_shows_each_campaign_with_its_mailbox(app: App) -> None:
    from replyguard.service_layer.workspace.campaigns import list_campaigns

    setup(app, campaign_file("A", cap=40), [ANN])
    enroll_all(app, "A")
    _create(app, campaign_file("B", cap=None, from_name=None, steps=THREE_STEPS))
    with app.uow() as uow:
        listed = {c["name"]: c for c in list_campaigns(uow)}
    assert set(listed) == {"A", "B"}
    assert (listed["A"]["daily_cap"], listed["A"]["from_name"], listed["A"]["steps"]) == (40, "Rep", 3)
    assert listed["A"]["enrollments"] == {"active": 1} and listed["B"]["enrollments"] == {}
    assert listed["A"]["step_states"] == {"scheduled": 3}


def test_every_mailbox_setting_that_differs_is_named_at_once(app: App) -> None:
    """Fixing one field to meet the next refusal was the old way: all of them, in one line."""
    _create(app, campaign_file("A", cap=100))
    with pytest.raises(CampaignSpecError) as info, app.uow() as uow:
        create_campaign(uow, campaign_file("B", cap=50, from_name="Sam"))
    message = str(info.value)
    assert "campaign.from_name: this file says 'Sam', but the mailbox rep@seller.test has 'Rep'" in message
    assert "campaign.daily_cap: this file says 50, but the mailbox rep@seller.test has 100" in message
    assert "replyguard mailbox set rep@seller.test --from-name Sam --daily-cap 50" in message
    assert "\n" not in message
