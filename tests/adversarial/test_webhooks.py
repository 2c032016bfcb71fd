"""Items 1, 3, 4 and 12 (HTTP) of issue 7: the webhooks as providers really post, and as an
attacker would, through real HTTP to the app under uvicorn, on SQLite and PostgreSQL.

Each test failed before its fix: a Mailgun post with non-ASCII text was a 400 (the reply
lost); bodies near the providers' limits were a 413 that vanished without a log line; RFC
8058 multipart one-click posts were a 400; a long multipart boundary and deeply nested JSON
were 500s; ten concurrent uses of one Mailgun token stored two bodies; Mailgun bodies were
parsed whole before the signature was checked; nothing bounded the concurrent requests.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import threading
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.states import StepState
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.inbound.views import list_inbound
from tests.integration.test_http_inbound import (
    PM_PASSWORD,
    PM_USER,
    PRIYA,
    SG_SECRET,
    counts,
    first_sent,
    mailgun_signed,
    postmark_payload,
    reply_to,
    sendgrid_common,
    serving,
    stored_one,
    token_for,
)
from tests.support.scenario import FORECASTING, REPORTS, lead_state, step_counts

MIB = 1024 * 1024


def attachment(size: int) -> bytes:
    return bytes(range(256)) * (size // 256)


# --- Item 1: Mailgun urlencoded posts with percent-encoded UTF-8 ---------------------------


def test_a_mailgun_urlencoded_post_with_non_ascii_text_is_accepted(
    client: httpx.Client,
    sent: App,
) -> None:
    original = reply_to(sent)
    fields = {  # Mailgun's documented fields for a parsed post without attachments
        "recipient": "dana@northwind.test",
        "sender": PRIYA,
        "from": "Lucía Núñez <priya@fernhollow.test>",
        "subject": f"Re: {first_sent(sent).subject} — ¿martes?",
        "body-plain": "Hola Dana,\n\nsí, el martes a las 10 me va bien. ¡Gracias!\n\nLucía\n",
        "stripped-text": "sí, el martes a las 10 me va bien. ¡Gracias!",
        "stripped-signature": "Lucía",
        "body-html": "<p>sí, el martes a las 10 me va bien. ¡Gracias!</p>",
        "stripped-html": "<p>sí, el martes a las 10 me va bien.</p>",
        "attachment-count": "0",
        "message-headers": json.dumps(
            [[k, str(v)] for k, v in original.items() if k not in ("From", "Subject")]
            + [["From", "Lucía Núñez <priya@fernhollow.test>"], ["Subject", "Re: ¿martes?"]]
        ),
        "Content-id-map": "{}",
        **mailgun_signed(sent),
    }
    response = client.post("/hooks/mailgun", data=fields)  # urlencoded, UTF-8 percent-encoded
    assert response.status_code == 200, response.text
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    with sent.uow() as uow:
        text = uow.session.scalars(select(m.Reply.text)).one()
    assert "el martes a las 10" in (text or "")


# --- Item 3: bodies near the providers' limits -------------------------------------------


def test_postmark_json_with_a_10_mb_attachment_sent_twice_is_accepted(
    client: httpx.Client,
    sent: App,
) -> None:
    data = attachment(10 * MIB)
    message = reply_to(sent)
    message.add_attachment(data, maintype="application", subtype="pdf", filename="deck.pdf")
    payload = postmark_payload(sent, raw=False)
    payload["RawEmail"] = message.as_string()
    payload["Attachments"] = [
        {"Name": "deck.pdf", "Content": base64.b64encode(data).decode(), "ContentType": "application/pdf"}
    ]
    body = json.dumps(payload).encode()
    assert len(body) > 27 * MIB  # what Postmark really posts for a 10 MB file
    response = client.post(
        "/hooks/postmark",
        content=body,
        headers={"Content-Type": "application/json"},
        auth=(PM_USER, PM_PASSWORD),
    )
    assert response.status_code == 200, response.text
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_a_30_mb_sendgrid_post_is_accepted(client: httpx.Client, sent: App) -> None:
    message = reply_to(sent)
    message.add_attachment(attachment(22 * MIB), maintype="application", subtype="zip", filename="data.zip")
    raw = message.as_bytes()
    assert len(raw) > 29 * MIB
    response = client.post(
        f"/hooks/sendgrid/{SG_SECRET}", data=sendgrid_common(sent), files={"email": (None, raw)}
    )
    assert response.status_code == 200, response.text
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_a_refused_body_is_logged_without_secrets_or_mail_and_kept_for_a_person(
    sent: App,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent.settings = dataclasses.replace(sent.settings, inbound_max_bytes=64 * 1024)
    marker = "TOP-SECRET-DEAL-TERMS"
    message = reply_to(sent)
    message.set_content(f"{marker}\n" * 10_000)
    caplog.set_level(logging.INFO)
    with serving(create_app(sent)) as small:
        streamed = small.post(
            f"/hooks/sendgrid/{SG_SECRET}",
            data=sendgrid_common(sent),
            files={"email": (None, message.as_bytes())},
        )
        declared = small.post(
            "/hooks/postmark",
            content=json.dumps({"RawEmail": message.as_string()}).encode(),
            headers={"Content-Type": "application/json"},
            auth=(PM_USER, PM_PASSWORD),
        )
        unauthenticated = small.post(
            "/hooks/sendgrid/wrong", data=sendgrid_common(sent), files={"email": (None, message.as_bytes())}
        )
    assert (streamed.status_code, declared.status_code, unauthenticated.status_code) == (413, 413, 403)
    # What the server logged (the test's own HTTP client logs its URLs, secret included).
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("replyguard", "uvicorn")))
    assert "sendgrid: refused with 413" in logged and "postmark: refused with 413" in logged
    assert SG_SECRET not in logged and PM_PASSWORD not in logged and marker not in logged
    kept = list_inbound(sent)
    assert [(k["source"], k["status"]) for k in kept] == [("sendgrid", "refused"), ("postmark", "refused")]
    assert all("HTTP 413" in (k["error"] or "") for k in kept)
    assert lead_state(sent, PRIYA, REPORTS) == "active"  # refused, so not applied: a person decides


# --- Item 4: RFC 8058 one-click unsubscribe as receivers send it -------------------------


ONE_CLICK_POSTS = {
    "multipart": (
        b'--b1\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--b1--\r\n',
        "multipart/form-data; boundary=b1",
    ),
    "trailing-crlf": (b"List-Unsubscribe=One-Click\r\n", "application/x-www-form-urlencoded"),
    "percent-encoded": (b"List-Unsubscribe=One%2DClick", "application/x-www-form-urlencoded"),
    "no-form-type": (b"List-Unsubscribe=One-Click", "text/plain"),
}


def test_one_click_unsubscribe_as_mail_receivers_post_it(client: httpx.Client, sent: App) -> None:
    url = f"/u/{token_for(sent)}"
    for shape, (body, content_type) in ONE_CLICK_POSTS.items():
        # The first unsubscribes; each later one must still be read as one-click ("already").
        response = client.post(url, content=body, headers={"Content-Type": content_type})
        assert response.status_code == 200, (shape, response.text)
        for product in (REPORTS, FORECASTING):
            assert lead_state(sent, PRIYA, product) == "unsubscribed"


def test_a_multipart_post_without_the_one_click_pair_changes_nothing(client: httpx.Client, sent: App) -> None:
    body = b'--b1\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nmaybe\r\n--b1--\r\n'
    response = client.post(
        f"/u/{token_for(sent)}", content=body, headers={"Content-Type": "multipart/form-data; boundary=b1"}
    )
    assert response.status_code == 400
    assert lead_state(sent, PRIYA, REPORTS) == "active"


# --- Item 12: the HTTP side of "one message can take the machine" ------------------------


def test_a_multipart_boundary_over_256_characters_is_a_400(client: httpx.Client, sent: App) -> None:
    boundary = "b" * 300
    part = 'Content-Disposition: form-data; name="token"\r\n\r\nx'
    body = f"--{boundary}\r\n{part}\r\n--{boundary}--\r\n".encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    assert client.post("/hooks/mailgun", content=body, headers=headers).status_code == 400
    assert client.post(f"/hooks/sendgrid/{SG_SECRET}", content=body, headers=headers).status_code == 400
    assert counts(sent)[1] == 0


def test_deeply_nested_postmark_json_is_a_400(client: httpx.Client, sent: App) -> None:
    body = b'{"TextBody": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    response = client.post(
        "/hooks/postmark",
        content=body,
        headers={"Content-Type": "application/json"},
        auth=(PM_USER, PM_PASSWORD),
    )
    assert response.status_code == 400
    assert counts(sent)[1] == 0


def test_ten_concurrent_uses_of_one_mailgun_token_store_one_body(sent: App) -> None:
    sent.settings = dataclasses.replace(sent.settings, inbound_max_concurrent=16)
    signing = mailgun_signed(sent)
    bodies = [reply_to(sent, message_id=f"<replay-{n}@mail.fernhollow.test>").as_bytes() for n in range(10)]
    start = threading.Barrier(10)

    def post(raw: bytes) -> int:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as own:
            start.wait(30)
            return own.post("/hooks/mailgun/mime", data=signing, files={"body-mime": (None, raw)}).status_code

    with serving(create_app(sent)) as http, ThreadPoolExecutor(10) as pool:
        statuses = sorted(pool.map(post, bodies))
    assert statuses == [200] + [403] * 9
    assert counts(sent) == (1, 1)


def test_an_unsigned_mailgun_body_is_refused_without_being_held_in_memory(
    client: httpx.Client, sent: App
) -> None:
    boundary = "mg-boundary"
    filler = b"x" * MIB

    def body() -> Iterator[bytes]:
        yield f'--{boundary}\r\nContent-Disposition: form-data; name="body-mime"\r\n\r\n'.encode()
        for _ in range(30):
            yield filler
        for name, value in (("timestamp", "1"), ("token", "t" * 50), ("signature", "0" * 64)):
            yield f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}'.encode()
        yield f"\r\n--{boundary}--\r\n".encode()

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        response = client.post(
            "/hooks/mailgun/mime",
            content=body(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 401
    # 30 MB went through; what was held at once is the in-memory part of the spool and a few
    # chunks. Before, the body and its parsed copy (60 MB) were held before the check.
    assert peak < 8 * MIB, peak
    assert counts(sent) == (0, 0)


def test_requests_beyond_the_concurrency_bound_are_asked_to_retry_and_none_is_lost(sent: App) -> None:
    sent.settings = dataclasses.replace(sent.settings, inbound_max_concurrent=1)
    inside, release = threading.Event(), threading.Event()

    def hold_open(_name: str) -> None:
        inside.set()
        assert release.wait(60)

    sent.hooks.arm("inside_reply_tx", hold_open)
    # Everything that reads the database is prepared first: on SQLite the held reply
    # transaction keeps the write lock.
    first = reply_to(sent).as_bytes()
    second = reply_to(sent, message_id="<second@mail.fernhollow.test>").as_bytes()
    fields = sendgrid_common(sent)
    with serving(create_app(sent)) as http, ThreadPoolExecutor(1) as pool:
        signing = mailgun_signed(sent)
        pending = pool.submit(
            http.post, "/hooks/mailgun/mime", data=signing, files={"body-mime": (None, first)}
        )
        assert inside.wait(60), "the first request never reached the reply transaction"
        busy = http.post(
            "/hooks/mailgun/mime",
            data=mailgun_signed(sent, token="t2" * 20),
            files={"body-mime": (None, second)},
        )
        busy_sendgrid = http.post(
            f"/hooks/sendgrid/{SG_SECRET}", data=fields, files={"email": (None, second)}
        )
        stranger = http.post("/hooks/sendgrid/wrong", data=fields, files={"email": (None, second)})
        sent.hooks.disarm()
        release.set()
        assert pending.result(60).status_code == 200
        # The providers retry: Mailgun and Postmark on 429, SendGrid only on 5xx.
        assert (busy.status_code, busy_sendgrid.status_code, stranger.status_code) == (429, 503, 403)
        assert busy.headers["retry-after"] and busy_sendgrid.headers["retry-after"]
        retried = http.post(
            "/hooks/mailgun/mime",
            data=mailgun_signed(sent, token="t2" * 20),
            files={"body-mime": (None, second)},
        )
        assert retried.status_code == 200
    assert counts(sent) == (2, 2)
    assert step_counts(sent, PRIYA, REPORTS).get(StepState.SCHEDULED, 0) == 0


def test_a_stored_message_is_acknowledged_even_when_its_processing_fails(
    client: httpx.Client, sent: App
) -> None:
    # Before: a 503 on every retry although the row was stored, for a message that can never
    # be processed. Now: stored is acknowledged; the message is quarantined for a person.
    sent.hooks.arm("inside_reply_tx", lambda _name: (_ for _ in ()).throw(RuntimeError("bug")))
    signing = mailgun_signed(sent)
    response = client.post(
        "/hooks/mailgun/mime", data=signing, files={"body-mime": (None, reply_to(sent).as_bytes())}
    )
    assert response.status_code == 200 and response.json()["status"] == "quarantined"
    assert stored_one(sent).status == "quarantined"


def test_oversized_request_headers_are_refused_without_a_5xx(client: httpx.Client, sent: App) -> None:
    for size in (8 * 1024, 64 * 1024, 1024 * 1024):
        try:
            answer = client.post(
                f"/hooks/sendgrid/{SG_SECRET}", headers={"X-Padding": "p" * size}, content=b"", timeout=30
            )
        except httpx.TransportError:
            continue  # the server closed the connection on it: refused, and nothing was read
        assert answer.status_code < 500, (size, answer.status_code)
    assert counts(sent)[1] == 0
