"""The six checks of one audit run: what the driver did and saw, judged against the rows the
reply transaction, the worker and the outbox wrote. Read-only.

Each check is a function `(uow, drive) -> CheckResult`; the evidence is what a person needs to
believe the verdict without reading the database: ids, times, states and transaction stamps.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.audit import CHECKS, CheckResult, Role, Status
from replyguard.domain.states import ReplyKind, ReplyState, StepState
from replyguard.service_layer.audit.drive import Drive, start_of
from replyguard.service_layer.uow import UnitOfWork

QUEUED = {StepState.SCHEDULED, StepState.CLAIMED, StepState.AWAITING_APPROVAL}
REPLIED = (Role.REPLY, Role.FLIGHT)  # the canaries that got a person's reply
TITLES = dict(CHECKS)


def _result(name: str, ok: bool, summary: str, details: list[str], evidence: dict[str, Any]) -> CheckResult:
    return CheckResult(
        name, TITLES[name], Status.PASS if ok else Status.FAIL, summary, tuple(details), evidence
    )


def _tx(tx: str | None) -> str:
    return tx[:8] if tx else "none"


class Facts:
    """The rows a run's checks read, loaded once per canary."""

    def __init__(self, uow: UnitOfWork, drive: Drive) -> None:
        self.uow, self.drive = uow, drive

    def lead(self, role: Role) -> m.Lead:
        return self.uow.session.get_one(m.Lead, self.drive.canaries[role].lead_id, populate_existing=True)

    def reply(self, role: Role) -> m.Reply | None:
        inbound = self.drive.inbound.get(role)
        if inbound is None:
            return None
        return self.uow.session.scalar(
            select(m.Reply)
            .where(m.Reply.inbound_message_id == inbound.inbound_id)
            .order_by(m.Reply.id)
            .limit(1)
        )

    def events(self, role: Role, kind: str) -> list[m.Event]:
        return list(
            self.uow.session.scalars(
                select(m.Event)
                .where(m.Event.lead_id == self.drive.canaries[role].lead_id, m.Event.kind == kind)
                .order_by(m.Event.id)
            )
        )

    def recorded(self, role: Role) -> m.Event | None:
        """The `reply_recorded` event of the role's test message: the reply's transaction."""
        reply = self.reply(role)
        found = [
            e for e in self.events(role, "reply_recorded") if reply and e.data.get("reply_id") == reply.id
        ]
        return found[0] if found else None

    def step(self, step_id: int) -> m.Step:
        return self.uow.session.get_one(m.Step, step_id, populate_existing=True)


def reply_state(facts: Facts) -> CheckResult:
    """The canary has one state, on its lead row, written by the reply; the send path reads it."""
    details, evidence, ok = [], {}, True
    for role in REPLIED:
        canary, inbound = facts.drive.canaries[role], facts.drive.inbound[role]
        lead, reply, recorded = facts.lead(role), facts.reply(role), facts.recorded(role)
        good = (
            inbound.status == "matched"
            and inbound.lead_ids == (canary.lead_id,)
            and reply is not None
            and reply.kind == ReplyKind.HUMAN_REPLY
            and lead.reply_state == ReplyState.REPLIED
            and lead.last_reply_id == reply.id
            and recorded is not None
            and recorded.data.get("state_after") == lead.reply_state
        )
        ok = ok and good
        details.append(
            f"{role}: lead {lead.id} <{canary.address}> is {lead.reply_state} since "
            f"{lead.reply_state_updated_at:%Y-%m-%d %H:%M:%S}; last_reply_id {lead.last_reply_id}; "
            f"reply {reply.id if reply else '-'} ({reply.kind if reply else 'none'}) from inbound "
            f"{inbound.inbound_id} ({inbound.status})"
        )
        evidence[role.value] = {
            "lead_id": lead.id,
            "address": canary.address,
            "reply_state": lead.reply_state,
            "reply_state_updated_at": lead.reply_state_updated_at.isoformat(),
            "last_reply_id": lead.last_reply_id,
            "reply_id": reply.id if reply else None,
            "reply_kind": reply.kind if reply else None,
            "inbound_id": inbound.inbound_id,
            "match": inbound.status,
            "state_written_by_reply": recorded.data.get("state_after") if recorded else None,
        }
    passes = [a for a in facts.drive.retries if a.label.startswith("a worker pass for the replied")]
    if passes:
        details.append(
            f"the worker's claim for the replied canary afterwards: {', '.join(passes[0].results)}"
        )
    summary = (
        "the lead row holds the state the reply wrote"
        if ok
        else "the lead row does not hold the state the test reply should have written"
    )
    return _result("reply_state", ok, summary, details, evidence)


