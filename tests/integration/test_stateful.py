"""A hypothesis state machine over the reply states and the step lifecycle, on both databases.

Rules: time passes, workers claim and send, workers crash at any named failpoint, claims
expire and are recovered, replies of every kind arrive, a person approves steps. After every
rule the invariants below are checked against the database and the transport's own log.
"""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.actions import approve_steps
from replyguard.service_layer.failpoints import NAMES, InjectedCrash, crash
from replyguard.service_layer.worker import Worker, WorkerReport
from tests.conftest import START, build_app
from tests.support.scenario import campaign_toml, csv_of, enroll_all

LEADS = [f"lead{i}@corp{i}.test" for i in range(4)]
STOPPING = {ReplyKind.HUMAN_REPLY, ReplyKind.UNSUBSCRIBE, ReplyKind.BOUNCE_HARD}
SEND_POINTS = [n for n in NAMES if n != "inside_reply_tx"]


class LoggingTransport:
    """A Maildir transport that also writes, in order, every acceptance to a shared log."""

    def __init__(self, inner: MaildirTransport, log: list[tuple[str, str]]) -> None:
        self.inner = inner
        self.log = log
        self.can_probe = inner.can_probe

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        delivery = self.inner.send(email, before_commit)
        if delivery.outcome is Outcome.ACCEPTED and delivery.detail == "written":
            self.log.append(("sent", email.to_address))
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
        self.transport = LoggingTransport(MaildirTransport(outbox), self.log)
        self.app.use_transport(self.transport)
        from replyguard.domain.leads_csv import read_leads
        from replyguard.service_layer.campaigns import create_campaign
        from replyguard.service_layer.leads import import_leads

        with self.app.uow() as uow:
            create_campaign(uow, campaign_toml("C", "P", cap=5, approval_last=True))
            import_leads(uow, "P", list(read_leads(csv_of([{"email": e, "first_name": "X"} for e in LEADS]))))
            uow.commit()
        enroll_all(self.app, "C")
        self.paused: dict[str, date] = {}

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
        self.app.failpoints.arm(point, crash)
        try:
            self._worker().run_once()
        except InjectedCrash:
            pass
        finally:
            self.app.failpoints.disarm()

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

    # ------------------------------------------------------------------ invariants
    @invariant()
    def no_send_after_a_stopping_reply(self) -> None:
        stopped_at: set[str] = set()
        for what, email in self.log:
            if what == "stop":
                stopped_at.add(email)
            if what == "sent":
                assert email not in stopped_at, f"{email} was sent to after its reply"

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
    def unknown_outcomes_are_held_or_owned_by_a_person(self) -> None:
        with self.app.uow() as uow:
            states = uow.session.scalars(
                select(m.Lead.reply_state)
                .join(m.Step, m.Step.lead_id == m.Lead.id)
                .where(m.Step.state == "unknown")
            ).all()
        assert all(s != "active" for s in states)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
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
