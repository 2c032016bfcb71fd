"""The one rule for what may be decided on a thread (domain/thread_actions.py), table-tested."""

from __future__ import annotations

import pytest

from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import ReplyState
from replyguard.domain.thread_actions import SENDS, ThreadFacts, offered, refusal

K, R = ThreadKind, ReplyState


def facts(kind: ThreadKind = K.HUMAN_REPLY, lead: ReplyState = R.REPLIED, **kw: object) -> ThreadFacts:
    return ThreadFacts(kind=kind, thread_state=str(kw.pop("state", "open")), lead_state=lead, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("f", "action", "allowed"),
    [
        (facts(), "resume", True),
        (facts(lead=R.STOPPED), "resume", False),  # after a stop: a restart, on purpose
        (facts(lead=R.STOPPED), "restart", True),
        (facts(lead=R.ACTIVE), "resume", False),
        (facts(lead=R.UNSUBSCRIBED), "resume", False),
        (facts(lead=R.UNSUBSCRIBED), "send_reply", False),
        (facts(lead=R.BOUNCED), "send_reply", False),
        (facts(K.BOUNCE, R.BOUNCED), "resume", True),  # the contact has another address
        (facts(unknown_outcome=True), "resume", False),
        (facts(unknown_outcome=True), "send_again", True),
        (facts(K.PROBABLE_REPLY, R.HELD), "confirm", True),
        (facts(), "confirm", False),
        (facts(waiting_on_them=True), "send_reply", False),
        (facts(waiting_on_them=True), "send_another", True),
        (facts(state="done"), "stop", False),
        (facts(state="done"), "reopen", True),
        (facts(K.UNSUBSCRIBE, R.UNSUBSCRIBED), "resume", False),
        (facts(K.STEP_FAILED, R.HELD), "resend_step", True),
        (facts(K.HUMAN_REPLY, R.REPLIED, recommended=("pause_until:2027-01-04",)), "pause_until", True),
        (facts(K.HUMAN_REPLY, R.STOPPED), "pause_until", False),
    ],
)
def test_an_action_is_taken_only_when_offered(f: ThreadFacts, action: str, allowed: bool) -> None:
    names = {a.partition(":")[0] for a in offered(f)}
    assert (action in names) is allowed
    assert (refusal(f, action) is None) is allowed


def test_every_refusal_says_why() -> None:
    assert "restart" in (refusal(facts(lead=R.STOPPED), "resume") or "")
    assert "unknown" in (refusal(facts(unknown_outcome=True), "resume") or "")
    assert "probable" in (refusal(facts(), "confirm") or "")
    assert "waits on them" in (refusal(facts(waiting_on_them=True), "send_reply") or "")
    assert "reopen" in (refusal(facts(state="done"), "resume") or "")


def test_the_recommended_actions_come_first_and_keep_their_dates() -> None:
    f = facts(recommended=("pause_until:2027-01-04", "send_reply", "stop", "done"))
    shown = offered(f)
    assert shown[:3] == ("pause_until:2027-01-04", "send_reply", "stop")
    assert "resume" in shown and {"assign", "snooze", "done"} <= set(shown)


def test_a_stop_turns_the_recommended_resume_into_a_restart() -> None:
    assert offered(facts(K.THREAD_TAKEN, R.STOPPED, recommended=("resume", "stop")))[0] == "restart"


def test_what_lets_email_go_out_is_named() -> None:
    assert {"resume", "restart", "send_again", "send_reply"} <= SENDS
    assert not {"stop", "done", "assign", "snooze"} & SENDS