def queued_steps(facts: Facts) -> CheckResult:
    """Every queued step cancelled (in-flight ones marked) in the reply's own transaction."""
    details, evidence, ok = [], {}, True
    for role in REPLIED:
        queue = facts.drive.queue_after[role]
        recorded = facts.recorded(role)
        cancels = [
            e
            for e in facts.events(role, "steps_cancelled")
            if str(e.data.get("reason", "")).startswith("reply:")
        ]
        left = [s for s in queue if s["state"] in QUEUED]
        unmarked = [s for s in queue if s["state"] == StepState.SENDING and not s["cancel_requested"]]
        by_reply = [
            s
            for s in queue
            if s["state"] == StepState.CANCELLED and str(s["cancel_reason"]).startswith("reply:")
        ]
        marked = [s for s in queue if s["state"] == StepState.SENDING and s["cancel_requested"]]
        reply_tx = recorded.tx if recorded else None
        same_tx = bool(cancels) and reply_tx is not None and all(e.tx == reply_tx for e in cancels)
        counted = sum(int(e.data.get("count", 0)) for e in cancels) == len(by_reply) and sum(
            int(e.data.get("in_flight", 0)) for e in cancels
        ) == len(marked)
        good = not left and not unmarked and same_tx and counted and bool(by_reply or marked)
        ok = ok and good
        details.append(
            f"{role}: right after the commit: {len(by_reply)} cancelled, {len(marked)} in flight marked, "
            f"{len(left)} still queued; reply in tx {_tx(reply_tx)}, cancellation in tx "
            f"{', '.join(_tx(e.tx) for e in cancels) or 'none'}"
        )
        evidence[role.value] = {
            "steps_after_commit": queue,
            "reply_tx": reply_tx,
            "cancel_events": [
                {"event_id": e.id, "tx": e.tx, "at": e.at.isoformat(), **e.data} for e in cancels
            ],
        }
    summary = (
        "every queued step was cancelled in the transaction that recorded the reply"
        if ok
        else "queued steps were not all cancelled in the reply's own transaction"
    )
    return _result("queued_steps", ok, summary, details, evidence)


def send_check(facts: Facts) -> CheckResult:
    """The step the worker claimed before the reply is refused at its re-check, after it."""
    d = facts.drive
    attempt, claim = d.send_check, d.claimed
    assert attempt is not None and claim is not None
    step = facts.step(claim.step_id)
    outbound = facts.uow.session.scalar(
        select(m.OutboundMessage.id).where(m.OutboundMessage.step_id == step.id)
    )
    refusals = [e.data for e in facts.events(Role.REPLY, "send_refused") if e.step_id == step.id]
    at_recheck = "after_recheck" not in attempt.phases
    ok = (
        attempt.results in (["stale"], ["refused"])
        and at_recheck
        and not attempt.calls
        and step.state == StepState.CANCELLED
        and outbound is None
    )
    where = (
        "at the re-check, under the lead lock"
        if at_recheck
        else f"past the re-check ({', '.join(attempt.phases)})"
    )
    details = [
        f"step {step.id} (position {step.position}) claimed by the worker before the reply, "
        f"token {claim.token[:8]}",
        f"after the reply the worker's send path answered {', '.join(attempt.results)} {where}",
        f"the step is {step.state} ({step.cancel_reason}); outbound message: {outbound or 'none'}; "
        f"transport calls: {len(attempt.calls)}",
    ]
    evidence = {
        "step_id": step.id,
        "position": step.position,
        "claim_token": claim.token[:8],
        "result": attempt.results,
        "phases_reached": attempt.phases,
        "transport_calls": [c.message_id for c in attempt.calls],
        "step_state": step.state,
        "cancel_reason": step.cancel_reason,
        "outbound_message_id": outbound,
        "refusals": refusals,
    }
    summary = (
        "the re-check refused the claimed step"
        if ok
        else "the worker's send path did not refuse the claimed step at its re-check"
    )
    return _result("send_check", ok, summary, details, evidence)


