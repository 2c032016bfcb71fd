"""/healthz, /readyz and /metrics over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import format_datetime

import httpx
import pytest
from sqlalchemy import select, text

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.states import StepState
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import find_lead
from replyguard.settings import Environment
from tests.support.scenario import REPORTS, load_examples, run_days
from tests.web.support import serving

PRIYA = "priya@fernhollow.test"


def threaded_reply(app: App) -> bytes:
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.state == StepState.SENT)
        ).first()
        assert step is not None
        sent_id, subject = step.message_id, step.subject
    msg = EmailMessage()
    msg["From"] = f"Priya Raman <{PRIYA}>"
    msg["To"] = "dana@northwind-analytics.test"
    msg["Subject"] = f"Re: {subject}"
    msg["Date"] = format_datetime(app.clock.now())
    msg["Message-ID"] = "<priya-answer-1@fernhollow.test>"
    msg["In-Reply-To"] = sent_id
    msg.set_content("Hi Dana, yes, let's talk on Tuesday.\n\nPriya\n")
    return msg.as_bytes()


def metric(body: str, name: str) -> float:
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics")


def test_metrics_count_sends_refusals_replies_and_the_reply_to_cancel_latency(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    ingest_raw(app, threaded_reply(app), "file")
    with serving(create_app(app)) as base, httpx.Client(timeout=60, base_url=base) as client:
        response = client.get("/metrics")
        client.get("/campaigns")
        again = client.get("/metrics").text
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    body = response.text
    with app.uow() as uow:
        sent = len(uow.session.scalars(select(m.Step.id).where(m.Step.state == StepState.SENT)).all())
    assert sent > 0 and metric(body, "replyguard_sends_total") == sent
    assert metric(body, 'replyguard_replies_total{kind="human_reply"}') == 1
    assert metric(body, "replyguard_reply_cancel_seconds_count") == 1
    assert metric(body, 'replyguard_reply_cancel_seconds_bucket{le="+Inf"}') == 1
    assert metric(body, "replyguard_notice_backlog") == 1
    assert "replyguard_worker_lag_seconds" in body and "replyguard_steps{" in body
    assert 'replyguard_http_requests_total{method="GET",route="/campaigns",status="303"} 1.0' in again


def test_http_metrics_keep_a_bounded_set_of_series_whatever_methods_clients_make_up(app: App) -> None:
    """Each label value is a series the process keeps for its whole life. The HTTP server hands
    any token over as the method, so a label per method would let any client grow the memory
    of `up` and `serve` without bound, one made-up method per request: the unknown ones are
    counted together as "other"."""
    with serving(create_app(app)) as base, httpx.Client(timeout=60, base_url=base) as client:
        for i in range(40):
            client.request(f"X{i}", "/healthz")
        client.request("X0", "/healthz")
        client.get("/healthz")
        body = client.get("/metrics").text
    series = [line for line in body.splitlines() if line.startswith("replyguard_http_requests_total{")]
    methods = {line.split('method="', 1)[1].split('"', 1)[0] for line in series}
    assert methods == {"GET", "other"}
    assert metric(body, 'replyguard_http_requests_total{method="other",route="/healthz",status="405"}') == 41


def test_metrics_want_the_metrics_token_when_one_is_set(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGUARD_METRICS_TOKEN", "s3cret-scrape-token")
    app.environment = Environment.read()  # what `bootstrap` reads when the process starts
    with serving(create_app(app)) as base, httpx.Client(timeout=60, base_url=base) as client:
        assert client.get("/metrics").status_code == 404
        assert client.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 404
        ok = client.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape-token"})
    assert ok.status_code == 200 and "replyguard_sends_total" in ok.text


def test_readyz_says_ready_at_head_and_not_when_migrations_are_pending(app: App) -> None:
    with serving(create_app(app)) as base, httpx.Client(timeout=60, base_url=base) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        with app.engine.begin() as conn:
            head = conn.scalar(text("SELECT version_num FROM alembic_version"))
            conn.execute(text("UPDATE alembic_version SET version_num = '0003_nonces'"))
        try:
            pending = client.get("/readyz")
        finally:
            with app.engine.begin() as conn:
                conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}  # nothing more
    assert pending.status_code == 503 and pending.json() == {"status": "not ready"}


def test_readyz_says_why_only_to_the_metrics_token(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGUARD_METRICS_TOKEN", "s3cret-scrape-token")
    app.environment = Environment.read()  # what `bootstrap` reads when the process starts
    operator = {"Authorization": "Bearer s3cret-scrape-token"}
    with serving(create_app(app)) as base, httpx.Client(timeout=60, base_url=base) as client:
        with app.engine.begin() as conn:
            head = conn.scalar(text("SELECT version_num FROM alembic_version"))
        assert client.get("/readyz", headers=operator).json() == {"status": "ready", "revision": head}
        with app.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0003_nonces'"))
        try:
            stranger = client.get("/readyz", headers={"Authorization": "Bearer nope"})
            told = client.get("/readyz", headers=operator)
        finally:
            with app.engine.begin() as conn:
                conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": head})
    assert stranger.json() == {"status": "not ready"}
    assert told.status_code == 503 and told.json()["reason"] == "migrations pending"
    assert told.json()["database"] == "0003_nonces" and told.json()["code"] == [head]
