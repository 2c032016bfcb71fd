"""The HTTP surface, through real HTTP to the FastAPI app under uvicorn, on SQLite and PostgreSQL.

Payloads are shaped like the providers' documented examples. Every refusal is checked for
recording nothing; every acceptance for the lead's state actually changing.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.message_ids import unsubscribe_token
from replyguard.domain.provider_retries import MAILGUN, POSTMARK, SENDGRID
from replyguard.domain.states import StepState
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.scenario import FORECASTING, REPORTS, lead_state, load_examples, run_days, step_counts

PRIYA = "priya@fernhollow.test"
MAILGUN_KEY = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
PM_USER, PM_PASSWORD = "postmark", "s3cret-pass:with-colon"
SG_SECRET = "sg-4c1f0b7e9d2a8e6f"


@pytest.fixture
def sent(app: App, clock: FixedClock) -> App:
    """The example workspace, one day of sending later: Priya has our first email."""
    app.settings = dataclasses.replace(
        app.settings,
        mailgun_signing_key=MAILGUN_KEY,
        postmark_user=PM_USER,
        postmark_password=PM_PASSWORD,
        sendgrid_secret=SG_SECRET,
    )
    load_examples(app)
    run_days(app, clock, 1, step=timedelta(hours=3))  # every window of the day is visited
    assert lead_state(app, PRIYA, REPORTS) == "active"
    return app


@contextmanager
def serving(api: FastAPI) -> Iterator[httpx.Client]:
    """The app under a real uvicorn on a loopback port, and an HTTP client pointed at it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(api, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.01)
            assert thread.is_alive(), "uvicorn did not start"
        host, port = sock.getsockname()
        with httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def client(sent: App) -> Iterator[httpx.Client]:
    with serving(create_app(sent)) as http:
        yield http


@dataclasses.dataclass(frozen=True)
class Sent:
    message_id: str
    subject: str
    send_key: str


def first_sent(app: App, email: str = PRIYA, product: str = REPORTS) -> Sent:
    """What we sent the lead first (the worker has run)."""
    with app.uow() as uow:
        lead = find_lead(uow, email, product)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.state == StepState.SENT)
        ).first()
        assert step is not None, "the worker sent nothing to this lead"
        return Sent(step.message_id, step.subject, step.send_key)


def reply_to(app: App, *, message_id: str = "<CAF3k9reply1@mail.fernhollow.test>") -> EmailMessage:
    """Priya's answer to our first email, threaded by In-Reply-To and References."""
    step = first_sent(app)
    msg = EmailMessage()
    msg["From"] = "Priya Raman <priya@fernhollow.test>"
    msg["To"] = "Dana from Northwind <dana@northwind.test>"
    msg["Subject"] = f"Re: {step.subject}"
    msg["Date"] = format_datetime(app.clock.now())
    msg["Message-ID"] = message_id
    msg["In-Reply-To"] = step.message_id
    msg["References"] = step.message_id
    msg.set_content("Hi Dana,\n\nthanks, yes - Tuesday at 10 works for me.\n\nPriya\n")
    return msg


def counts(app: App) -> tuple[int, int]:
    """(inbound messages stored, replies recorded)."""
    with app.uow() as uow:
        inbound = uow.session.scalar(select(func.count()).select_from(m.InboundMessage))
        replies = uow.session.scalar(select(func.count()).select_from(m.Reply))
    return inbound or 0, replies or 0


def stored_one(app: App) -> m.InboundMessage:
    """The one inbound message stored (detached, attributes loaded)."""
    with app.uow() as uow:
        row = uow.session.scalars(select(m.InboundMessage)).one()
        uow.session.expunge(row)
    return row


# --- Mailgun -----------------------------------------------------------------------------