def retry(facts: Facts) -> CheckResult:
    """Re-driven claims, a worker pass and recovery of a step left in `sending` send nothing."""
    d = facts.drive
    flight = d.canaries[Role.FLIGHT]
    step = facts.step(flight.step_ids[0])
    calls = [c for a in d.retries for c in a.calls]
    never_again = step.state in (StepState.SENT, StepState.UNKNOWN, StepState.CANCELLED)
    ok = not calls and d.recovered >= 1 and never_again
    details = [
        f"{a.label}: {', '.join(a.results) or 'nothing'}; transport calls {len(a.calls)}" for a in d.retries
    ]
    details.append(
        f"step {step.id} left in sending is now {step.state} (cancel_requested {step.cancel_requested}, "
        f"crossed {step.crossed}); copies handed over after the reply: {len(calls)}"
    )
    evidence = {
        "attempts": [a.to_json() for a in d.retries],
        "in_flight_step": {
            "step_id": step.id,
            "state": step.state,
            "cancel_requested": step.cancel_requested,
            "crossed": step.crossed,
            "message_id": step.message_id,
        },
        "recovered": d.recovered,
        "copies": [c.message_id for c in calls],
    }
    if ok:
        summary = "no retry, re-driven claim or recovery handed anything to the transport"
    elif calls:
        summary = f"a retry handed {len(calls)} email(s) to the transport after the reply"
    else:
        summary = "recovery did not settle the step left in sending"
    return _result("retry", ok, summary, details, evidence)


def notice(facts: Facts, channels: list[str]) -> CheckResult:
    """The owner's notice: in the outbox, in the reply's transaction, with what a person needs."""
    d = facts.drive
    canary, reply, recorded = d.canaries[Role.REPLY], facts.reply(Role.REPLY), facts.recorded(Role.REPLY)
    session = facts.uow.session
    row = (
        session.scalar(select(m.Notice).where(m.Notice.reply_id == reply.id).order_by(m.Notice.id).limit(1))
        if reply
        else None
    )
    created = [
        e for e in facts.events(Role.REPLY, "notice_created") if row and e.data.get("notice_id") == row.id
    ]
    payload: dict[str, Any] = row.payload if row else {}
    thread = payload.get("thread") or {}
    lead = payload.get("lead") or {}
    missing = [
        name
        for name, good in (
            ("product", payload.get("product") == d.product),
            ("campaign", payload.get("campaign") == d.campaign),
            ("lead", lead.get("email") == canary.address),
            ("thread", bool(thread.get("id")) and thread.get("id") == (row.thread_id if row else None)),
            ("subject", bool(payload.get("subject"))),
        )
        if not good
    ]
    same_tx = bool(created) and recorded is not None and created[0].tx == recorded.tx
    ok = row is not None and not missing and same_tx and row.recipient == d.owner and row.done_at is None
    if row is None:
        details = [f"no notice for reply {reply.id if reply else '-'} of lead {canary.lead_id}"]
    else:
        details = [
            f"notice {row.id} for thread {row.thread_id} to {row.recipient} (owner {d.owner}), "
            f"in tx {_tx(created[0].tx if created else None)}, the reply in tx "
            f"{_tx(recorded.tx if recorded else None)}",
            f"product {payload.get('product')!r}, campaign {payload.get('campaign')!r}, lead "
            f"{lead.get('email')!r}, thread {thread.get('url')}, subject {payload.get('subject')!r}",
            f"delivery: {'queued in the outbox' if row.done_at is None else 'closed'}; channels "
            f"{', '.join(channels) or 'none configured (see audit --config)'}",
        ]
        if missing:
            details.append(f"missing or wrong: {', '.join(missing)}")
    evidence = {
        "notice_id": row.id if row else None,
        "thread_id": row.thread_id if row else None,
        "recipient": row.recipient if row else None,
        "owner": d.owner,
        "payload": {k: payload.get(k) for k in ("product", "campaign", "lead", "thread", "subject", "kind")},
        "missing": missing,
        "notice_tx": created[0].tx if created else None,
        "reply_tx": recorded.tx if recorded else None,
        "queued": row is not None and row.done_at is None,
        "channels": channels,
    }
    summary = (
        "the owner's notice is in the outbox, with product, campaign, lead, thread and subject"
        if ok
        else "the owner's notice is missing, incomplete or not written with the reply"
    )
    return _result("notice", ok, summary, details, evidence)


