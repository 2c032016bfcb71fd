"""Property tests of every webhook (and one-click unsubscribe) with hostile payloads, through
real HTTP, on SQLite and PostgreSQL. The invariants are in strategies.py."""

from __future__ import annotations

import base64
import json

import httpx
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from tests.adversarial import strategies as S
from tests.adversarial.hostile import good_reply
from tests.integration.test_http_inbound import (
    PM_PASSWORD,
    PM_USER,
    SG_SECRET,
    mailgun_signed,
    token_for,
)
from tests.support.scenario import REPORTS, lead_state

Check = tuple[httpx.Response, bool]  # the answer, and whether the request was authenticated


def check(app: App, answer: httpx.Response, authenticated: bool, refused_before: int) -> None:
    """No 5xx; an accepted message reached a final status; an authenticated refusal is kept."""
    assert answer.status_code < 500, (answer.status_code, answer.text)
    if answer.status_code == 200:
        assert answer.json()["status"] in S.FINAL
    elif authenticated and answer.status_code not in (401, 403, 429):
        # Kept with its reason: a new row, or the row of the same refusal seen before.
        assert S.inbound_rows(app).get("refused", 0) >= max(refused_before, 1)
        with app.uow() as uow:
            kept = uow.session.scalar(
                select(func.count())
                .select_from(m.InboundMessage)
                .where(
                    m.InboundMessage.status == "refused",
                    m.InboundMessage.error.like(f"HTTP {answer.status_code}:%"),
                )
            )
        assert kept, answer.status_code


def finish(app: App, clock: FixedClock, post_good: object) -> None:
    """The reserved lead's reply still takes effect, nothing is pending, nothing sends after."""
    answer = post_good(good_reply(app, S.RESERVED, REPORTS, "<last-good@brightline.test>"))  # type: ignore[operator]
    assert answer.status_code == 200, answer.text
    assert lead_state(app, S.RESERVED, REPORTS) == "replied"
    S.assert_nothing_left_stored(app)
    S.assert_no_send_after_a_reply(app, clock)


def test_mailgun_with_hostile_posts(client: httpx.Client, sent: App, clock: FixedClock) -> None:
    targets = S.threads(sent)
    tokens = iter(range(10**6))

    def signing(good: bool) -> dict[str, str]:
        fields = mailgun_signed(sent, token=f"tok{next(tokens):08d}" + "x" * 40)
        return fields if good else {**fields, "signature": "0" * 64}

    def post_mime(raw: bytes) -> httpx.Response:
        return client.post("/hooks/mailgun/mime", data=signing(True), files={"body-mime": (None, raw)})

    @given(data=st.data())
    @S.PROPERTY_SETTINGS
    def run(data: st.DataObject) -> None:
        raw = data.draw(S.messages(targets))
        signed = data.draw(st.booleans())
        shape = data.draw(st.sampled_from(["mime", "parsed-form", "urlencoded"]))
        refused = S.inbound_rows(sent).get("refused", 0)
        if shape == "urlencoded":
            fields = {
                "from": data.draw(S.any_text),
                "subject": data.draw(S.any_text),
                "body-plain": data.draw(S.any_text),
                "message-headers": json.dumps(
                    data.draw(st.lists(st.tuples(S.any_text, S.any_text), max_size=5))
                ),
                **signing(signed),
            }
            answer = client.post("/hooks/mailgun", data=fields)
        else:
            name = "body-mime" if shape == "mime" else "body-plain"
            signed_fields = [(k, v.encode()) for k, v in signing(signed).items()]
            content_type, body = data.draw(S.multipart([(name, raw), *signed_fields]))
            body = body.replace(b"\0", b"") if shape == "parsed-form" else body
            answer = client.post(
                f"/hooks/mailgun{'/mime' * (shape == 'mime')}",
                content=body,
                headers={"Content-Type": content_type},
            )
        # A signature inside a body that is not a readable form cannot be verified: such a 400
        # is an unauthenticated refusal (Mailgun itself retries it).
        check(sent, answer, signed and answer.status_code != 400, refused)
        if not signed:
            assert answer.status_code in (400, 401)
        good = post_mime(S.good_message(data.draw(st.integers(0, 10**9))))
        assert good.status_code == 200 and good.json()["status"] == "unmatched"

    run()
    finish(sent, clock, post_mime)


