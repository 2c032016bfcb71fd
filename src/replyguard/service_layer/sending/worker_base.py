"""Shared parts of the guarded worker: its tables, the values its parts pass to each other, and
the fence of every write after a claim.

The helpers the parts share live on `worker_context.WorkerContext`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, and_, bindparam, exists, select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import Delivery
from replyguard.domain.states import StepState, step_move

S = cast(Table, m.Step.__table__)
L = cast(Table, m.Lead.__table__)
E = cast(Table, m.Enrollment.__table__)
C = cast(Table, m.Campaign.__table__)
CT = cast(Table, m.Contact.__table__)
MB = cast(Table, m.Mailbox.__table__)
OUT = cast(Table, m.OutboundMessage.__table__)
EV = cast(Table, m.Event.__table__)
SUP = cast(Table, m.Suppression.__table__)
CS = cast(Table, m.CampaignStep.__table__)
WS = cast(Table, m.Workspace.__table__)

#: The settings a person may change while an email is on its way (`send_policy.SendLimits`):
#: read with the re-check, and again right before the transport's point of no return.
_LIMIT_COLUMNS = (
    MB.c.daily_cap,
    MB.c.timezone.label("mailbox_tz"),
    MB.c.status.label("mailbox_status"),
    C.c.window_days,
    C.c.window_start,
    C.c.window_end,
    C.c.timezone.label("campaign_tz"),
    C.c.status.label("campaign_status"),
    CT.c.timezone.label("contact_tz"),
)
_STEP_TO_LIMITS = (
    S.join(E, E.c.id == S.c.enrollment_id)
    .join(C, C.c.id == E.c.campaign_id)
    .join(MB, MB.c.id == S.c.mailbox_id)
    .join(L, L.c.id == S.c.lead_id)
    .join(CT, CT.c.id == L.c.contact_id)
)

#: Everything the re-check and the email need about a step, in one query.
_SEND_ROWS = select(
    S.c.id,
    S.c.state,
    S.c.claim_token,
    S.c.cancel_requested,
    S.c.to_address,
    S.c.to_name,
    S.c.send_key,
    S.c.message_id,
    S.c.subject,
    S.c.body,
    S.c.in_reply_to,
    S.c.references,
    S.c.enrollment_id,
    S.c.position,
    E.c.state.label("enrollment_state"),
    exists()
    .where(SUP.c.workspace_id == S.c.workspace_id, SUP.c.address == S.c.to_address)
    .label("suppressed"),
    MB.c.address.label("from_address"),
    MB.c.from_name,
    WS.c.secret,
    *_LIMIT_COLUMNS,
).select_from(_STEP_TO_LIMITS.join(WS, WS.c.id == S.c.workspace_id))

#: The last check before the point of no return: the settings as they are now, and (SQLite,
#: which cannot hold the lead lock across the call) whether a reply asked to cancel the step.
_LAST_CHECK = select(S.c.cancel_requested, *_LIMIT_COLUMNS).select_from(_STEP_TO_LIMITS)

# The send path's statements, built once: SQLAlchemy then finds each compiled form by the
# statement object's memoized cache key instead of building and hashing a new construct per
# email (that work was most of the worker's CPU per send). Lists go in as expanding IN.
#: The steps of a batch, with everything their emails and settings need (`_SEND_ROWS`).
SEND_ROWS_OF = _SEND_ROWS.where(S.c.id.in_(bindparam("step_ids", expanding=True)))
#: The step's last check before DATA (`_LAST_CHECK`).
LAST_CHECK_OF = _LAST_CHECK.where(S.c.id == bindparam("step_id"))
_LEADS_OF = (
    select(L.c.id, L.c.reply_state, L.c.paused_until)
    .where(L.c.id.in_(bindparam("lead_ids", expanding=True)))
    .order_by(L.c.id)
)
#: The worker's lead locks (`WorkerContext.lock_leads`): FOR NO KEY UPDATE on PostgreSQL; on
#: SQLite the transaction's write lock is the lock.
LOCK_LEADS = {"postgresql": _LEADS_OF.with_for_update(key_share=True), "sqlite": _LEADS_OF}
#: One event row (`WorkerContext.event`, and many at once with a list of rows).
EVENT_INSERT = EV.insert()

#: How much later than planned a step may go out before the next one is moved to keep its wait.
SPACING_TOLERANCE = timedelta(minutes=15)

_USING_SLOT = [StepState.CLAIMED, StepState.SENDING, StepState.SENT, StepState.UNKNOWN]


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed step, and what the claim counted it against, so that each email can be
    checked again right before it is handed over (the clock moves during a batch, and a person
    may change the window, the cap or a pause meanwhile)."""

    step_id: int
    lead_id: int
    token: str
    mailbox_id: int | None = None
    send_day: date | None = None  # the mailbox's day whose cap counts this email
    #: That day's cap as the claim counted it; None for the audit's canary, which has no
    #: window and no cap (see claiming.py, AUDIT).
    cap: int | None = None
    #: The mailbox's connection limit as the claim read it (None: no limit): how many of its
    #: emails a worker's send slots may hand over at once (slots.py).
    connections: int | None = None


