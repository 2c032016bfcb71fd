"""Driving one audit run: canary leads through production's own code, step by step.

Nothing here takes a shortcut around the code that runs every day: canaries are imported
(`import_leads`) and enrolled (`enroll_leads`) like any lead; their emails go out through the
guarded worker's `claim` / `send_batch` / `recover` and the configured transport; the test
messages are RFC 5322 bytes fed to `ingest_raw`, which runs the reply transaction. The driver
only chooses the order (the race the article asks about) and watches: a counting wrapper
around the transport records every hand-over, and observed hooks record how far the
send path got. The few writes of its own are marked events: `audit_forced_due` (a canary step
made due now) and the canaries' audit mark.

What the driver never does: claim, recover or send for anyone but its canaries (`only_lead`),
or deliver a notice.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.audit import CanaryError, Original, Role, canary_absence, canary_address, canary_reply
from replyguard.domain.leads_csv import LeadRow
from replyguard.domain.schedule import load_zone
from replyguard.domain.states import StepState
from replyguard.service_layer.audit.canary import AuditSetupError, check_canary
from replyguard.service_layer.audit.watch import (
    Attempt,
    AuditCrash,
    CountingTransport,
    Handed,
    Later,
    ObservedHooks,
)
from replyguard.service_layer.inbound.ingest import IngestResult, ingest_raw
from replyguard.service_layer.rescue.actions import approve_steps
from replyguard.service_layer.runtime import Rewired, Runtime
from replyguard.service_layer.sending.worker import Claim, Worker, WorkerReport
from replyguard.service_layer.workspace.campaigns import custom_fields, find_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, enroll_leads
from replyguard.service_layer.workspace.leads import find_lead, import_leads

AUDITOR = "replyguard audit"
ROLES = (Role.REPLY, Role.FLIGHT, Role.AWAY)
#: How far ahead the test out-of-office says the canary is back (inside any sane pause limit).
AWAY_DAYS = 10


@dataclass(frozen=True, slots=True)
class StepNow:
    state: str
    lease_until: datetime | None


@dataclass
class Canary:
    role: Role
    address: str
    lead_id: int
    step_ids: list[int]
    first: Claim | None = None  # the claim its first email was sent (or left in flight) with


@dataclass
class Drive:
    """Everything one run did and saw, for the checks (audit_checks.py) to judge."""

    run_id: int
    campaign: str
    campaign_id: int
    product: str
    owner: str
    zone: str
    canaries: dict[Role, Canary] = field(default_factory=dict)
    claimed: Claim | None = None  # the reply canary's step claimed before its reply
    inbound: dict[Role, IngestResult] = field(default_factory=dict)
    queue_after: dict[Role, list[dict[str, object]]] = field(default_factory=dict)
    send_check: Attempt | None = None
    retries: list[Attempt] = field(default_factory=list)
    recovered: int = 0
    away_pass: Attempt | None = None
    back_on: date | None = None
    calls: list[Handed] = field(default_factory=list)
    mark: int = 0  # calls[mark:] happened after the first test message


def setup(app: Runtime, run_id: int, campaign_name: str, base: str) -> Drive:
    """Create and enroll the run's canaries (one transaction, like `leads import` + `enroll`)."""
    with app.uow() as uow:
        campaign = find_campaign(uow, campaign_name)
        if campaign.status != "active":
            raise AuditSetupError(f"campaign {campaign_name!r} is {campaign.status}: it sends nothing")
        positions = uow.session.scalars(
            select(m.CampaignStep.position).where(m.CampaignStep.campaign_id == campaign.id)
        ).all()
        if len(positions) < 2:
            raise AuditSetupError(
                f"campaign {campaign_name!r} has one step: nothing can follow a reply, nothing to audit"
            )
        product = uow.session.get_one(m.Product, campaign.product_id).name
        check_canary(uow, base)
        drive = Drive(run_id, campaign.name, campaign.id, product, campaign.owner, campaign.timezone)
        fields = dict.fromkeys(custom_fields(uow), "audit")
        for role in ROLES:
            try:
                address = canary_address(base, run_id, role)
            except CanaryError as exc:
                raise AuditSetupError(str(exc)) from exc
            row = LeadRow(0, address, "Audit", "Canary", "replyguard audit", "", None, (), None, fields)
            imported = import_leads(uow, product, [row])
            if imported.errors:
                raise AuditSetupError(f"canary {address}: {imported.errors[0].message}")
            lead = find_lead(uow, address, product)
            lead.audit_run_id = run_id
            uow.add_event("audit_canary", lead_id=lead.id, run_id=run_id, role=role.value)
            drive.canaries[role] = Canary(role, address, lead.id, [])
        report = EnrollReport()
        enroll_leads(uow, campaign.name, [c.lead_id for c in drive.canaries.values()], report)
        if report.skipped:
            address, why = report.skipped[0]
            raise AuditSetupError(f"the canary {address} could not be enrolled: {why}")
        for canary in drive.canaries.values():
            canary.step_ids = list(
                uow.session.scalars(
                    select(m.Step.id).where(m.Step.lead_id == canary.lead_id).order_by(m.Step.position)
                )
            )
        uow.commit()
    return drive


