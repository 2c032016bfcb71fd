"""A hypothesis state machine over the reply states and the step lifecycle, on both databases.

Rules: time passes, workers claim and send, workers crash at any named failpoint, claims
expire and are recovered, replies of every kind arrive, a person approves steps; people read
a thread and later decide (resume, restart, stop) or answer on the version they read, however
stale it is by then (issue 20: taken only if they had seen every message of the lead); the server
refuses (for good, for now, an unknown user, a full mailbox, our own mailbox) or loses the
answer; a person resends or skips a failed step, resumes a held lead or a paused mailbox,
and changes the campaign. After every rule the invariants below are checked against the
database and the transport's own log: nothing after a reply, nothing twice, steps in order
and spaced, nothing threaded on an email that never arrived, nothing outside the window or
over the cap, nothing from a paused mailbox, an enrollment completed only when nothing is left.
"""

from __future__ import annotations

import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import OPEN, IllegalTransition, ReplyKind, ReplyState
from replyguard.service_layer.rescue.actions import approve_steps, set_lead_state
from replyguard.service_layer.rescue.decisions import (
    DecisionError,
    Request,
    ThreadNotFound,
    VersionChanged,
    decide,
)
from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, send_reply
from replyguard.service_layer.rescue.step_decisions import DecisionRefused, resend_step, skip_step
from replyguard.service_layer.sending.worker import Worker, WorkerReport
from replyguard.service_layer.step_tallies import step_counts
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaign_changes import apply_update
from replyguard.service_layer.workspace.leads import find_lead
from replyguard.service_layer.workspace.mailboxes import resume_mailbox
from tests.conftest import START, build_app
from tests.support.failpoints import NAMES, InjectedCrash, crash
from tests.support.scenario import csv_of, enroll_all
from tests.support.sequences import campaign_file, steps_toml

LEADS = [f"lead{i}@corp{i}.test" for i in range(4)]
STOPPING = {ReplyKind.HUMAN_REPLY, ReplyKind.UNSUBSCRIBE, ReplyKind.BOUNCE_HARD}
SEND_POINTS = [n for n in NAMES if n != "inside_reply_tx"]
REFUSALS = {
    "for good": Delivery(Outcome.PERMANENT, "RCPT TO refused: 554 5.7.1 Access denied"),
    "for now": Delivery(Outcome.TRANSIENT, "RCPT TO refused: 451 4.3.0 Try again later"),
    "unknown user": Delivery(
        Outcome.PERMANENT, "RCPT TO refused: 550 5.1.1 User unknown", blame=Blame.ADDRESS
    ),
    "mailbox full": Delivery(
        Outcome.TRANSIENT, "RCPT TO refused: 452 4.2.2 Mailbox full", blame=Blame.MAILBOX_FULL
    ),
    "our mailbox": Delivery(
        Outcome.TRANSIENT, "session setup refused: 535 5.7.8 Bad credentials", blame=Blame.SENDER
    ),
}
MIN_WAIT = timedelta(days=1)  # the shortest wait between two steps in every campaign version


def _campaign(*, cap: int = 5, approval_2: bool = True, wait_3: str = "2d", body_3: str = "Third.") -> str:
    return campaign_file(
        "C",
        cap=cap,
        steps=steps_toml(
            ("0d", "Hello {{ first_name }}", "Hi {{ first_name }}, first.", False),
            ("2d", None, "Second.", approval_2),
            (wait_3, None, body_3, False),
        ),
    )


UPDATES = {
    "as created": _campaign(),
    "cap 3": _campaign(cap=3),
    "no approval": _campaign(approval_2=False),
    "step 3 sooner": _campaign(wait_3="1d"),
    "step 3 later, new text": _campaign(wait_3="3d", body_3="A new third, {{ first_name }}."),
}


