"""Invariant 6, read from the code: only a person's explicit action sends a draft.

`person_send.send_reply` is the only code that sends anything but a campaign step or a notice
to the owner, and only entry points where a person asks to send call it: `threads send`, the
thread page's Send button and the API's send. Anything added later must be such an entry point
too: this test lists who may.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "replyguard"
#: Entry points where a person asks to send. Nothing else may reach send_reply.
ALLOWED_CALLERS = {
    "entrypoints/cli/threads_cmd.py",
    "entrypoints/web/pages/threads.py",  # the Send button of a thread page
    "entrypoints/web/api/threads.py",  # POST /api/v1/threads/{id}/send
}
#: Where a transport's send is called: the guarded worker (campaign steps), the person's
#: answer, the notice email to the owner, and a step's test send to its sender. Nowhere else.
TRANSPORT_SENDERS = {
    "service_layer/sending/send_guard.py",
    "service_layer/rescue/person_send.py",
    "adapters/notices/email.py",
    # A step's test send, to the signed-in person's own address only; never to a lead
    # (tests/web/test_campaign_actions.py forges every recipient field to prove it).
    "service_layer/workspace/step_preview.py",
}


def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(SRC)): ast.parse(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")}


def test_only_a_persons_command_can_send_a_draft() -> None:
    users = set()
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "replyguard.service_layer.rescue.person_send"
            ):
                users.add(name)
            if isinstance(node, ast.Attribute) and node.attr == "send_reply":
                users.add(name)
    assert users <= ALLOWED_CALLERS, f"send_reply reachable from {users - ALLOWED_CALLERS}"
    assert users, "the check found no caller at all: it would pass vacuously"


def test_a_transport_sends_only_steps_a_persons_answer_and_owner_notices() -> None:
    senders = set()
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "send"
                and "transport" in ast.unparse(node.func.value)
            ):
                senders.add(name)
    assert senders == TRANSPORT_SENDERS


def test_send_reply_needs_the_name_of_a_person() -> None:
    import pytest

    from replyguard.service_layer.rescue.person_send import PersonReply, SendRefused, send_reply

    with pytest.raises(SendRefused):
        send_reply(None, PersonReply(1, "hello", by=" "))  # type: ignore[arg-type]
