"""The optional model: an OpenAI-compatible endpoint on loopback, asked after commit only."""

from __future__ import annotations

import json
import os

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.model_client import ModelClient
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.rescue.drafting import draft_pending
from replyguard.service_layer.rescue.thread_views import list_threads, thread_detail
from replyguard.service_layer.workspace.leads import find_lead
from replyguard.settings import ModelSettings
from tests.support.http_receiver import ChatServer
from tests.support.scenario import REPORTS, load_examples, run_days

PRIYA = "priya@fernhollow.test"


def reply(app: App, email: str, product: str) -> None:
    with app.uow() as uow:
        record_reply(
            uow,
            find_lead(uow, email, product).id,
            IncomingReply(ReplyKind.HUMAN_REPLY, app.clock.now(), text="Sounds good, can we talk Tuesday?"),
            app.settings,
        )
        uow.commit()


def _thread(app: App) -> dict[str, object]:
    with app.uow() as uow:
        [item] = list_threads(uow, app.settings)
        return thread_detail(uow, int(item["id"]), app.settings)


def test_a_model_draft_is_stored_after_commit_and_only_a_draft(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    reply(app, PRIYA, REPORTS)
    before = _thread(app)
    assert before["draft"]["source"] == "template"  # type: ignore[index]
    answer = json.dumps({"intent": "interested", "draft": "Hi Priya, Tuesday 10:00 works. Dana"})
    with ChatServer(answer) as server:
        client = ModelClient(server.url + "/v1", "small", "k3y", timeout=5)
        assert draft_pending(app, client) == 1
        assert draft_pending(app, client) == 0  # asked once
        [request] = server.requests
    assert request.headers["authorization"] == "Bearer k3y"
    assert request.json()["model"] == "small" and "Priya" in request.json()["messages"][1]["content"]
    after = _thread(app)
    assert after["draft"] == {
        "subject": before["draft"]["subject"],
        "body": "Hi Priya, Tuesday 10:00 works. Dana",
        "source": "model",
    }  # type: ignore[index]
    assert after["model_intent"] == "interested"
    with app.uow() as uow:
        assert uow.session.scalar(select(m.PersonSend.id)) is None  # a draft, never a send


def test_a_failing_model_changes_nothing_but_the_draft(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    reply(app, PRIYA, REPORTS)
    before = _thread(app)
    with ChatServer(status=503) as server:
        assert draft_pending(app, ModelClient(server.url + "/v1", "small", None, timeout=5)) == 1
    after = _thread(app)
    for key in ("intent", "recommended_next_step", "actions", "state", "lead_state", "draft"):
        assert after[key] == before[key], key
    with app.uow() as uow:
        assert uow.session.scalars(select(m.RescueThread.model_state)).one() == "failed"


def test_a_model_that_does_not_answer_times_out_and_changes_nothing_but_the_draft(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    reply(app, PRIYA, REPORTS)
    before = _thread(app)
    with ChatServer(stall=True) as server:
        # The endpoint never answers: the client's own timeout ends the wait, not the server.
        assert draft_pending(app, ModelClient(server.url + "/v1", "small", None, timeout=0.5)) == 1
        assert len(server.requests) == 1
    after = _thread(app)
    for key in ("intent", "recommended_next_step", "actions", "state", "lead_state", "draft"):
        assert after[key] == before[key], key
    with app.uow() as uow:
        assert uow.session.scalars(select(m.RescueThread.model_state)).one() == "failed"


def test_the_model_is_off_unless_a_url_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("REPLYGUARD_MODEL")]:
        monkeypatch.delenv(name)
    assert ModelSettings.from_env().url is None and ModelSettings().url is None
    monkeypatch.setenv("REPLYGUARD_MODEL_URL", "http://127.0.0.1:9/v1")
    assert ModelSettings.from_env().url == "http://127.0.0.1:9/v1"


def test_the_reply_transaction_never_reaches_the_model() -> None:
    """No module the reply transaction is made of can call a model: the only caller of the
    model client is the after-commit drafting service (read from the sources' imports)."""
    from tests.unit.test_layers import PACKAGE, imports_of

    callers = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for _line, name in imports_of(path)
        if name == "replyguard.adapters.model_client"
    }
    # The composition root builds the client; the drafting service is the only one that calls it.
    assert callers <= {"service_layer/rescue/drafting.py", "bootstrap.py"}, callers
    assert "service_layer/rescue/drafting.py" in callers, callers
    for module in (
        "inbound/replies",
        "inbound/apply",
        "inbound/ingest",
        "rescue/threads",
        "rescue/notices",
        "rescue/thread_context",
    ):
        imported = {name for _l, name in imports_of(PACKAGE / "service_layer" / f"{module}.py")}
        assert "replyguard.service_layer.rescue.drafting" not in imported, module