def out_of_office(facts: Facts) -> CheckResult:
    """The absence pauses the canary until the return date, cancels nothing, interests no one."""
    d = facts.drive
    canary, inbound = d.canaries[Role.AWAY], d.inbound[Role.AWAY]
    lead, reply = facts.lead(Role.AWAY), facts.reply(Role.AWAY)
    assert d.back_on is not None
    until = start_of(d.back_on, d.zone)
    queue = d.queue_after[Role.AWAY]
    cancelled = [s for s in queue if s["state"] == StepState.CANCELLED]
    early = [s for s in queue if s["state"] in QUEUED and datetime.fromisoformat(str(s["due_at"])) < until]
    threads = facts.uow.session.scalars(
        select(m.RescueThread.id).where(m.RescueThread.lead_id == canary.lead_id)
    ).all()
    passing = d.away_pass.results if d.away_pass else []
    ok = (
        inbound.kind == ReplyKind.OUT_OF_OFFICE
        and reply is not None
        and reply.kind == ReplyKind.OUT_OF_OFFICE
        and reply.return_date == d.back_on
        and lead.reply_state == ReplyState.OUT_OF_OFFICE
        and lead.paused_until == until
        and not cancelled
        and not early
        and not threads
        and passing == ["claimed 0"]
    )
    details = [
        f"inbound {inbound.inbound_id} read as {inbound.kind} "
        f"(return date {reply.return_date if reply else '-'}, expected {d.back_on})",
        f"lead {lead.id} <{canary.address}> is {lead.reply_state}, paused until "
        f"{lead.paused_until.isoformat() if lead.paused_until else '-'} "
        f"(expected {until.astimezone(UTC).isoformat()})",
        f"its steps: {len(cancelled)} cancelled, {len(early)} due before the return; "
        f"rescue threads: {len(threads)}; a worker pass now: {', '.join(passing)}",
    ]
    evidence = {
        "lead_id": lead.id,
        "inbound_id": inbound.inbound_id,
        "kind": inbound.kind,
        "reply_id": reply.id if reply else None,
        "return_date": reply.return_date.isoformat() if reply and reply.return_date else None,
        "expected_return": d.back_on.isoformat(),
        "reply_state": lead.reply_state,
        "paused_until": lead.paused_until.isoformat() if lead.paused_until else None,
        "steps_after_commit": queue,
        "threads": list(threads),
        "worker_pass": passing,
    }
    summary = (
        f"paused until {d.back_on}, nothing cancelled, not counted as interest"
        if ok
        else "the test out-of-office did not just pause the canary until its return date"
    )
    return _result("out_of_office", ok, summary, details, evidence)


def judge(uow: UnitOfWork, drive: Drive, channels: list[str]) -> list[CheckResult]:
    facts = Facts(uow, drive)
    checks: list[Callable[[Facts], CheckResult]] = [
        reply_state,
        queued_steps,
        send_check,
        retry,
        lambda f: notice(f, channels),
        out_of_office,
    ]
    return [check(facts) for check in checks]
