"""The transport port: hand one email to the outside world and say what is known about it."""

from __future__ import annotations

import enum
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.smtp_answers import Blame


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"  # the transport took responsibility for the message
    TRANSIENT = "transient"  # refused before acceptance; safe to retry later (4xx, connect timeout)
    PERMANENT = "permanent"  # refused for good (5xx)
    UNKNOWN = "unknown"  # it may or may not have been accepted: never resend blindly


@dataclass(frozen=True, slots=True)
class Delivery:
    outcome: Outcome
    detail: str = ""
    ref: str | None = None  # the transport's id for the message, when it gives one
    #: Whose problem a refusal is (domain/smtp_answers.py): the address (a hard bounce), a full
    #: mailbox (a soft bounce), our own mailbox (pause it), or nobody in particular.
    blame: Blame = Blame.NONE


class Probe(enum.StrEnum):
    SENT = "sent"
    NOT_SENT = "not_sent"
    UNKNOWN = "unknown"


#: Called by a transport right before the point of no return (SMTP DATA, the file link).
#: It raises to abort: the guarded worker uses it to prove its database lock is still held.
BeforeCommitHook = Callable[[], None]


class Transport(Protocol):
    #: True when `probe` can prove whether a message went out (then a crash is reconciled
    #: instead of held for a person).
    can_probe: bool

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        """Hand `email` over. Never raises for delivery problems: they are a Delivery."""
        ...

    def probe(self, email: OutgoingEmail) -> Probe:
        """After a crash: did this email go out?"""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Interruptible(Protocol):
    """A transport whose send in progress can be cut short from another thread: how a stopping
    worker keeps its promise to exit within seconds whatever its server does. A transport
    without it (Maildir: local writes) simply finishes its send."""

    def interrupt(self, thread: int) -> None:
        """End at once the send that thread `thread` (a `threading.get_ident()`) has in
        progress, and refuse that thread's next send before it connects. The send returns
        what is known: nothing taken by the server (TRANSIENT) or, after the final dot,
        UNKNOWN. Safe to call from any thread, at any time, any number of times."""
        ...


@runtime_checkable
class Reusing(Protocol):
    """A transport that can keep its connections open between sends (SMTP): inside a
    `reusing()` scope a connection carries several messages; when the scope ends, none is
    left open. The guarded worker opens one scope per pass."""

    def reusing(self) -> AbstractContextManager[None]: ...
