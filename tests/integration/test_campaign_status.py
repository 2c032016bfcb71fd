"""A paused campaign sends nothing, on SQLite and PostgreSQL: the worker claims none of its
steps, a step claimed before the pause is given back at the hand-over, another campaign of the
same mailbox goes on, and resuming carries on where it stopped. Archiving cancels the queue,
refuses new leads and changes, and is never undone."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import IllegalTransition
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaign_changes import plan_update
from replyguard.service_layer.workspace.campaign_status import CampaignArchived, set_campaign_status
from replyguard.service_layer.workspace.campaigns import create_campaign, find_campaign
from replyguard.service_layer.workspace.leads import import_leads
from tests.support.scenario import campaign_toml, csv_of, enroll_all, run_days, simple_workspace


def _id(app: App, name: str) -> int:
    with app.uow() as uow:
        return find_campaign(uow, name).id


def _set(app: App, name: str, action: str) -> int:
    with app.uow() as uow:
        done = set_campaign_status(uow, _id(app, name), action, by="ann@alpha.test")
        uow.commit()
    return done.cancelled


def _states(app: App, name: str) -> dict[str, int]:
    with app.uow() as uow:
        campaign = find_campaign(uow, name)
        templates = select(m.CampaignStep.id).where(m.CampaignStep.campaign_id == campaign.id)
        return {
            str(state): n
            for state, n in uow.session.execute(
                select(m.Step.state, func.count())
                .where(m.Step.campaign_step_id.in_(templates))
                .group_by(m.Step.state)
            )
        }


def _second_campaign(app: App) -> None:
    """Campaign "D" of product "Q", from the same mailbox as "C", with three leads."""
    rows = list(read_leads(csv_of([{"email": f"q{i}@other.test", "first_name": f"Q{i}"} for i in range(3)])))
    with app.uow() as uow:
        create_campaign(uow, campaign_toml("D", "Q", cap=1000))
        import_leads(uow, "Q", rows)
        uow.commit()
    enroll_all(app, "D")


def _files(outbox: Path) -> int:
    return sum(1 for p in outbox.rglob("*") if p.is_file())


def test_a_paused_campaign_sends_nothing_and_resumes_where_it_stopped(
    app: App, clock: FixedClock, tmp_path: Path
) -> None:
    simple_workspace(app, 5)
    _second_campaign(app)
    _set(app, "C", "pause")
    report = run_days(app, clock, 6)
    # Campaign D, on the same mailbox, sent its whole sequence; C sent nothing at all.
    assert _states(app, "D") == {"sent": 9}
    assert _states(app, "C") == {"scheduled": 15}
    assert report.sent == 9
    assert _files(tmp_path / "outbox" / "new") == 9
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).where(m.Event.kind == "campaign_paused")) == 1
    _set(app, "C", "resume")
    run_days(app, clock, 6)
    assert _states(app, "C") == {"sent": 15}


def test_a_step_claimed_before_the_pause_is_given_back_not_sent(app: App, clock: FixedClock) -> None:
    simple_workspace(app, 3)
    clock.advance(timedelta(hours=3))  # Monday 09:00: the first emails are due
    # The pause commits between the claim and the hand-over (a person's click, while a worker
    # has the batch): the send-time re-check reads the campaign's status again.
    app.hooks.arm("after_claim", lambda _point: _set(app, "C", "pause"))  # type: ignore[attr-defined]
    report = Worker(app).run_once()
    app.hooks.disarm()  # type: ignore[attr-defined]
    assert report.claimed >= 1 and report.sent == 0
    assert _states(app, "C") == {"scheduled": 9}
    assert Worker(app).run_once().claimed == 0  # paused: nothing is claimed


def test_archiving_cancels_the_queue_and_is_never_undone(app: App, clock: FixedClock) -> None:
    simple_workspace(app, 4)
    run_days(app, clock, 0.5)  # the first emails go out on Monday
    assert _states(app, "C") == {"sent": 4, "scheduled": 8}
    assert _set(app, "C", "archive") == 8
    assert _states(app, "C") == {"sent": 4, "cancelled": 8}
    with app.uow() as uow:
        reasons = set(uow.session.scalars(select(m.Step.cancel_reason).where(m.Step.state == "cancelled")))
    assert reasons == {"campaign archived"}
    for action in ("resume", "pause", "archive"):
        with pytest.raises(IllegalTransition, match="archived"), app.uow() as uow:
            set_campaign_status(uow, _id(app, "C"), action, by="ann@alpha.test")
    with pytest.raises(CampaignArchived):
        enroll_all(app, "C")
    with pytest.raises(CampaignArchived), app.uow() as uow:
        plan_update(uow, campaign_toml("C", "P", cap=50))
    assert run_days(app, clock, 6).sent == 0