class Driver:
    """Runs the canaries of `drive` through the worker, ingest and recovery, in the order the
    article's race needs, recording what each call did."""

    def __init__(
        self, app: Runtime, drive: Drive, progress: Callable[[str], None] = lambda _stage: None
    ) -> None:
        self.app, self.drive, self.progress = app, drive, progress
        self.transport = CountingTransport(app.transport)
        self.hooks = ObservedHooks(app.hooks)
        self.worker = Worker(Rewired(app, hooks=self.hooks), self.transport)
        self.report = WorkerReport()
        drive.calls = self.transport.calls

    def run(self) -> None:
        """Each phase is announced to `progress` first, between transactions (never inside one:
        the web's progress writes its own)."""
        self.progress("sending each canary its first email")
        self.first_emails()
        self.progress("the worker claims the next step before the reply")
        self.claim_before_reply()
        self.progress("the test reply and the out-of-office arrive")
        self.test_messages()
        d = self.drive
        self.progress("the worker tries to send what it claimed")
        d.send_check = self.attempt(
            "the worker sends the step it claimed before the reply",
            lambda: self.worker.send_batch([self._claimed()], self.report),
        )
        self.progress("retries and recovery")
        self.retries()
        self.progress("a worker pass for the absent canary")
        d.away_pass = self.attempt("a worker pass for the absent canary", self._pass(self.worker, Role.AWAY))

    # ------------------------------------------------------------------ before the replies
    def first_emails(self) -> None:
        """Each canary's first email, really sent; the flight canary's worker "crashes" right
        after the transport took it (at the point `after_transport`), leaving it `sending`."""
        for role in ROLES:
            canary = self.drive.canaries[role]
            self.make_due(canary, 1)
            claims = self.worker.claim(self.report, limit=1, only_lead=canary.lead_id)
            if [c.step_id for c in claims] != canary.step_ids[:1]:
                raise AuditSetupError(f"the first email of canary {canary.address} could not be claimed")
            canary.first = claims[0]
            if role is Role.FLIGHT:
                self.hooks.crash_at = "after_transport"
                try:
                    self.worker.send_batch(claims, self.report)
                except AuditCrash:
                    pass
                finally:
                    self.hooks.crash_at = None
                state = self._step(canary.step_ids[0]).state
                if state != StepState.SENDING or self.transport.calls[-1].outcome != "accepted":
                    raise AuditSetupError(self._not_sent(canary, state))
                continue
            if self.worker.send_batch(claims, self.report) != ["sent"]:
                raise AuditSetupError(self._not_sent(canary, self._step(canary.step_ids[0]).state))

    def claim_before_reply(self) -> None:
        """The reply canary's next step, made due and claimed by the worker's own claim: the
        worker now holds it, as a worker does in the instant before a reply commits."""
        canary = self.drive.canaries[Role.REPLY]
        step_id = canary.step_ids[1]
        self.make_due(canary, 2)
        claims = self.worker.claim(self.report, limit=1, only_lead=canary.lead_id)
        if [c.step_id for c in claims] != [step_id]:
            raise AuditSetupError(f"step 2 of canary {canary.address} could not be claimed")
        self.drive.claimed = claims[0]

    def make_due(self, canary: Canary, position: int) -> None:
        """The canary's step at `position`, approved by the auditor if it waits for approval
        (`steps approve`, as a person would), then due now."""
        step_id = canary.step_ids[position - 1]
        if self._step(step_id).state == StepState.AWAITING_APPROVAL:
            with self.app.uow() as uow:
                approve_steps(
                    uow, self.drive.campaign, email=canary.address, position=position, approver=AUDITOR
                )
                uow.commit()
        self.force_due(step_id)

    def force_due(self, step_id: int) -> None:
        """Make a canary's scheduled step due now (never later than it was)."""
        with self.app.uow() as uow:
            step = uow.session.get_one(m.Step, step_id)
            uow.lock_leads([step.lead_id])
            uow.session.refresh(step)
            now = uow.clock.now()
            if step.state == StepState.SCHEDULED and step.due_at > now:
                uow.add_event(
                    "audit_forced_due", lead_id=step.lead_id, step_id=step.id, was=step.due_at.isoformat()
                )
                step.due_at, step.updated_at = now, now
            uow.commit()

    # ------------------------------------------------------------------ the test messages
    def test_messages(self) -> None:
        """A person's reply to the reply and flight canaries, an out-of-office from the away
        canary: each threaded on the email that canary really received, through ingest."""
        d = self.drive
        d.mark = len(self.transport.calls)
        now = self.app.clock.now()
        away = min(AWAY_DAYS, max(1, self.app.settings.max_pause.days // 2))  # a pause, not a hold
        d.back_on = now.astimezone(load_zone(d.zone)).date() + timedelta(days=away)
        for role in ROLES:
            canary = d.canaries[role]
            original = self._original(canary.step_ids[0])
            # Unguessable, so nobody can send a message ahead of ours that ingest would then
            # take ours for a copy of.
            token = secrets.token_hex(8)
            message_id = f"<rg-audit.{d.run_id}.{role.value}.{token}@{canary.address.partition('@')[2]}>"
            when = self.app.clock.now()
            if role is Role.AWAY:
                raw = canary_absence(
                    sender=canary.address,
                    original=original,
                    when=when,
                    message_id=message_id,
                    run_id=d.run_id,
                    back_on=d.back_on,
                )
            else:
                raw = canary_reply(
                    sender=canary.address,
                    original=original,
                    when=when,
                    message_id=message_id,
                    run_id=d.run_id,
                )
            d.inbound[role] = ingest_raw(self.app, raw, source="audit")
            # Read the queue right after the commit: whatever is not done now was not done in
            # the reply's transaction.
            d.queue_after[role] = self._queue(canary.lead_id)

    # ------------------------------------------------------------------ after the replies
    def retries(self) -> None:
        d = self.drive
        reply, flight = d.canaries[Role.REPLY], d.canaries[Role.FLIGHT]
        assert reply.first is not None and flight.first is not None
        claimed = self._claimed()
        d.retries.append(
            self.attempt(
                "re-drive the refused claim of step 2", lambda: self.worker.send_batch([claimed], self.report)
            )
        )
        d.retries.append(
            self.attempt(
                "re-drive the claim step 1 was sent with",
                lambda: self.worker.send_batch([reply.first], self.report),  # type: ignore[list-item]
            )
        )
        d.retries.append(
            self.attempt("a worker pass for the replied canary", self._pass(self.worker, Role.REPLY))
        )
        # The flight canary's first step is still `sending`: recovery takes it once its lease
        # has expired. Run recovery as it runs then (a clock past the lease), for this lead only.
        lease_until = self._step(flight.step_ids[0]).lease_until
        delta = (lease_until - self.app.clock.now() if lease_until else timedelta()) + timedelta(seconds=1)
        later = Worker(
            Rewired(self.app, hooks=self.hooks, clock=Later(self.app.clock, delta)), self.transport
        )

        def recover() -> list[str]:
            d.recovered = later.recover(only_lead=flight.lead_id)
            return [f"recovered {d.recovered}"]

        d.retries.append(self.attempt("recovery of step 1, left in sending, after its lease", recover))
        d.retries.append(self.attempt("a worker pass after the recovery", self._pass(later, Role.FLIGHT)))
        d.retries.append(
            self.attempt(
                "re-drive the claim step 1 was in flight with",
                lambda: later.send_batch([flight.first], self.report),  # type: ignore[list-item]
            )
        )

    def attempt(self, label: str, action: Callable[[], list[str]]) -> Attempt:
        before = len(self.transport.calls)
        self.hooks.seen.clear()
        results = action()
        return Attempt(label, list(results), self.transport.calls[before:], list(self.hooks.seen))

    def _pass(self, worker: Worker, role: Role) -> Callable[[], list[str]]:
        """What a worker pass does for one canary: claim whatever is due, send it."""
        lead_id = self.drive.canaries[role].lead_id

        def run() -> list[str]:
            claims = worker.claim(self.report, only_lead=lead_id)
            sent = worker.send_batch(claims, self.report) if claims else []
            return [f"claimed {len(claims)}", *sent]

        return run

    # ------------------------------------------------------------------ reading
    def _claimed(self) -> Claim:
        assert self.drive.claimed is not None
        return self.drive.claimed

    def _step(self, step_id: int) -> StepNow:
        with self.app.uow() as uow:
            row = uow.session.execute(
                select(m.Step.state, m.Step.lease_until).where(m.Step.id == step_id)
            ).one()
        return StepNow(row.state, row.lease_until)

    def _queue(self, lead_id: int) -> list[dict[str, object]]:
        with self.app.uow() as uow:
            steps = uow.session.scalars(
                select(m.Step).where(m.Step.lead_id == lead_id).order_by(m.Step.position)
            )
            return [step_view(s) for s in steps]

    def _original(self, step_id: int) -> Original:
        with self.app.uow() as uow:
            step = uow.session.get_one(m.Step, step_id)
            mailbox = uow.session.get_one(m.Mailbox, step.mailbox_id)
            handed = uow.session.scalar(
                select(m.OutboundMessage.handed_at).where(m.OutboundMessage.step_id == step.id)
            )
            return Original(
                step.message_id,
                step.subject,
                step.body,
                mailbox.address,
                step.sent_at or handed or uow.clock.now(),
            )

    def _not_sent(self, canary: Canary, state: str) -> str:
        last = self.transport.calls[-1] if self.transport.calls else None
        told = f"the transport said {last.outcome}" if last else "the transport was not called"
        return f"the first email to canary {canary.address} did not go out (step {state}, {told})"


def step_view(step: m.Step) -> dict[str, object]:
    return {
        "step_id": step.id,
        "position": step.position,
        "state": step.state,
        "due_at": step.due_at.isoformat(),
        "cancel_reason": step.cancel_reason,
        "cancel_requested": step.cancel_requested,
    }


def start_of(day: date, zone: str) -> datetime:
    return datetime.combine(day, time(0), tzinfo=load_zone(zone))