def mailgun_signed(app: App, *, token: str = "c4e0e1a0b2f84ab5" * 3 + "ab", age: float = 0) -> dict[str, str]:
    timestamp = str(int((app.clock.now() - timedelta(seconds=age)).timestamp()))
    signature = hmac.new(MAILGUN_KEY.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    return {"timestamp": timestamp, "token": token, "signature": signature}


def mailgun_mime_post(client: httpx.Client, app: App, raw: bytes, **signing: object) -> int:
    fields = {
        "recipient": "dana@northwind.test",
        "sender": PRIYA,
        "from": "Priya Raman <priya@fernhollow.test>",
        "subject": "Re: hello",
        **mailgun_signed(app, **signing),  # type: ignore[arg-type]
    }
    response = client.post("/hooks/mailgun/mime", data=fields, files={"body-mime": (None, raw)})
    return response.status_code


def test_mailgun_raw_mime_with_a_valid_signature_stops_the_lead(client: httpx.Client, sent: App) -> None:
    assert mailgun_mime_post(client, sent, reply_to(sent).as_bytes()) == 200
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    assert step_counts(sent, PRIYA, REPORTS).get(StepState.SCHEDULED, 0) == 0
    assert counts(sent) == (1, 1)


def test_mailgun_parsed_post_is_rebuilt_with_its_threading_headers(client: httpx.Client, sent: App) -> None:
    original = reply_to(sent)
    fields = {
        "recipient": "dana@northwind.test",
        "sender": PRIYA,
        "from": original["From"],
        "subject": original["Subject"],
        "body-plain": "Hi Dana,\n\nthanks, yes - Tuesday at 10 works for me.\n",
        "stripped-text": "thanks, yes - Tuesday at 10 works for me.",
        "message-headers": json.dumps([[k, str(v)] for k, v in original.items()]),
        **mailgun_signed(sent),
    }
    assert client.post("/hooks/mailgun", data=fields).status_code == 200
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    stored = stored_one(sent)
    assert stored.message_id == original["Message-ID"]
    assert first_sent(sent).message_id.encode() in stored.raw


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param({"signature": "0" * 64}, id="wrong-signature"),
        pytest.param({"signature": ""}, id="no-signature"),
        pytest.param({"timestamp": "not-a-number"}, id="bad-timestamp"),
    ],
)
def test_mailgun_refuses_a_bad_signature_and_records_nothing(
    client: httpx.Client, sent: App, tamper: dict[str, str]
) -> None:
    fields = {**mailgun_signed(sent), **tamper}
    response = client.post("/hooks/mailgun/mime", data=fields, files={"body-mime": (None, b"x")})
    assert response.status_code == 401
    assert counts(sent) == (0, 0)
    assert lead_state(sent, PRIYA, REPORTS) == "active"


@pytest.mark.parametrize(
    "age",
    [MAILGUN.max_age.total_seconds() + 60, -6 * 60],
    ids=["older-than-mailgun-retries", "six-minutes-ahead"],
)
def test_mailgun_refuses_a_timestamp_outside_its_retry_window(
    client: httpx.Client, sent: App, age: float
) -> None:
    assert mailgun_mime_post(client, sent, reply_to(sent).as_bytes(), age=age) == 401
    assert counts(sent) == (0, 0)
    assert mailgun_mime_post(client, sent, reply_to(sent).as_bytes(), age=4 * 60) == 200


@pytest.mark.parametrize("later", [timedelta(minutes=10), timedelta(hours=7)], ids=["10-minutes", "7-hours"])
def test_a_mailgun_request_refused_for_load_is_accepted_when_retried_with_its_original_timestamp(
    sent: App, clock: FixedClock, later: timedelta
) -> None:
    # Before: the retry was "more than 5 minutes from now", a 401 Mailgun does not retry
    # differently, and the reply was lost while the lead kept being emailed.
    raw = reply_to(sent).as_bytes()
    signing = mailgun_signed(sent)
    mime = {"body-mime": (None, raw)}
    busy = create_app(
        dataclasses.replace(sent, settings=dataclasses.replace(sent.settings, inbound_max_concurrent=0))
    )
    with serving(busy) as http:
        assert http.post("/hooks/mailgun/mime", data=signing, files=mime).status_code == 429
    assert counts(sent) == (0, 0)
    clock.advance(later)
    with serving(create_app(sent)) as http:
        assert http.post("/hooks/mailgun/mime", data=signing, files=mime).status_code == 200
        assert lead_state(sent, PRIYA, REPORTS) == "replied"
        # A replay of the accepted request hours later, after other traffic has cleared old
        # tokens, is still refused by its token: the window is wide, the token is single-use.
        clock.advance(timedelta(hours=1))
        other = reply_to(sent, message_id="<later@mail.fernhollow.test>").as_bytes()
        fresh = mailgun_signed(sent, token="f" * 50)
        assert (
            http.post("/hooks/mailgun/mime", data=fresh, files={"body-mime": (None, other)}).status_code
            == 200
        )
        forged = reply_to(sent, message_id="<forged@mail.fernhollow.test>").as_bytes()
        replay = http.post("/hooks/mailgun/mime", data=signing, files={"body-mime": (None, forged)})
        assert replay.status_code == 403
    assert counts(sent) == (2, 2)


