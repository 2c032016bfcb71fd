"""The worker runs for months: what it remembers between claims has a bound, whatever people
type into their campaigns meanwhile."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine

from replyguard.domain.schedule import SendWindow
from replyguard.service_layer.sending.worker_context import WorkerContext


def test_parsed_send_windows_are_remembered_up_to_a_bound() -> None:
    # An engine that is never connected: the context only derives its autocommit twin from it.
    runtime: Any = SimpleNamespace(engine=create_engine("sqlite://"), workspace_id=1, postgres=False)
    ctx = WorkerContext(runtime)
    seen = []
    for minute in range(1000):  # a thousand edits of one campaign's window, one minute apart
        start = f"{minute // 60 % 24:02d}:{minute % 60:02d}"
        window = ctx.window("mon,tue,wed", start, "23:59")
        assert window == SendWindow.parse(["mon", "tue", "wed"], start, "23:59")
        seen.append(window)
    assert len(ctx._windows) <= 64
    # Still a memo: the same text again is the same parsed window, not a new parse.
    assert ctx.window("mon,tue,wed", "16:39", "23:59") is ctx.window("mon,tue,wed", "16:39", "23:59")
