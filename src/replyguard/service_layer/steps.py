"""Step writes that several rooms make, written once: a step's birth, its approval, a step
put back in the queue, and a person's word that an unknown outcome went out.

A step is born with its send key (HMAC of the workspace secret, the enrollment and the
position), its Message-ID in its mailbox's domain and its first state, whether at enrollment
or added by a campaign change. A claim given back (a pause, a refusal under the lead lock, a
send found not to have happened) and a step a person sends again (an unknown outcome checked,
a failure resent) end the same way: SCHEDULED, with no claim token (the worker that held it
is fenced out), no lease and no cap day (it counts again when it is claimed again). Each move
is asked of domain/states.py first; tests/unit/test_state_writes.py finds step and lead state
writes that do not ask.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import domain_of
from replyguard.domain.message_ids import message_id_for, send_key
from replyguard.domain.states import Actor, StepState, check_step_move, first_step_state
from replyguard.service_layer.uow import UnitOfWork

if TYPE_CHECKING:
    from replyguard.service_layer.workspace.rendering import Texts


def back_in_queue(
    current: StepState, now: datetime, *, actor: Actor = Actor.SYSTEM, due_at: datetime | None = None
) -> dict[str, Any]:
    """The column values of a step put back in the queue from `current` (for an UPDATE);
    raises IllegalTransition when `actor` may not make that move."""
    check_step_move(current, StepState.SCHEDULED, actor)
    values: dict[str, Any] = {
        "state": StepState.SCHEDULED,
        "claim_token": None,
        "lease_until": None,
        "send_day": None,
        "updated_at": now,
    }
    if due_at is not None:
        values["due_at"] = due_at
    return values


def put_back(
    step: m.Step, now: datetime, *, actor: Actor = Actor.SYSTEM, due_at: datetime | None = None
) -> None:
    """`back_in_queue` on a loaded step."""
    for column, value in back_in_queue(StepState(step.state), now, actor=actor, due_at=due_at).items():
        setattr(step, column, value)


def new_step(
    uow: UnitOfWork,
    enrollment: m.Enrollment,
    template: m.CampaignStep,
    position: int,
    mailbox: m.Mailbox,
    secret: str,
    address: str,
    text: Texts,
    due_at: datetime,
) -> m.Step:
    """A step as every step is born, whether at enrollment or added by a campaign change: its
    send key (HMAC of the workspace secret, the enrollment and the position), its Message-ID in
    its mailbox's domain, and its first state (`domain.states.first_step_state`). The caller
    adds it (and threads the subjects)."""
    key = send_key(secret, enrollment.id, position)
    return m.Step(
        workspace_id=uow.workspace_id,
        enrollment_id=enrollment.id,
        lead_id=enrollment.lead_id,
        mailbox_id=mailbox.id,
        campaign_step_id=template.id,
        position=position,
        state=first_step_state(needs_approval=template.approval),
        due_at=due_at,
        send_key=key,
        message_id=message_id_for(key, domain_of(mailbox.address)),
        to_address=address,
        to_name=text.to_name,
        subject=text.subject or "",
        subject_key="",
        body=text.body,
        attempts=0,
        updated_at=uow.clock.now(),
    )


def approve(step: m.Step, now: datetime) -> None:
    """A person approved a step that waited for it: it joins the queue."""
    check_step_move(StepState(step.state), StepState.SCHEDULED, Actor.PERSON)
    step.state, step.updated_at = StepState.SCHEDULED, now


def went_out(step: m.Step, now: datetime) -> None:
    """A person who checked an unknown outcome says the email went out."""
    check_step_move(StepState(step.state), StepState.SENT, Actor.PERSON)
    step.state, step.sent_at, step.updated_at = StepState.SENT, now, now