def test_a_used_mailgun_token_is_remembered_while_its_timestamp_can_pass(
    sent: App, clock: FixedClock
) -> None:
    signing = mailgun_signed(sent)
    with serving(create_app(sent)) as http:
        assert (
            http.post(
                "/hooks/mailgun/mime", data=signing, files={"body-mime": (None, reply_to(sent).as_bytes())}
            ).status_code
            == 200
        )
        clock.advance(MAILGUN.max_age - timedelta(minutes=1))
        # Other traffic runs the clean-up of old tokens.
        other = reply_to(sent, message_id="<later@mail.fernhollow.test>").as_bytes()
        assert (
            http.post(
                "/hooks/mailgun/mime",
                data=mailgun_signed(sent, token="f" * 50),
                files={"body-mime": (None, other)},
            ).status_code
            == 200
        )
        forged = reply_to(sent, message_id="<forged@mail.fernhollow.test>").as_bytes()
        assert (
            http.post("/hooks/mailgun/mime", data=signing, files={"body-mime": (None, forged)}).status_code
            == 403
        )
    assert counts(sent) == (2, 2)


def test_mailgun_refuses_a_replayed_token_even_after_a_restart(client: httpx.Client, sent: App) -> None:
    raw = reply_to(sent).as_bytes()
    other = reply_to(sent, message_id="<other@mail.fernhollow.test>").as_bytes()
    assert mailgun_mime_post(client, sent, raw) == 200
    assert mailgun_mime_post(client, sent, other) == 403  # same token, different message
    # A new process: the used token is in the database, not in memory.
    with serving(create_app(sent)) as restarted:
        assert mailgun_mime_post(restarted, sent, other) == 403
    # The same token with the same message is Mailgun retrying a 200 it never received:
    # answered as the duplicate it is, with no second effect.
    assert mailgun_mime_post(client, sent, raw) == 200
    assert counts(sent) == (1, 1)


def test_mailgun_without_a_message_is_a_bad_request_kept_for_a_person(
    client: httpx.Client, sent: App
) -> None:
    assert client.post("/hooks/mailgun/mime", data=mailgun_signed(sent)).status_code == 400
    assert counts(sent) == (1, 0)  # signed by Mailgun: the refusal is kept, nothing applied
    assert (stored_one(sent).status, stored_one(sent).error) == (
        "refused",
        "HTTP 400: no message in the request",
    )


def test_an_unparsable_message_is_kept_and_acknowledged(client: httpx.Client, sent: App) -> None:
    assert mailgun_mime_post(client, sent, b"\x00\x01 no headers at all") == 200
    stored = stored_one(sent)
    assert stored.status == "unparsable"
    assert lead_state(sent, PRIYA, REPORTS) == "active"


def test_a_provider_without_a_secret_is_disabled(app: App) -> None:
    with serving(create_app(app)) as client:
        assert client.post("/hooks/mailgun", data={"token": "x"}).status_code == 404
        assert client.post("/hooks/postmark", json={}, auth=("a", "b")).status_code == 404
        assert client.post("/hooks/sendgrid/anything", data={"email": "x"}).status_code == 404


