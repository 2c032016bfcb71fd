"""Sequences that do exactly what they say (issue 8), on SQLite and PostgreSQL.

* a step that failed for good holds the lead; nothing follows it, nothing threads on it;
* a step is claimed only when the one before it was sent or skipped by a person;
* an enrollment completes only when no step is left;
* spacing is kept after downtime, approvals and resumes;
* the window and the cap are checked for each email right before it is handed over;
* a wait in days keeps the local time of day across DST changes;
* a re-imported lead's queued emails are rendered again; approval is of the content.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import ReplyKind, ReplyState
from replyguard.service_layer.rescue.actions import approve_steps, set_lead_state
from replyguard.service_layer.sending.worker import Worker, WorkerReport
from replyguard.service_layer.workspace.leads import import_leads
from tests.support.failpoints import InjectedCrash, crash
from tests.support.scenario import csv_of, enroll_all, lead_state, reply
from tests.support.sequences import (
    EVERY_DAY,
    PERMANENT,
    TRANSIENT,
    RecordingTransport,
    campaign_file,
    enrollment_states,
    notices,
    setup,
    steps_of,
    steps_toml,
)

MONDAY_10 = timedelta(hours=4)  # START is Monday 06:00 UTC; the window is 09-17 UTC
ANN = {"email": "ann@corp.test", "first_name": "Ann", "last_name": "Lee", "company": "Corp"}


def _run(
    app: App, clock: FixedClock, transport: RecordingTransport, days: float, step: float = 1
) -> WorkerReport:
    """The worker once an hour (or every `step` hours) for `days` days."""
    total = WorkerReport()
    end = clock.now() + timedelta(days=days)
    while clock.now() < end:
        total.add(Worker(app, transport).run_once())
        clock.advance(timedelta(hours=step))
    return total


def _one_lead(app: App, toml: str | None = None) -> None:
    setup(app, toml or campaign_file("C"), [ANN])
    enroll_all(app, "C")


# ---------------------------------------------------------------- 1. failed for good
def test_a_step_refused_for_good_holds_the_lead_and_nothing_follows_it(app: App, clock: FixedClock) -> None:
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    transport.refuse(PERMANENT)
    assert Worker(app, transport).run_once().failed == 1
    assert lead_state(app, ANN["email"], "P") == "held"
    [notice] = notices(app, "step_failed")  # the lead's rescue thread tells its owner
    payload = notice.payload
    assert (payload["product"], payload["campaigns"], payload["lead"]["email"]) == ("P", ["C"], ANN["email"])
    assert payload["subject"] == "Hello Ann" and "554 5.7.1" in payload["reason"]
    assert {"resend_step", "skip_step", "stop"} <= set(payload["actions"])
    assert notice.recipient == "rep@seller.test"
    _run(app, clock, transport, days=10)
    # A person resuming the lead is not enough: the failed email blocks the ones after it.
    with app.uow() as uow:
        set_lead_state(uow, ANN["email"], "P", ReplyState.ACTIVE, why="looked fine")
        uow.commit()
    _run(app, clock, transport, days=10)
    assert len(transport.calls) == 1 and transport.sent == []
    assert [s.state for s in steps_of(app, ANN["email"])] == ["failed", "scheduled", "scheduled"]
    assert enrollment_states(app) == ["active"]


def test_retries_running_out_hold_the_lead_instead_of_moving_on(app: App, clock: FixedClock) -> None:
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    transport.refuse(*[TRANSIENT] * app.settings.max_attempts)  # a relay down for hours
    _run(app, clock, transport, days=6, step=0.5)
    assert len(transport.calls) == app.settings.max_attempts
    assert transport.sent == []  # no "Re:" to an email that never arrived
    assert lead_state(app, ANN["email"], "P") == "held"
    assert [s.state for s in steps_of(app, ANN["email"])] == ["failed", "scheduled", "scheduled"]


def test_skipping_a_failed_first_email_makes_the_next_one_start_the_thread(
    app: App, clock: FixedClock
) -> None:
    from replyguard.service_layer.rescue.step_decisions import skip_step

    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    transport.refuse(PERMANENT)
    Worker(app, transport).run_once()
    with app.uow() as uow:
        decision = skip_step(uow, "C", ANN["email"])
        uow.commit()
    assert decision.note == "the lead is active again"
    _run(app, clock, transport, days=8)
    second, third = transport.to(ANN["email"])
    assert (second.subject, second.in_reply_to, second.references) == ("Hello Ann", None, None)
    assert third.subject == "Re: Hello Ann"
    assert (third.in_reply_to, third.references) == (second.message_id, second.message_id)
    assert enrollment_states(app) == ["completed"]


def test_resending_a_failed_step_sends_it_then_the_rest_in_order(app: App, clock: FixedClock) -> None:
    from replyguard.service_layer.rescue.step_decisions import resend_step

    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    transport.refuse(PERMANENT)
    Worker(app, transport).run_once()
    clock.advance(timedelta(days=3))  # the person looks later; step 2 is long due by then
    with app.uow() as uow:
        resend_step(uow, "C", ANN["email"])
        uow.commit()
    _run(app, clock, transport, days=8)
    first, second, third = transport.sent
    assert [s.email.subject for s in transport.sent] == ["Hello Ann", "Re: Hello Ann", "Re: Hello Ann"]
    assert second.email.in_reply_to == first.email.message_id
    # Each follow-up keeps its wait after the email before it really went out.
    assert second.at - first.at >= timedelta(days=2) and third.at - second.at >= timedelta(days=2)


# ---------------------------------------------------------------- 3. order, completion, spacing
APPROVAL_ON_2 = steps_toml(
    ("0d", "Hello {{ first_name }}", "First.", False),
    ("2d", None, "Second.", True),
    ("2d", None, "Last note from me.", False),
)


def test_a_step_waiting_for_approval_is_never_overtaken(app: App, clock: FixedClock) -> None:
    _one_lead(app, campaign_file("C", steps=APPROVAL_ON_2))
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    _run(app, clock, transport, days=10)
    assert [s.email.body for s in transport.sent] == ["First."]  # "last note" did not go first
    assert enrollment_states(app) == ["active"]  # not completed with a step still to send
    with app.uow() as uow:
        assert approve_steps(uow, "C") == 1
        uow.commit()
    _run(app, clock, transport, days=6)
    assert [s.email.body for s in transport.sent] == ["First.", "Second.", "Last note from me."]
    approved_at, last_at = transport.sent[1].at, transport.sent[2].at
    assert last_at - approved_at >= timedelta(days=2)
    assert enrollment_states(app) == ["completed"]


def test_a_worker_killed_during_a_send_strands_nothing(app: App, clock: FixedClock) -> None:
    """A worker dies after its marker on step 1 while steps 2 and 3 are already due: another
    worker must neither send them first nor complete the enrollment (which stranded step 1)."""
    toml = campaign_file(
        "C",
        steps=steps_toml(
            *[
                (w, s, b, False)
                for w, s, b in (
                    ("0d", "Hello {{ first_name }}", "First."),
                    ("0d", None, "Second."),
                    ("0d", None, "Third."),
                )
            ]
        ),
    )
    _one_lead(app, toml)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    dying = Worker(app, transport)
    [claim] = dying.claim(WorkerReport(), limit=1)
    app.hooks.arm("after_marker", crash)
    with pytest.raises(InjectedCrash):
        dying.send(claim, WorkerReport())
    app.hooks.disarm()
    Worker(app, transport).run_once()  # within the lease: step 1's outcome is still unknown
    assert transport.sent == []
    clock.advance(app.settings.lease + timedelta(seconds=1))
    _run(app, clock, transport, days=1, step=0.25)
    # SMTP cannot prove the first send did not happen: it is held for a person, never resent,
    # and nothing overtakes it.
    assert [s.state for s in steps_of(app, ANN["email"])] == ["unknown", "scheduled", "scheduled"]
    from replyguard.service_layer.rescue.actions import resolve_unknown

    with app.uow() as uow:
        resolve_unknown(uow, steps_of(app, ANN["email"])[0].id, went_out=True)
        set_lead_state(uow, ANN["email"], "P", ReplyState.ACTIVE, why="checked: it went out")
        uow.commit()
    _run(app, clock, transport, days=1, step=0.25)
    assert [s.email.body for s in transport.sent] == ["Second.", "Third."]
    assert [s.state for s in steps_of(app, ANN["email"])] == ["sent", "sent", "sent"]
    assert enrollment_states(app) == ["completed"]


def test_after_downtime_the_steps_keep_their_spacing(app: App, clock: FixedClock) -> None:
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    clock.advance(timedelta(days=10))  # no worker ran for ten days: steps 2 and 3 are both due
    _run(app, clock, transport, days=6)
    gaps = [b.at - a.at for a, b in itertools.pairwise(transport.sent)]
    assert len(transport.sent) == 3
    assert gaps[1] >= timedelta(days=2), gaps  # not the same second


def test_after_a_person_resumes_a_held_lead_the_steps_keep_their_spacing(app: App, clock: FixedClock) -> None:
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    # Away for longer than the longest pause we trust: held for a person, steps kept.
    reply(app, ANN["email"], "P", ReplyKind.OUT_OF_OFFICE, back=date(2027, 3, 1))
    assert lead_state(app, ANN["email"], "P") == "held"
    _run(app, clock, transport, days=10)
    with app.uow() as uow:
        set_lead_state(uow, ANN["email"], "P", ReplyState.ACTIVE, why="back early")
        uow.commit()
    _run(app, clock, transport, days=6)
    assert len(transport.sent) == 3
    assert transport.sent[2].at - transport.sent[1].at >= timedelta(days=2)


# ---------------------------------------------------------------- 7. cap and window per email
def test_a_slow_server_cannot_carry_a_batch_past_the_window(app: App, clock: FixedClock) -> None:
    leads = [{"email": f"l{i}@corp.test", "first_name": f"L{i}"} for i in range(30)]
    setup(app, campaign_file("C", steps=steps_toml(("0d", "Hi", "One.", False))), leads)
    enroll_all(app, "C")
    clock.set(datetime(2026, 12, 7, 16, 50, tzinfo=UTC))  # ten minutes before the window closes
    transport = RecordingTransport(clock, delay=timedelta(minutes=1))  # a slow server
    Worker(app, transport).run_once()
    assert transport.sent and all(s.at.hour < 17 for s in transport.sent), [s.at for s in transport.sent]
    _run(app, clock, transport, days=1)
    assert len(transport.sent) == 30
    assert all(9 <= s.at.hour < 17 for s in transport.sent)


def test_a_slow_server_cannot_carry_a_batch_into_the_next_days_cap(app: App, clock: FixedClock) -> None:
    leads = [{"email": f"l{i}@corp.test", "first_name": f"L{i}"} for i in range(30)]
    toml = campaign_file(
        "C", steps=steps_toml(("0d", "Hi", "One.", False)), cap=10, days=EVERY_DAY, start="00:00", end="23:59"
    )
    setup(app, toml, leads)
    enroll_all(app, "C")
    clock.set(datetime(2026, 12, 7, 23, 40, tzinfo=UTC))
    transport = RecordingTransport(clock, delay=timedelta(minutes=3))
    _run(app, clock, transport, days=2, step=0.25)
    per_day: dict[date, int] = {}
    for sent in transport.sent:
        per_day[sent.at.date()] = per_day.get(sent.at.date(), 0) + 1
    assert per_day and max(per_day.values()) <= 10, per_day


# ---------------------------------------------------------------- 8. days keep the local time
def test_a_wait_in_days_keeps_the_local_time_across_a_dst_change(app: App, clock: FixedClock) -> None:
    berlin = {**ANN, "timezone": "Europe/Berlin"}
    setup(
        app,
        campaign_file("C", steps=steps_toml(("0d", "Hi", "One.", False), ("3d", None, "Two.", False))),
        [berlin],
    )
    clock.set(datetime(2026, 3, 27, 15, 30, tzinfo=UTC))  # Friday 16:30 in Berlin; DST starts Sunday
    enroll_all(app, "C")
    transport = RecordingTransport(clock)
    _run(app, clock, transport, days=4, step=0.25)
    first, second = transport.sent
    assert first.at == datetime(2026, 3, 27, 15, 30, tzinfo=UTC)
    # Monday 16:30 in Berlin (now UTC+2), not 72 hours later (17:30, outside the window,
    # which slipped the email to Tuesday).
    assert second.at == datetime(2026, 3, 30, 14, 30, tzinfo=UTC)


# ---------------------------------------------------------------- 6. corrected lead data
def test_reimported_names_reach_every_header_and_body_of_queued_emails(app: App, clock: FixedClock) -> None:
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    fixed = {**ANN, "first_name": "Anne", "last_name": "Leigh"}
    with app.uow() as uow:
        import_leads(uow, "P", list(read_leads(csv_of([fixed]))))
        uow.commit()
    _run(app, clock, transport, days=6)
    first, second, third = (s.email for s in transport.sent)
    assert (first.to_name, first.subject) == ("Ann Lee", "Hello Ann")  # sent before: unchanged
    for email in (second, third):
        assert email.to_name == "Anne Leigh"
        assert "Anne" in email.body and "Ann," not in email.body
        assert email.subject == "Re: Hello Ann"  # the thread's subject is what was sent


def test_approval_is_of_content_a_changed_email_is_approved_again(app: App, clock: FixedClock) -> None:
    toml = campaign_file(
        "C",
        steps=steps_toml(
            ("0d", "Hello {{ first_name }}", "First.", False), ("2d", None, "Dear {{ first_name }}", True)
        ),
    )
    _one_lead(app, toml)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    with app.uow() as uow:
        assert approve_steps(uow, "C") == 1  # the person approves "Dear Ann"
        uow.commit()
    with app.uow() as uow:
        import_leads(uow, "P", list(read_leads(csv_of([{**ANN, "first_name": "Anne"}]))))
        uow.commit()
    _run(app, clock, transport, days=5)
    assert [s.email.body for s in transport.sent] == ["First."]  # "Dear Anne" was never approved
    with app.uow() as uow:
        assert approve_steps(uow, "C") == 1
        uow.commit()
    _run(app, clock, transport, days=2)
    assert transport.sent[-1].email.body == "Dear Anne"


# ---------------------------------------------------------------- 5. one sequence at a time
def test_a_person_mid_sequence_is_not_enrolled_again_from_the_same_mailbox(
    app: App, clock: FixedClock
) -> None:
    from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads

    bob = {"email": "bob@corp.test", "first_name": "Bob"}
    setup(app, campaign_file("A"), [ANN, bob])
    with app.uow() as uow:
        enroll_leads(uow, "A", candidate_lead_ids(uow, "A", ANN["email"]), EnrollReport())
        uow.commit()
    setup(app, campaign_file("B", steps=steps_toml(("0d", "Other", "Other.", False))), [])
    report = enroll_all(app, "B")
    assert report.enrolled == 1  # Bob
    assert report.skipped == [
        (
            ANN["email"],
            "still mid-sequence in campaign 'A' from the same mailbox"
            " (enroll with --allow-parallel to send both)",
        )
    ]
    with app.uow() as uow:
        enroll_leads(
            uow,
            "B",
            candidate_lead_ids(uow, "B", ANN["email"]),
            report := EnrollReport(),
            allow_parallel=True,
        )
        uow.commit()
    assert report.enrolled == 1


def test_a_finished_sequence_does_not_block_the_next(app: App, clock: FixedClock) -> None:
    setup(app, campaign_file("A", steps=steps_toml(("0d", "Hi", "Only.", False))), [ANN])
    enroll_all(app, "A")
    clock.advance(MONDAY_10)
    Worker(app, RecordingTransport(clock)).run_once()
    setup(app, campaign_file("B", steps=steps_toml(("0d", "Other", "Other.", False))), [])
    assert enroll_all(app, "B").enrolled == 1


# ---------------------------------------------------------------- 10. crossed, refused
def test_sqlite_a_crossed_send_is_told_to_the_person(db_url: str, app: App, clock: FixedClock) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL holds the lead lock: the reply itself sees the crossed send")
    _one_lead(app)
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    transport.on_send = lambda _email: reply(app, ANN["email"], "P")  # lands during the call
    assert Worker(app, transport).run_once().sent == 1
    message_id = transport.sent[0].email.message_id
    # The reply found the email in flight: its thread says it crossed, and says it once.
    [told] = notices(app, "human_reply")
    assert told.payload["crossed"] and told.payload["recommended_next_step"].startswith("Apologise")
    assert (told.payload["product"], told.payload["campaigns"]) == ("P", ["C"])
    with app.uow() as uow:
        sent = uow.session.scalars(select(m.Step).where(m.Step.message_id == message_id)).one()
        assert sent.crossed


def test_sqlite_a_send_refused_at_the_last_moment_is_reported_as_refused(
    db_url: str, app: App, clock: FixedClock
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("on PostgreSQL the reply waits for the lead lock instead")
    _one_lead(app)
    clock.advance(MONDAY_10)
    app.hooks.arm("after_marker", lambda _name: reply(app, ANN["email"], "P"))
    report = Worker(app).run_once()
    app.hooks.disarm()
    assert (report.sent, report.refused, report.failed) == (0, 1, 0)
    with app.uow() as uow:
        kinds = uow.session.scalars(select(m.Event.kind).where(m.Event.step_id.is_not(None))).all()
    assert "send_refused" in kinds and "step_failed" not in kinds


# ---------------------------------------------------------------- 9. templates at enrolment
def test_defaults_and_conditionals_enrol_leads_without_the_field_and_failures_skip_them(
    app: App, clock: FixedClock
) -> None:
    steps = steps_toml(
        (
            "0d",
            "Hello {{ first_name | default('there') }}",
            "{% if title %}As {{ title }}: {% endif %}hi.",
            False,
        ),
        ("1d", None, "{{ first_name * 2000 }}", False),  # fine for short names, too long for long ones
    )
    nameless = {"email": "nameless@corp.test"}
    titled = {"email": "cfo@corp.test", "first_name": "Bo", "title": "CFO"}
    verbose = {"email": "long@corp.test", "first_name": "W" * 150}
    setup(app, campaign_file("C", steps=steps), [nameless, titled, verbose])
    report = enroll_all(app, "C")
    assert report.enrolled == 1  # Bo
    skipped = dict(report.skipped)
    assert skipped["nameless@corp.test"] == "step 2 body: no value for first_name"
    assert skipped["long@corp.test"].startswith("step 2 body: repeating a text or list too large")
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    [sent] = transport.sent
    assert (sent.email.subject, sent.email.body) == ("Hello Bo", "As CFO: hi.")


def test_a_reimport_that_no_longer_fills_a_template_holds_the_lead_and_sends_nothing_stale(
    app: App, clock: FixedClock
) -> None:
    # Step 2 needs a short first name; the corrected file makes it far too long to render. The
    # queued emails keep nothing of the old data going out: the lead waits for a person.
    steps = steps_toml(
        ("0d", "Hello {{ first_name }}", "Hi.", False), ("1d", None, "{{ first_name * 2000 }}", False)
    )
    setup(app, campaign_file("C", steps=steps), [{"email": "bo@corp.test", "first_name": "Bo"}])
    enroll_all(app, "C")
    clock.advance(MONDAY_10)
    transport = RecordingTransport(clock)
    Worker(app, transport).run_once()
    with app.uow() as uow:
        import_leads(uow, "P", list(read_leads(csv_of([{"email": "bo@corp.test", "first_name": "W" * 150}]))))
        uow.commit()
    assert lead_state(app, "bo@corp.test", "P") == "held"
    [told] = notices(app, "render_failed")
    assert "first_name" in str(told.payload) or "template" in str(told.payload)
    _run(app, clock, transport, days=4)
    assert len(transport.sent) == 1  # only the first email, sent before the change