def in_states(column: ColumnElement[Any], states: Sequence[str]) -> ColumnElement[bool]:
    """The WHERE on a state column for the sources `step_move` or `reply_move` checked.

    A single source is written `state = x`, as the worker has always written it: an
    executemany (the claim) cannot carry SQLAlchemy's expanding `IN`."""
    return column == states[0] if len(states) == 1 else column.in_(states)


def fenced_batch(name: str, source: StepState, target: StepState) -> ColumnElement[bool]:
    """The WHERE of a move of a batch of claims, as a statement built once: these steps
    (`{name}_ids`), still carrying these claims' tokens (`{name}_tokens`, expanding lists), still
    in `source`, the move checked against the state table (`Fence` is the one-step form)."""
    return and_(
        S.c.id.in_(bindparam(f"{name}_ids", expanding=True)),
        S.c.claim_token.in_(bindparam(f"{name}_tokens", expanding=True)),
        in_states(S.c.state, step_move(source, target)),
    )


@dataclass(frozen=True, slots=True)
class Fence:
    """A claimed step as this worker left it. Every write after the claim is fenced: it
    touches the step only while it still carries this claim's token and this state, so a
    worker whose lease expired and was taken over changes nothing."""

    step_id: int
    token: str | None
    state: StepState

    def where(self) -> ColumnElement[bool]:
        """The WHERE of a read: the step is still ours and still in `state`."""
        return and_(S.c.id == self.step_id, S.c.claim_token == self.token, S.c.state == self.state)

    def to(self, target: StepState) -> ColumnElement[bool]:
        """The WHERE of the UPDATE that moves the step to `target`. The move is checked
        against the state table: an illegal one raises `IllegalTransition` before any row
        is touched."""
        moves = step_move(self.state, target)
        return and_(S.c.id == self.step_id, S.c.claim_token == self.token, in_states(S.c.state, moves))


@dataclass(frozen=True, slots=True)
class Handed:
    """What became of one email at the hand-over: the transport's answer, or that our own last
    check stopped it before the point of no return (`aborted`), or that it was not handed over
    at all because its window closed, its cap's day changed or a person changed its settings
    (`deferred_to`), or because the worker is stopping (`deferred_to` and `stopping`)."""

    delivery: Delivery
    aborted: bool = False
    deferred_to: datetime | None = None
    stopping: bool = False


@dataclass
class WorkerReport:
    claimed: int = 0
    sent: int = 0
    refused: int = 0
    retried: int = 0
    failed: int = 0
    unknown: int = 0
    stale: int = 0
    deferred: int = 0
    paused: int = 0
    recovered: int = 0
    resumed: int = 0
    given_back: int = 0  # claimed, not handed over: back in the queue because the worker stopped
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, other: WorkerReport) -> None:
        for item in fields(self):
            if item.name != "outcomes":
                setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))
        for result, n in other.outcomes.items():
            self.outcomes[result] = self.outcomes.get(result, 0) + n


#: Results of a send that have their own counter in WorkerReport.
_COUNTED = frozenset(
    {"sent", "refused", "retried", "failed", "unknown", "stale", "deferred", "paused", "given_back"}
)


def _count(report: WorkerReport, result: str) -> None:
    if result in _COUNTED:
        setattr(report, result, getattr(report, result) + 1)
    report.outcomes[result] = report.outcomes.get(result, 0) + 1