def test_a_body_over_the_limit_is_refused(client: httpx.Client, sent: App) -> None:
    sent.settings = dataclasses.replace(sent.settings, inbound_max_bytes=2000)
    with serving(create_app(sent)) as small:
        assert mailgun_mime_post(small, sent, b"X: y\r\n\r\n" + b"a" * 5000) == 413
    assert counts(sent) == (0, 0)


# --- Postmark ----------------------------------------------------------------------------


def postmark_payload(app: App, *, raw: bool) -> dict[str, object]:
    """Shaped like Postmark's documented inbound example, answering our first email."""
    original = reply_to(app)
    payload: dict[str, object] = {
        "FromName": "Priya Raman",
        "MessageStream": "inbound",
        "From": PRIYA,
        "FromFull": {"Email": PRIYA, "Name": "Priya Raman", "MailboxHash": ""},
        "To": '"Dana from Northwind" <451d9b70cf9364d23ff6f9d51d870251569e+dana@inbound.postmarkapp.com>',
        "ToFull": [
            {
                "Email": "451d9b70cf9364d23ff6f9d51d870251569e+dana@inbound.postmarkapp.com",
                "Name": "Dana from Northwind",
                "MailboxHash": "dana",
            }
        ],
        "Cc": "",
        "CcFull": [],
        "Bcc": "",
        "BccFull": [],
        "OriginalRecipient": "451d9b70cf9364d23ff6f9d51d870251569e+dana@inbound.postmarkapp.com",
        "Subject": original["Subject"],
        "MessageID": "73e6d360-66eb-11e1-8e72-a8904824019b",
        "ReplyTo": "",
        "MailboxHash": "dana",
        "Date": original["Date"],
        "TextBody": "Hi Dana,\n\nthanks, yes - Tuesday at 10 works for me.\n\nPriya\n",
        "HtmlBody": "<html><body><p>thanks, yes - Tuesday at 10 works for me.</p></body></html>",
        "StrippedTextReply": "thanks, yes - Tuesday at 10 works for me.",
        "Tag": "",
        "Headers": [
            {
                "Name": "X-Spam-Checker-Version",
                "Value": "SpamAssassin 3.3.1 (2010-03-16) onrs-ord-pm-inbound1",
            },
            {"Name": "X-Spam-Status", "Value": "No"},
            {"Name": "X-Spam-Score", "Value": "-0.1"},
            {"Name": "X-Spam-Tests", "Value": "DKIM_SIGNED,DKIM_VALID,DKIM_VALID_AU,SPF_PASS"},
            {"Name": "Received-SPF", "Value": "Pass (sender SPF authorized) identity=mailfrom"},
            {"Name": "MIME-Version", "Value": "1.0"},
            {"Name": "Message-ID", "Value": original["Message-ID"]},
            {"Name": "In-Reply-To", "Value": original["In-Reply-To"]},
            {"Name": "References", "Value": original["References"]},
        ],
        "Attachments": [
            {
                "Name": "notes.txt",
                "Content": base64.b64encode(b"agenda for Tuesday").decode(),
                "ContentType": "text/plain",
                "ContentLength": 18,
            }
        ],
    }
    if raw:
        payload["RawEmail"] = original.as_string()
    return payload


@pytest.mark.parametrize("raw", [True, False], ids=["RawEmail", "parsed-json"])
def test_postmark_json_stops_the_lead_and_a_retry_has_no_second_effect(
    client: httpx.Client, sent: App, raw: bool
) -> None:
    payload = postmark_payload(sent, raw=raw)
    first = client.post("/hooks/postmark", json=payload, auth=(PM_USER, PM_PASSWORD))
    assert first.status_code == 200
    assert first.json() == {"status": "matched", "duplicate": False}
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    again = client.post("/hooks/postmark", json=payload, auth=(PM_USER, PM_PASSWORD))
    assert again.json()["duplicate"] is True
    assert counts(sent) == (1, 1)