def test_postmark_with_hostile_json(client: httpx.Client, sent: App, clock: FixedClock) -> None:
    targets = S.threads(sent)
    auth = (PM_USER, PM_PASSWORD)

    def post_raw(raw: bytes) -> httpx.Response:
        return client.post("/hooks/postmark", json={"RawEmail": raw.decode("utf-8", "replace")}, auth=auth)

    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | S.wild_text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(S.any_text, inner, max_size=3),
        max_leaves=10,
    )

    @given(data=st.data())
    @S.PROPERTY_SETTINGS
    def run(data: st.DataObject) -> None:
        raw = data.draw(S.messages(targets))
        payload = {
            "From": data.draw(S.wild_text),
            "FromFull": data.draw(json_values),
            "Subject": data.draw(S.wild_text),
            "TextBody": data.draw(S.wild_text),
            "HtmlBody": data.draw(S.wild_text),
            "Headers": data.draw(
                st.lists(st.fixed_dictionaries({"Name": S.wild_text, "Value": json_values}), max_size=4)
            ),
            "Attachments": data.draw(
                st.lists(st.fixed_dictionaries({"Name": S.wild_text, "Content": S.wild_text}), max_size=2)
            ),
            "Extra": data.draw(json_values),
        }
        if data.draw(st.booleans()):
            payload["RawEmail"] = raw.decode("utf-8", "surrogateescape")
        body = json.dumps(payload).encode()  # lone surrogates travel as \\udXXX escapes
        if data.draw(st.integers(0, 4)) == 0:
            body = body[: data.draw(st.integers(0, len(body)))]  # cut short: not JSON any more
        authorised = data.draw(st.booleans())
        refused = S.inbound_rows(sent).get("refused", 0)
        answer = client.post(
            "/hooks/postmark",
            content=body,
            headers={"Content-Type": "application/json"},
            auth=auth if authorised else ("postmark", "wrong"),
        )
        check(sent, answer, authorised, refused)
        good = post_raw(S.good_message(data.draw(st.integers(0, 10**9))))
        assert good.status_code == 200 and good.json()["status"] == "unmatched"

    run()
    finish(sent, clock, post_raw)


def test_sendgrid_with_hostile_forms(client: httpx.Client, sent: App, clock: FixedClock) -> None:
    targets = S.threads(sent)
    url = f"/hooks/sendgrid/{SG_SECRET}"

    def post_raw(raw: bytes) -> httpx.Response:
        return client.post(url, data={"to": "dana@northwind.test"}, files={"email": (None, raw)})

    @given(data=st.data())
    @S.PROPERTY_SETTINGS
    def run(data: st.DataObject) -> None:
        raw = data.draw(S.messages(targets))
        if data.draw(st.booleans()):
            fields = [("email", raw)]
        else:  # parsed: the headers block, text and html, charsets that say anything
            head, _, body = raw.partition(b"\n\n") if b"\r\n\r\n" not in raw else raw.partition(b"\r\n\r\n")
            charsets = json.dumps({"text": data.draw(S.charsets), "headers": data.draw(S.charsets)})
            fields = [("headers", head), ("text", body), ("html", body), ("charsets", charsets.encode())]
        content_type, body = data.draw(S.multipart(fields))
        authorised = data.draw(st.booleans())
        refused = S.inbound_rows(sent).get("refused", 0)
        answer = client.post(
            url if authorised else "/hooks/sendgrid/nope",
            content=body,
            headers={"Content-Type": content_type},
        )
        check(sent, answer, authorised, refused)
        good = post_raw(S.good_message(data.draw(st.integers(0, 10**9))))
        assert good.status_code == 200 and good.json()["status"] == "unmatched"

    run()
    finish(sent, clock, post_raw)


def test_one_click_unsubscribe_with_hostile_bodies(client: httpx.Client, sent: App) -> None:
    token = token_for(sent)

    @given(
        body=st.binary(max_size=300) | S.wild_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
        content_type=st.sampled_from(
            [
                "application/x-www-form-urlencoded",
                "multipart/form-data; boundary=b1",
                "multipart/form-data",
                "text/plain",
                "",
                "application/json; charset=utf-16",
            ]
        ),
        path_token=st.sampled_from([token, token + "x", "x", base64.b64encode(b"\0" * 30).decode()]),
    )
    @S.PROPERTY_SETTINGS
    def run(body: bytes, content_type: str, path_token: str) -> None:
        answer = client.post(f"/u/{path_token}", content=body, headers={"Content-Type": content_type})
        assert answer.status_code in (200, 400, 404, 413), answer.status_code

    run()