class LoggingTransport:
    """A Maildir transport that also writes, in order, every acceptance to a shared log with
    the clock's time and the threading headers. `script` holds refusals to answer first."""

    def __init__(self, inner: MaildirTransport, log: list[tuple[str, str]], clock: FixedClock) -> None:
        self.inner = inner
        self.log = log
        self.clock = clock
        self.can_probe = inner.can_probe
        self.script: list[Delivery] = []
        self.sent: list[tuple[object, OutgoingEmail]] = []  # (clock time, email)

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        if self.script:
            refusal = self.script.pop(0)
            if refusal.outcome is not Outcome.UNKNOWN:
                return refusal
            delivery = self.inner.send(email, before_commit)  # it went out; the answer was lost
            if delivery.detail == "written":
                self.log.append(("sent", email.to_address))
                self.sent.append((self.clock.now(), email))
            return refusal
        delivery = self.inner.send(email, before_commit)
        if delivery.outcome is Outcome.ACCEPTED and delivery.detail == "written":
            self.log.append(("sent", email.to_address))
            self.sent.append((self.clock.now(), email))
        return delivery

    def probe(self, email: OutgoingEmail) -> Probe:
        return self.inner.probe(email)

    def close(self) -> None:
        return None


class SequenceMachine(RuleBasedStateMachine):
    url: str
    workdir: Path

    @initialize()
    def setup(self) -> None:
        self.clock = FixedClock(START + timedelta(hours=3))
        outbox = self.workdir / "outbox"
        shutil.rmtree(outbox, ignore_errors=True)
        self.app: App = build_app(self.url, self.clock, outbox, lease=timedelta(minutes=5))
        self.log: list[tuple[str, str]] = []
        self.transport = LoggingTransport(MaildirTransport(outbox), self.log, self.clock)
        self.app.use_transport(self.transport)
        from replyguard.domain.leads_csv import read_leads
        from replyguard.service_layer.workspace.campaigns import create_campaign
        from replyguard.service_layer.workspace.leads import import_leads

        with self.app.uow() as uow:
            create_campaign(uow, UPDATES["as created"])
            import_leads(uow, "P", list(read_leads(csv_of([{"email": e, "first_name": "X"} for e in LEADS]))))
            uow.commit()
        enroll_all(self.app, "C")
        self.paused: dict[str, date] = {}
        self.cap = 5
        self.sends_checked = 0
        self.mailbox_paused = False
        self.seen: dict[str, tuple[int, int, int]] = {}  # email: (thread, version, messages)

    def teardown(self) -> None:
        if hasattr(self, "app"):
            self.app.close()

    def _worker(self) -> Worker:
        return Worker(self.app, self.transport)

    @rule(hours=st.integers(min_value=1, max_value=30))
    def time_passes(self, hours: int) -> None:
        self.clock.advance(timedelta(hours=hours))
        for email, back in list(self.paused.items()):
            if self.clock.now().date() > back:
                del self.paused[email]

    @rule()
    def worker_runs(self) -> None:
        self._worker().run_once()

    @rule()
    def claim_only(self) -> None:
        # A worker that claims and then disappears before sending.
        self._worker().claim(WorkerReport(), limit=2)

    @rule(point=st.sampled_from(SEND_POINTS))
    def worker_crashes(self, point: str) -> None:
        self.app.hooks.arm(point, crash)
        try:
            self._worker().run_once()
        except InjectedCrash:
            pass
        finally:
            self.app.hooks.disarm()

    @rule()
    def leases_expire(self) -> None:
        self.clock.advance(self.app.settings.lease + timedelta(seconds=1))
        self._worker().recover()

    @rule(
        index=st.integers(0, len(LEADS) - 1), kind=st.sampled_from(list(ReplyKind)), days=st.integers(1, 90)
    )
    def reply_arrives(self, index: int, kind: ReplyKind, days: int) -> None:
        from tests.support.scenario import reply

        email = LEADS[index]
        back = (self.clock.now() + timedelta(days=days)).date() if kind is ReplyKind.OUT_OF_OFFICE else None
        outcome = reply(self.app, email, "P", kind, back)
        self.log.append(("stop" if kind in STOPPING else "reply", email))
        if outcome.lead_state == "out_of_office" and back is not None:
            self.paused[email] = back
        else:
            self.paused.pop(email, None)

    @rule()
    def person_approves(self) -> None:
        with self.app.uow() as uow:
            approve_steps(uow, "C")
            uow.commit()

    @rule(refusal=st.sampled_from([*REFUSALS, "answer lost"]))
    def server_misbehaves_next(self, refusal: str) -> None:
        if refusal == "answer lost":
            self.transport.script.append(Delivery(Outcome.UNKNOWN, "no reply after the final dot"))
        else:
            self.transport.script.append(REFUSALS[refusal])

    @rule(index=st.integers(0, len(LEADS) - 1), resend=st.booleans())
    def person_decides_a_failed_step(self, index: int, resend: bool) -> None:
        try:
            with self.app.uow() as uow:
                (resend_step if resend else skip_step)(uow, "C", LEADS[index])
                uow.commit()
        except (LookupError, DecisionRefused):
            pass

    @rule(index=st.integers(0, len(LEADS) - 1))
    def person_resumes_a_lead(self, index: int) -> None:
        try:
            with self.app.uow() as uow:
                set_lead_state(uow, LEADS[index], "P", ReplyState.ACTIVE, why="a person decided")
                uow.commit()
        except IllegalTransition:
            return
        self.log.append(("resumed", LEADS[index]))  # a person's decision lifts the stop
        self.paused.pop(LEADS[index], None)

    @rule(index=st.integers(0, len(LEADS) - 1))
    def person_looks_at_the_thread(self, index: int) -> None:
        """A person reads the lead's open thread: the version they saw, and how many of the
        lead's messages it held."""
        with self.app.uow() as uow:
            lead_id = find_lead(uow, LEADS[index], "P").id
            thread = uow.session.scalars(
                select(m.RescueThread)
                .where(m.RescueThread.lead_id == lead_id, m.RescueThread.state != "done")
                .order_by(m.RescueThread.id.desc())
            ).first()
            if thread is not None:
                self.seen[LEADS[index]] = (thread.id, thread.version, self._messages(uow, lead_id))

    def _messages(self, uow: UnitOfWork, lead_id: int) -> int:
        return len(uow.session.scalars(select(m.Reply.id).where(m.Reply.lead_id == lead_id)).all())

    def _unseen_messages(self, email: str, seen: int) -> int:
        with self.app.uow() as uow:
            return self._messages(uow, find_lead(uow, email, "P").id) - seen

    @rule(index=st.integers(0, len(LEADS) - 1), action=st.sampled_from(["resume", "restart", "stop"]))
    def person_decides_on_what_they_saw(self, index: int, action: str) -> None:
        """The version a person saw may be stale by now (mail arrived, workers ran, another
        person decided): the decision is taken only on the current one."""
        email = LEADS[index]
        if email not in self.seen:
            return
        thread_id, version, messages = self.seen[email]
        try:
            with self.app.uow() as uow:
                decide(
                    uow,
                    thread_id,
                    Request(action=action, by="rep", seen=version, confirmed=True),
                    self.app.settings,
                )
                uow.commit()
        except (DecisionError, VersionChanged, ThreadNotFound):
            return
        # Taken: then the person had seen every message of the lead.
        assert self._unseen_messages(email, messages) == 0, f"{action} on {email} over an unseen message"
        self.log.append(("stop" if action == "stop" else "resumed", email))
        if action != "stop":
            self.paused.pop(email, None)

    @rule(
        index=st.integers(0, len(LEADS) - 1),
        kind=st.sampled_from(sorted(STOPPING)),
        action=st.sampled_from(["resume", "answer"]),
    )
    def a_message_arrives_while_a_person_reads(self, index: int, kind: ReplyKind, action: str) -> None:
        """The race of issue 20 made certain: the person reads, their next message lands, the
        person acts on what they read."""
        self.seen.pop(LEADS[index], None)
        self.person_looks_at_the_thread(index)
        if LEADS[index] not in self.seen:  # nothing waits for a person yet: they write first
            self.reply_arrives(index, ReplyKind.HUMAN_REPLY, 1)
            self.person_looks_at_the_thread(index)
        self.reply_arrives(index, kind, 1)
        if action == "answer":
            self.person_answers_what_they_saw(index, another=False)
        else:
            self.person_decides_on_what_they_saw(index, action)

    @rule(index=st.integers(0, len(LEADS) - 1), another=st.booleans())
    def person_answers_what_they_saw(self, index: int, another: bool) -> None:
        email = LEADS[index]
        if email not in self.seen:
            return
        thread_id, version, messages = self.seen[email]
        answer = PersonReply(thread_id, f"Answer {len(self.log)}", "rep", seen=version, another=another)
        try:
            result = send_reply(self.app, answer)
        except (SendRefused, VersionChanged, ThreadNotFound):
            return
        if result.state in ("sent", "unknown") and not result.duplicate:
            assert self._unseen_messages(email, messages) == 0, f"answered {email} over an unseen message"

    @rule()
    def person_resumes_the_mailbox(self) -> None:
        with self.app.uow() as uow:
            resume_mailbox(uow, "rep@seller.test")
            uow.commit()

    @rule(version=st.sampled_from(sorted(UPDATES)))
    def campaign_is_updated(self, version: str) -> None:
        with self.app.uow() as uow:
            apply_update(uow, UPDATES[version])
            uow.commit()

    # ------------------------------------------------------------------ invariants
    @invariant()
    def no_send_after_a_stopping_reply(self) -> None:
        stopped_at: set[str] = set()
        for what, email in self.log:
            if what == "stop":
                stopped_at.add(email)
            if what == "resumed":
                stopped_at.discard(email)
            if what == "sent":
                assert email not in stopped_at, f"{email} was sent to after its reply"

    @invariant()
    def steps_go_out_in_order_and_only_after_the_one_before(self) -> None:
        """A step is sent only when every step before it was sent or skipped by a person."""
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Step.enrollment_id, m.Step.position, m.Step.state).order_by(
                    m.Step.enrollment_id, m.Step.position
                )
            ).all()
        by_enrollment: dict[int, list[str]] = {}
        for enrollment_id, _position, state in rows:
            by_enrollment.setdefault(enrollment_id, []).append(state)
        for states in by_enrollment.values():
            for k, state in enumerate(states):
                if state in ("sent", "claimed", "sending", "unknown"):
                    assert all(s in ("sent", "skipped") for s in states[:k]), states

    @invariant()
    def nothing_threads_on_an_email_that_never_arrived(self) -> None:
        delivered: set[str] = set()
        for _at, email in self.transport.sent:
            for ref in (email.references or "").split():
                assert ref in delivered, f"{email.send_key} replies to {ref}, never delivered"
            assert email.in_reply_to is None or email.in_reply_to in delivered
            assert email.subject.startswith("Re: ") == bool(email.in_reply_to)
            delivered.add(email.message_id)

    @invariant()
    def follow_ups_keep_their_spacing_window_and_cap(self) -> None:
        last: dict[str, object] = {}
        per_day: dict[object, int] = {}
        for at, email in self.transport.sent:
            assert isinstance(at, datetime)
            assert at.weekday() < 5 and 9 <= at.hour < 17, f"{email.send_key} sent at {at}"
            previous = last.get(email.to_address)
            if previous is not None:
                assert isinstance(previous, datetime)
                assert at - previous >= MIN_WAIT, f"{email.to_address}: {previous} then {at}"
            last[email.to_address] = at
            per_day[at.date()] = per_day.get(at.date(), 0) + 1
        # The cap was 3 or 5 at every moment: never more than 5 on one day.
        assert all(n <= 5 for n in per_day.values()), per_day

    @invariant()
    def enrollments_complete_only_when_nothing_is_left(self) -> None:
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Enrollment.id, m.Step.state)
                .join(m.Step, m.Step.enrollment_id == m.Enrollment.id)
                .where(m.Enrollment.state == "completed")
            ).all()
        assert [r for r in rows if r[1] in OPEN] == []

    @invariant()
    def a_failed_step_holds_its_lead_or_a_person_owns_it(self) -> None:
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Step.id, m.Lead.id, m.Lead.reply_state, m.Step.last_error)
                .join(m.Lead, m.Lead.id == m.Step.lead_id)
                .where(m.Step.state == "failed")
            ).all()
            told = set(uow.session.scalars(select(m.Event.step_id).where(m.Event.kind == "lead_held")).all())
            decided = set(
                uow.session.scalars(select(m.Event.lead_id).where(m.Event.kind == "lead_state_set")).all()
            )
        for step_id, lead_id, state, error in rows:
            # Held for a person (told), bounced by the reply transaction, or decided by a person.
            assert state != "active" or step_id in told or lead_id in decided, (step_id, state, error)

    @invariant()
    def a_paused_mailbox_sends_nothing(self) -> None:
        with self.app.uow() as uow:
            mailbox = uow.session.scalars(select(m.Mailbox)).one()
            paused_at = mailbox.paused_at if mailbox.status == "paused" else None
        if paused_at is not None:
            assert all(at <= paused_at for at, _ in self.transport.sent), paused_at

    @invariant()
    def each_email_at_most_once(self) -> None:
        with self.app.uow() as uow:
            sent = uow.session.scalars(select(m.Step.send_key).where(m.Step.state == "sent")).all()
        files = list((self.transport.inner.root / "new").iterdir())
        assert len(files) == len({f.name for f in files})
        assert {f"rg.{k}.eml" for k in sent} <= {f.name for f in files}
        assert sum(1 for what, _ in self.log if what == "sent") == len(files)

    @invariant()
    def stopped_leads_have_nothing_queued(self) -> None:
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Lead.reply_state, m.Step.state)
                .join(m.Step, m.Step.lead_id == m.Lead.id)
                .where(m.Lead.reply_state.in_(["replied", "bounced", "unsubscribed", "stopped"]))
            ).all()
        assert [r for r in rows if r[1] in ("scheduled", "claimed", "awaiting_approval")] == []

    @invariant()
    def claims_are_fenced_and_leased(self) -> None:
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Step.state, m.Step.claim_token, m.Step.lease_until).where(
                    m.Step.state.in_(["claimed", "sending"])
                )
            ).all()
        assert all(token and lease for _, token, lease in rows)

    @invariant()
    def the_step_counts_are_the_steps_counted(self) -> None:
        """What the campaign page reads from the ledger the database keeps (migration 0030)."""
        with self.app.engine.connect() as conn:
            rows = conn.execute(
                select(m.Step.campaign_step_id, m.Step.state, func.count()).group_by(
                    m.Step.campaign_step_id, m.Step.state
                )
            ).all()
            templates = conn.scalars(select(m.CampaignStep.id)).all()
            found = step_counts(conn, self.app.workspace_id, templates)
        assert found == {(template, state): n for template, state, n in rows}

    @invariant()
    def unknown_outcomes_are_held_or_owned_by_a_person(self) -> None:
        with self.app.uow() as uow:
            rows = uow.session.execute(
                select(m.Lead.id, m.Lead.reply_state)
                .join(m.Step, m.Step.lead_id == m.Lead.id)
                .where(m.Step.state == "unknown")
            ).all()
            decided = set(
                uow.session.scalars(select(m.Event.lead_id).where(m.Event.kind == "lead_state_set")).all()
            )
        # Held, or a person took the lead back (its later steps still wait behind the unknown one).
        assert all(state != "active" or lead_id in decided for lead_id, state in rows)


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.long)])
def test_state_machine(
    database: str, tmp_path: Path, sqlite_template: Path, request: pytest.FixtureRequest
) -> None:
    if database == "sqlite":
        path = tmp_path / "machine.db"

        def fresh() -> str:
            shutil.copy(sqlite_template, path)
            for suffix in ("-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            return f"sqlite:///{path}"
    else:
        pg_url = request.getfixturevalue("pg_url")
        from tests.conftest import _truncate

        def fresh() -> str:
            _truncate(pg_url)
            return str(pg_url)

    class Machine(SequenceMachine):
        workdir = tmp_path

        def __init__(self) -> None:
            self.url = fresh()
            super().__init__()

    Machine.TestCase.settings = settings(
        max_examples=15,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    Machine.TestCase().runTest()