@pytest.mark.parametrize(
    "auth",
    [(PM_USER, "wrong"), ("wrong", PM_PASSWORD), (PM_USER, PM_PASSWORD + "x"), None],
    ids=["password", "user", "longer-password", "none"],
)
def test_postmark_refuses_wrong_credentials(
    client: httpx.Client, sent: App, auth: tuple[str, str] | None
) -> None:
    response = client.post("/hooks/postmark", json=postmark_payload(sent, raw=True), auth=auth)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Basic")
    assert counts(sent) == (0, 0)


def test_postmark_without_any_message_field_is_a_bad_request(client: httpx.Client, sent: App) -> None:
    response = client.post("/hooks/postmark", json={"MessageStream": "inbound"}, auth=(PM_USER, PM_PASSWORD))
    assert response.status_code == 400
    bad_json = client.post("/hooks/postmark", content=b"{not json", auth=(PM_USER, PM_PASSWORD))
    assert bad_json.status_code == 400
    assert counts(sent) == (2, 0)  # authenticated: both refusals are kept for a person, nothing applied
    with sent.uow() as uow:
        assert set(uow.session.scalars(select(m.InboundMessage.status))) == {"refused"}


# --- SendGrid ----------------------------------------------------------------------------


def sendgrid_common(app: App) -> dict[str, str]:
    original = reply_to(app)
    return {
        "dkim": "{@fernhollow.test : pass}",
        "to": "dana@northwind.test",
        "from": str(original["From"]),
        "subject": str(original["Subject"]),
        "sender_ip": "209.85.223.181",
        "spam_report": "Spam detection software has NOT identified this incoming email as spam.",
        "envelope": json.dumps({"to": ["dana@northwind.test"], "from": PRIYA}),
        "charsets": json.dumps(
            {"to": "UTF-8", "html": "UTF-8", "subject": "UTF-8", "from": "UTF-8", "text": "UTF-8"}
        ),
        "SPF": "pass",
        "spam_score": "0.1",
    }


def test_sendgrid_raw_mime_stops_the_lead(client: httpx.Client, sent: App) -> None:
    files = {"email": (None, reply_to(sent).as_bytes())}
    response = client.post(f"/hooks/sendgrid/{SG_SECRET}", data=sendgrid_common(sent), files=files)
    assert response.status_code == 200
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_sendgrid_parsed_fields_are_rebuilt_with_their_headers(client: httpx.Client, sent: App) -> None:
    original = reply_to(sent)
    headers = "".join(f"{k}: {v}\n" for k, v in original.items())
    fields = {
        **sendgrid_common(sent),
        "headers": headers + 'Content-Type: multipart/alternative; boundary="000000000000abc"\n',
        "text": "Hi Dana,\n\nthanks, yes - Tuesday at 10 works for me.\n",
        "html": "<div>thanks, yes - Tuesday at 10 works for me.</div>",
        "attachments": "1",
        "attachment-info": json.dumps({"attachment1": {"filename": "notes.pdf", "type": "application/pdf"}}),
    }
    files = {"attachment1": ("notes.pdf", b"%PDF-1.4 tiny", "application/pdf")}
    response = client.post("/hooks/sendgrid", params={"secret": SG_SECRET}, data=fields, files=files)
    assert response.status_code == 200
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    stored = stored_one(sent)
    assert b"000000000000abc" not in stored.raw  # the original's boundary would describe nothing


@pytest.mark.parametrize("path", [f"/hooks/sendgrid/{SG_SECRET}x", "/hooks/sendgrid/nope", "/hooks/sendgrid"])
def test_sendgrid_refuses_a_wrong_secret(client: httpx.Client, sent: App, path: str) -> None:
    files = {"email": (None, reply_to(sent).as_bytes())}
    assert client.post(path, data=sendgrid_common(sent), files=files).status_code == 403
    assert counts(sent) == (0, 0)


def test_sendgrid_without_a_message_is_a_bad_request(client: httpx.Client, sent: App) -> None:
    response = client.post(f"/hooks/sendgrid/{SG_SECRET}", data=sendgrid_common(sent))
    assert response.status_code == 400
    # SendGrid never retries a 4xx: the refusal is kept for a person, nothing is applied.
    assert counts(sent) == (1, 0) and stored_one(sent).status == "refused"


