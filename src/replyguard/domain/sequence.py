"""The order of a sequence's emails, as pure functions: subjects and threading headers.

A follow-up (a step without its own subject) replies in the thread of the emails before it —
but only of those that really go out. An email that was skipped, or never arrived, is never
the `In-Reply-To` of another, and a follow-up whose thread has no delivered email yet starts
the thread itself: the thread's subject without "Re:", no threading headers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Planned:
    """One step of an enrollment, in position order."""

    own_subject: str | None  # rendered; None: a follow-up in the current thread
    message_id: str
    goes_out: bool  # False: skipped or cancelled, so nothing may thread on it


@dataclass(frozen=True, slots=True)
class Threading:
    subject: str
    in_reply_to: str | None
    references: str | None


def thread_headers(steps: list[Planned]) -> list[Threading]:
    """The subject and threading headers of each step, given which earlier ones go out."""
    result: list[Threading] = []
    subject = ""
    delivered: list[str] = []
    for step in steps:
        if step.own_subject is not None:
            # A step with its own subject starts a new thread.
            subject, delivered = step.own_subject, []
            result.append(Threading(subject, None, None))
        elif delivered:
            result.append(Threading(f"Re: {subject}", delivered[-1], " ".join(delivered)))
        else:
            result.append(Threading(subject, None, None))
        if step.goes_out:
            delivered.append(step.message_id)
    return result
