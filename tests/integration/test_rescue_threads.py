"""Reply Rescue end to end: threads opened in the reply transaction, a person's decisions, and
what the worker then really sends — on SQLite and PostgreSQL, through real mail and SMTP."""

from __future__ import annotations

from datetime import date, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.rescue.decisions import DecisionError, Request, decide
from replyguard.service_layer.rescue.person_send import PersonReply, send_reply
from replyguard.service_layer.rescue.thread_views import list_threads, thread_detail
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.failpoints import InjectedCrash, crash
from tests.support.scenario import (
    FORECASTING,
    REPORTS,
    lead_state,
    load_examples,
    reply,
    run_days,
    step_counts,
)
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer

PRIYA = "priya@fernhollow.test"
JONAS = "j.brandt@kessler-maschinenbau.test"
DANA = "dana@northwind-analytics.test"


def _first(app: App, email: str, product: str = REPORTS) -> tuple[str, str]:
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        return step.message_id, step.subject


def _mail(
    sender: str, subject: str, body: str, clock: FixedClock, *, in_reply_to: str | None = None
) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, DANA, subject
    msg["Message-ID"] = f"<reply-{abs(hash((sender, body))) % 10**8}@client.test>"
    msg["Date"] = format_datetime(clock.now())
    if in_reply_to:
        msg["In-Reply-To"] = msg["References"] = in_reply_to
    msg.set_content(body)
    return msg.as_bytes()


def _threads(app: App, state: str = "open") -> list[dict[str, object]]:
    with app.uow() as uow:
        return list_threads(uow, app.settings, state=state)


def _decide(app: App, thread_id: int, action: str, **kwargs: object) -> object:
    with app.uow() as uow:
        result = decide(uow, thread_id, Request(action=action, by="dana", **kwargs), app.settings)  # type: ignore[arg-type]
        uow.commit()
    return result


def _sent_subjects(app: App, email: str, product: str) -> list[str]:
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        return list(
            uow.session.scalars(
                select(m.Step.subject)
                .where(m.Step.lead_id == lead.id, m.Step.state == "sent")
                .order_by(m.Step.position)
            )
        )


@pytest.mark.parametrize("point", ["inside_reply_tx", "after_reply_handover"])
def test_an_ingested_reply_commits_with_its_thread_and_notice_or_not_at_all(
    app: App, clock: FixedClock, point: str
) -> None:
    # A crash right after the reply row, and one after its thread and notice were written:
    # either way nothing of the three (nor the cancellation) is left.
    load_examples(app)
    run_days(app, clock, 1)
    mid, subject = _first(app, PRIYA)
    raw = _mail(PRIYA, f"Re: {subject}", "Yes, let's talk. Thursday at 10?\n", clock, in_reply_to=mid)
    queued = step_counts(app, PRIYA, REPORTS)
    app.hooks.arm(point, crash)
    with pytest.raises(InjectedCrash):
        ingest_raw(app, raw, "test")
    app.hooks.disarm()
    with app.uow() as uow:
        counts = [
            uow.session.scalar(select(func.count()).select_from(t))
            for t in (m.Reply, m.RescueThread, m.Notice)
        ]
    assert counts == [0, 0, 0]
    assert lead_state(app, PRIYA, REPORTS) == "active" and step_counts(app, PRIYA, REPORTS) == queued
    ingest_raw(app, raw, "test")  # the stored message is processed again: one effect
    with app.uow() as uow:
        thread = uow.session.scalars(select(m.RescueThread)).one()
        notice = uow.session.scalars(select(m.Notice)).one()
        assert notice.thread_id == thread.id and thread.reply_id is not None
        assert thread.intent == "interested"
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_resume_replans_the_cancelled_steps_and_the_next_one_is_really_sent(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    outcome = reply(app, PRIYA, REPORTS)
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    run_days(app, clock, 4)
    assert len(_sent_subjects(app, PRIYA, REPORTS)) == 1
    assert outcome.thread_id is not None
    result = _decide(app, outcome.thread_id, "resume")
    planned = result.planned  # type: ignore[attr-defined]
    assert [p.position for p in planned] == [2, 3]
    assert planned[0].due_at >= clock.now() and planned[1].due_at >= planned[0].due_at + timedelta(days=4)
    assert [p.state for p in planned] == ["scheduled", "awaiting_approval"]  # step 3 needs approval again
    assert lead_state(app, PRIYA, REPORTS) == "active"
    run_days(app, clock, 3)
    assert _sent_subjects(app, PRIYA, REPORTS)[1] == "Re: Quick question about Fernhollow's reporting"
    with app.uow() as uow:
        sent_at = uow.session.scalars(
            select(m.Step.sent_at).where(
                m.Step.lead_id == find_lead(uow, PRIYA, REPORTS).id, m.Step.position == 2
            )
        ).one()
    assert sent_at is not None and sent_at >= planned[0].due_at


def test_a_step_that_was_in_flight_when_the_reply_came_is_never_brought_back(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 2)
        ).one()
        step.state = "sending"  # as a worker's marker leaves it, mid-call
        uow.commit()
    outcome = reply(app, PRIYA, REPORTS)
    assert outcome.in_flight == 1
    with app.uow() as uow:
        step = uow.session.get_one(m.Step, step.id)
        step.state = "cancelled"  # the transport then refused it; the reply had asked to cancel
        uow.commit()
    assert outcome.thread_id is not None
    result = _decide(app, outcome.thread_id, "resume")
    assert [p.position for p in result.planned] == [3]  # type: ignore[attr-defined]
    assert _threads(app)[0]["crossed"] is True