# --- One-click unsubscribe ---------------------------------------------------------------


def token_for(app: App) -> str:
    with app.uow() as uow:
        secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    return unsubscribe_token(secret, first_sent(app).send_key)


ONE_CLICK = {"content": b"List-Unsubscribe=One-Click"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_one_click_unsubscribes_in_every_product_and_a_repeat_is_harmless(
    client: httpx.Client, sent: App
) -> None:
    url = f"/u/{token_for(sent)}"
    first = client.post(url, headers=FORM, **ONE_CLICK)  # type: ignore[arg-type]
    assert first.status_code == 200
    for product in (REPORTS, FORECASTING):
        assert lead_state(sent, PRIYA, product) == "unsubscribed"
        assert step_counts(sent, PRIYA, product).get(StepState.SCHEDULED, 0) == 0
    _, replies = counts(sent)
    second = client.post(url, headers=FORM, **ONE_CLICK)  # type: ignore[arg-type]
    assert second.status_code == 200
    assert "already" in second.text
    assert counts(sent)[1] == replies


def test_get_only_shows_a_form_that_posts(client: httpx.Client, sent: App) -> None:
    token = token_for(sent)
    page = client.get(f"/u/{token}")
    assert page.status_code == 200
    assert f'action="/u/{token}"' in page.text
    assert 'method="post"' in page.text
    assert lead_state(sent, PRIYA, REPORTS) == "active"
    assert counts(sent) == (0, 0)


def test_the_confirmation_form_itself_unsubscribes(client: httpx.Client, sent: App) -> None:
    response = client.post(f"/u/{token_for(sent)}", data={"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    assert lead_state(sent, PRIYA, REPORTS) == "unsubscribed"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),
        lambda t: ("0" if t[0] != "0" else "1") + t[1:],
        lambda t: t.split(".")[0],
        lambda t: t + "é",
    ],
    ids=["signature", "key", "unsigned", "non-ascii"],
)
def test_a_tampered_token_is_a_bare_404(client: httpx.Client, sent: App, mangle: object) -> None:
    token = mangle(token_for(sent))  # type: ignore[operator]
    for response in (client.get(f"/u/{token}"), client.post(f"/u/{token}", headers=FORM, **ONE_CLICK)):  # type: ignore[arg-type]
        assert response.status_code == 404
        assert "token" not in response.text.lower()
    assert lead_state(sent, PRIYA, REPORTS) == "active"


def test_a_post_without_the_one_click_body_changes_nothing(client: httpx.Client, sent: App) -> None:
    assert client.post(f"/u/{token_for(sent)}", headers=FORM, content=b"x=1").status_code == 400
    assert lead_state(sent, PRIYA, REPORTS) == "active"


def test_healthz(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("provider", "later"),
    [("postmark", POSTMARK.retries_for), ("sendgrid", SENDGRID.retries_for)],
    ids=["postmark-10.5-hours", "sendgrid-3-days"],
)
def test_postmark_and_sendgrid_retries_are_accepted_until_their_last_retry(
    sent: App, clock: FixedClock, provider: str, later: timedelta
) -> None:
    # Neither signs anything that ages: a retry at the end of the provider's documented
    # schedule is accepted as the first attempt would have been (domain/provider_retries.py).
    def post(http: httpx.Client) -> httpx.Response:
        if provider == "postmark":
            return http.post(
                "/hooks/postmark", json=postmark_payload(sent, raw=True), auth=(PM_USER, PM_PASSWORD)
            )
        files = {"email": (None, reply_to(sent).as_bytes())}
        return http.post(f"/hooks/sendgrid/{SG_SECRET}", data=sendgrid_common(sent), files=files)

    busy = create_app(
        dataclasses.replace(sent, settings=dataclasses.replace(sent.settings, inbound_max_concurrent=0))
    )
    with serving(busy) as http:
        assert post(http).status_code == (429 if provider == "postmark" else 503)
    clock.advance(later)
    with serving(create_app(sent)) as http:
        assert post(http).status_code == 200
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