def test_cross_product_the_thread_shows_the_other_and_pauses_it_only_when_asked(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    outcome = reply(app, PRIYA, REPORTS)
    [thread] = _threads(app)
    others = thread["other_active_products"]
    assert isinstance(others, list) and others[0]["product"] == FORECASTING
    assert others[0]["state"] == "active" and others[0]["next_step_at"] is not None
    assert "Also a lead of Northwind Forecasting" in str(thread["recommended_next_step"])
    assert "pause_others" in thread["actions"]  # type: ignore[operator]
    assert lead_state(app, PRIYA, FORECASTING) == "active"
    assert outcome.thread_id is not None
    result = _decide(app, outcome.thread_id, "pause_others", until=date(2026, 12, 28))
    assert "Northwind Forecasting" in result.message  # type: ignore[attr-defined]
    run_days(app, clock, 14)  # to 21 Dec: Forecasting's second email waits
    assert step_counts(app, PRIYA, FORECASTING) == {"sent": 1, "scheduled": 1}
    assert "Also a lead" not in str(_threads(app)[0]["recommended_next_step"])
    run_days(app, clock, 9)
    assert step_counts(app, PRIYA, FORECASTING) == {"sent": 2}


def test_left_running_the_other_product_goes_on(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    outcome = reply(app, PRIYA, REPORTS)
    assert outcome.thread_id is not None
    _decide(app, outcome.thread_id, "leave_others")
    run_days(app, clock, 9)
    assert step_counts(app, PRIYA, FORECASTING) == {"sent": 2}


def test_a_headerless_absence_is_offered_as_pause_until_and_pauses_every_product(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    mid, subject = _first(app, JONAS)
    body = "Guten Tag,\n\nich bin bis zum 21.12. nicht im Büro. Ab dem 21.12. bin ich wieder da.\n\nJonas\n"
    result = ingest_raw(app, _mail(JONAS, f"AW: {subject}", body, clock, in_reply_to=mid), "test")
    assert result.kind == "human_reply"  # no automatic headers: safely a person
    assert lead_state(app, JONAS, REPORTS) == "replied"
    [thread] = _threads(app)
    assert thread["intent"] == "out_of_office" and thread["intent_label"] == "looks like an out-of-office"
    assert thread["actions"][0] == "pause_until:2026-12-21"  # type: ignore[index]
    decided = _decide(app, int(thread["id"]), "pause_until", until=date(2026, 12, 21))  # type: ignore[call-overload]
    assert "Northwind Forecasting" in decided.message  # type: ignore[attr-defined]
    assert lead_state(app, JONAS, REPORTS) == "out_of_office"
    assert lead_state(app, JONAS, FORECASTING) == "out_of_office"
    run_days(app, clock, 13)  # to Sunday 20 Dec: nothing more goes out
    assert len(_sent_subjects(app, JONAS, REPORTS)) == 1 and len(_sent_subjects(app, JONAS, FORECASTING)) == 1
    run_days(app, clock, 3)  # back on Monday 21 Dec: both sequences go on by themselves
    assert lead_state(app, JONAS, REPORTS) == "active" and lead_state(app, JONAS, FORECASTING) == "active"
    assert len(_sent_subjects(app, JONAS, REPORTS)) == 2 and len(_sent_subjects(app, JONAS, FORECASTING)) == 2


def test_not_a_reply_restores_the_state_and_the_sequence(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    outcome = reply(app, PRIYA, REPORTS)
    assert outcome.thread_id is not None
    result = _decide(app, outcome.thread_id, "not_a_reply")
    assert result.lead_state == "active"  # type: ignore[attr-defined]
    assert _threads(app) == []  # the thread is done
    run_days(app, clock, 4)
    assert len(_sent_subjects(app, PRIYA, REPORTS)) == 2
    with pytest.raises(DecisionError):
        _decide(app, outcome.thread_id, "not_a_reply")


def test_a_persons_answer_reaches_the_smtp_server_threaded_once_and_the_sequence_stays_stopped(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    mid, subject = _first(app, PRIYA)
    raw = _mail(PRIYA, f"Re: {subject}", "How much does it cost for 12 people?\n", clock, in_reply_to=mid)
    ingest_raw(app, raw, "test")
    [thread] = _threads(app)
    assert thread["intent"] == "question" and "pricing" in str(thread["recommended_next_step"])
    theirs = EmailMessage()
    with app.uow() as uow:
        their_id = uow.session.scalars(select(m.InboundMessage.message_id)).one()
    with RecordingSmtpServer() as server:
        app.use_transport(SmtpTransport(server.url(timeout=5)))
        request = PersonReply(int(thread["id"]), "Hi Priya,\n\n40 EUR a seat a month.\n\nDana\n", "dana")  # type: ignore[call-overload]
        first = send_reply(app, request)
        again = send_reply(app, request)  # a double submit
        [mail] = server.accepted()
    assert first.state == "sent" and not first.duplicate
    assert again.duplicate and again.send_id == first.send_id
    message = mail.message()
    assert (
        message["In-Reply-To"] == their_id
        and mid in message["References"]
        and their_id in message["References"]
    )
    assert message["Subject"] == f"Re: {subject}" and message["From"].addresses[0].addr_spec == DANA
    assert mail.rcpt_tos == (PRIYA,) and "40 EUR" in message.get_content()
    del theirs
    run_days(app, clock, 9)
    assert lead_state(app, PRIYA, REPORTS) == "replied"
    assert len(_sent_subjects(app, PRIYA, REPORTS)) == 1
    with app.uow() as uow:
        detail = thread_detail(uow, int(thread["id"]), app.settings)  # type: ignore[call-overload]
    assert [d["kind"] for d in detail["decisions"]] == ["person_reply_sent"]
    assert detail["conversation"][-1]["from"] == "ours:person:dana"


def test_confirming_a_probable_reply_makes_it_the_leads_reply(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    _, subject = _first(app, PRIYA)
    colleague = _mail(
        "Sam Lee <sam.lee@fernhollow.test>", f"RE: {subject}", "Priya forwarded this; call me.\n", clock
    )
    assert ingest_raw(app, colleague, "test").status == "probable"
    [probable] = _threads(app)
    assert probable["kind"] == "probable_reply" and probable["actions"][:2] == ["confirm", "reject"]  # type: ignore[index]
    assert lead_state(app, PRIYA, REPORTS) == "held"
    with pytest.raises(DecisionError):  # Priya is a lead of both products: say which
        _decide(app, int(probable["id"]), "confirm")  # type: ignore[call-overload]
    with app.uow() as uow:
        reports_lead = find_lead(uow, PRIYA, REPORTS).id
    result = _decide(app, int(probable["id"]), "confirm", lead=str(reports_lead))  # type: ignore[call-overload]
    assert lead_state(app, PRIYA, FORECASTING) == "active"  # released
    assert lead_state(app, PRIYA, REPORTS) == "replied"
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    [thread] = _threads(app)
    assert thread["id"] == result.new_thread_id and thread["kind"] == "human_reply"  # type: ignore[attr-defined]
    with app.uow() as uow:
        kinds = uow.session.scalars(select(m.Notice.kind).order_by(m.Notice.id)).all()
        status = uow.session.scalars(select(m.InboundMessage.status)).one()
    assert kinds == ["probable_reply", "human_reply"] and status == "matched"


def test_rejecting_a_probable_reply_releases_the_lead_and_its_sequence_goes_on(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    _, subject = _first(app, PRIYA)
    colleague = _mail("Sam Lee <sam.lee@fernhollow.test>", f"RE: {subject}", "Who is this?\n", clock)
    ingest_raw(app, colleague, "test")
    [probable] = _threads(app)
    run_days(app, clock, 4)  # held: the follow-up waits
    assert len(_sent_subjects(app, PRIYA, REPORTS)) == 1
    _decide(app, int(probable["id"]), "reject")  # type: ignore[call-overload]
    assert lead_state(app, PRIYA, REPORTS) == "active" and _threads(app) == []
    run_days(app, clock, 3)  # re-planned from Saturday: out on Monday, in the window
    assert len(_sent_subjects(app, PRIYA, REPORTS)) == 2


def test_an_unknown_outcome_opens_a_thread_and_sent_again_goes_out_once(app: App, clock: FixedClock) -> None:
    load_examples(app)
    with RecordingSmtpServer(behaviour=Behaviour.DROP_MID_DATA) as server:
        app.use_transport(SmtpTransport(server.url(timeout=5)))
        run_days(app, clock, 1)
        held = [t for t in _threads(app) if t["kind"] == "unknown_outcome"]
        assert held and server.accepted() == []
        thread = held[0]
        email = str(thread["lead"])
        assert lead_state(app, email, str(thread["product"])) == "held"
        assert thread["actions"][:3] == ["sent", "send_again", "not_sent"]  # type: ignore[index]
        server.behaviour = Behaviour.ACCEPT
        with pytest.raises(DecisionError):
            _decide(app, int(thread["id"]), "resume")  # type: ignore[call-overload]
        result = _decide(app, int(thread["id"]), "send_again")  # type: ignore[call-overload]
        assert result.lead_state == "active"  # type: ignore[attr-defined]
        run_days(app, clock, 1, step=timedelta(minutes=30))
        mine = [msg for msg in server.accepted() if msg.rcpt_tos == (email,)]
        assert len(mine) == 1


def test_an_unknown_outcome_that_went_out_is_marked_sent_and_the_sequence_goes_on(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    with RecordingSmtpServer(behaviour=Behaviour.DROP_AFTER_ACCEPT) as server:
        app.use_transport(SmtpTransport(server.url(timeout=2)))
        run_days(app, clock, 1, step=timedelta(hours=3))
        thread = next(t for t in _threads(app) if t["kind"] == "unknown_outcome")
        email, product = str(thread["lead"]), str(thread["product"])
        assert any(msg.rcpt_tos == (email,) for msg in server.accepted())  # a person checks: it arrived
        result = _decide(app, int(thread["id"]), "sent")  # type: ignore[call-overload]
    assert result.lead_state == "active" and result.planned  # type: ignore[attr-defined]
    assert step_counts(app, email, product).get("unknown") is None
    assert step_counts(app, email, product)["sent"] == 1


def test_a_reply_written_without_seeing_our_latest_email_is_crossed(app: App, clock: FixedClock) -> None:
    # Our second email went out ten minutes before their reply, which answers the first: they
    # wrote without seeing it, and the person is told to apologise for it.
    load_examples(app)
    run_days(app, clock, 6)
    first, subject = _first(app, PRIYA)
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        second = uow.session.scalars(
            select(m.Step.sent_at).where(m.Step.lead_id == lead.id, m.Step.position == 2)
        ).one()
    assert second is not None
    clock.set(second + timedelta(minutes=10))
    ingest_raw(
        app, _mail(PRIYA, f"Re: {subject}", "Yes, interested. Call me?\n", clock, in_reply_to=first), "t"
    )
    [thread] = _threads(app)
    assert thread["crossed"] is True
    assert str(thread["recommended_next_step"]).startswith("Apologise: our follow-up crossed their reply.")


def test_an_unknown_outcome_a_person_marks_not_sent_is_dropped_and_the_rest_goes_on(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    with RecordingSmtpServer(behaviour=Behaviour.DROP_MID_DATA) as server:
        app.use_transport(SmtpTransport(server.url(timeout=5)))
        run_days(app, clock, 1)
        thread = next(t for t in _threads(app) if t["kind"] == "unknown_outcome")
        email, product = str(thread["lead"]), str(thread["product"])
        server.behaviour = Behaviour.ACCEPT
        result = _decide(app, int(thread["id"]), "not_sent")  # type: ignore[call-overload]
        assert result.lead_state == "active"  # type: ignore[attr-defined]
        counts = step_counts(app, email, product)
        assert counts.get("unknown") is None and counts.get("skipped") == 1  # dropped, not resent
        run_days(app, clock, 8, step=timedelta(hours=6))
        mine = [msg for msg in server.accepted() if msg.rcpt_tos == (email,)]
    # The dropped first email is never sent again; the next ones go out, none threaded on it.
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        dropped = uow.session.scalars(
            select(m.Step.message_id).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
    assert mine and all(dropped not in (msg.message().get("References") or "") for msg in mine)
    assert all(msg.message()["Message-ID"] != dropped for msg in mine)
