"""Issue 21, item 5: outside text never speaks in our channels.

A prospect's reply containing `<!channel>` and `<https://evil.test|Open thread in replyguard>`
was posted raw to Slack: a channel-wide ping and a disguised link, in the team's own channel.
Here one hostile reply (and a hostile name and company, as a lead file could carry them) goes
through each channel to a real receiver: the Slack-compatible webhook shows every word and
obeys none (no `<`, `>` left, no `@mention`), the email notice is text/plain without control
characters or bidirectional overrides, and the signed webhook carries the words unchanged as
JSON strings (data for a program), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.notices.email import EmailChannel
from replyguard.adapters.notices.http import SlackChannel, WebhookChannel
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.replies import IncomingReply, ReplyKind, record_reply
from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery
from replyguard.service_layer.workspace.leads import find_lead
from replyguard.settings import NotifySettings
from tests.support.http_receiver import LoopbackServer, Received, WebhookReceiver
from tests.support.scenario import REPORTS, load_examples, run_days
from tests.support.smtp_servers import RecordingSmtpServer

SECRET = "whsec_" + base64.b64encode(b"a secret of thirty-two bytes!!!!").decode()
PRIYA = "priya@fernhollow.test"
TEXT = (
    "Sounds good <!channel> <!here|here> <@U024BE7LH> @channel @all please see "
    "<https://evil.test|Open thread in replyguard> & <mailto:x@evil.test|mail>\x1b[31m red\r"
    "overwritten \u202egnp.exe\u202c"
)
SUBJECT = "Re: <!everyone> urgent\u202e"
NAME = "<!subteam^S123|@team>"
COMPANY = "<https://evil.test|Fernhollow>"
HOSTILE = (TEXT, SUBJECT, NAME, COMPANY)


def _hostile_reply(app: App) -> None:
    """Priya's lead file said her name and company were these; she answers with this."""
    load_examples(app)
    run_days(app, app.clock, 1)  # type: ignore[arg-type]
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        contact = uow.session.get_one(m.Contact, lead.contact_id)
        contact.first_name, contact.last_name, contact.company = NAME, "", COMPANY
        reply = IncomingReply(
            kind=ReplyKind.HUMAN_REPLY,
            received_at=app.clock.now(),
            text=TEXT,
            subject=SUBJECT,
            from_address=PRIYA,
        )
        record_reply(uow, lead.id, reply, app.settings, app.hooks)
        uow.commit()


def _texts(block: Any) -> list[str]:
    """Every mrkdwn text of a Slack message."""
    if isinstance(block, dict):
        found = [block["text"]] if isinstance(block.get("text"), str) else []
        return found + [t for k, v in block.items() if k != "url" for t in _texts(v)]
    if isinstance(block, list):
        return [t for item in block for t in _texts(item)]
    return []


def test_a_hostile_reply_through_each_channel(app: App, clock: FixedClock) -> None:
    _hostile_reply(app)
    with app.uow() as uow:
        assert (
            uow.session.scalars(select(m.Notice.payload)).one()["text"].startswith("Sounds good <!channel>")
        )

    def ok(_received: Received) -> tuple[int, bytes]:
        return 200, b"ok"

    with LoopbackServer(ok) as slack, WebhookReceiver(SECRET) as webhook, RecordingSmtpServer() as smtp:
        webhook.down = False
        channels = [
            SlackChannel(slack.url + "/services/T0/B0/x", timeout=5),
            WebhookChannel(webhook.url + "/hooks", SECRET, timeout=5),
            EmailChannel(SmtpTransport(smtp.url(timeout=5))),
        ]
        report = NoticeDelivery(app, channels, NotifySettings()).run_once()
        assert report.delivered == 3
        posted = slack.requests[0].json()
        payload = next(iter(webhook.processed.values()))
        mail = smtp.accepted()[0].message()

    # Slack: every word shown, none obeyed.
    texts = _texts(posted)
    assert texts and all("<" not in t and ">" not in t for t in texts), texts
    section = posted["blocks"][0]["text"]["text"]
    assert "&lt;!channel&gt;" in section and "&lt;https://evil.test|Open thread in replyguard&gt;" in section
    assert "&amp; &lt;mailto:x@evil.test|mail&gt;" in section
    assert "@channel" not in section and "@all" not in section and "@\u2060channel" in section
    assert "&lt;!subteam^S123|@\u2060team&gt;" in posted["text"]
    assert not any(c in t for t in texts for c in "\x1b\r\u202e\u202c")
    button = posted["blocks"][2]["elements"][0]
    assert button["url"].endswith("/threads/1") and "evil" not in button["url"]

    # Email: text/plain only, the words as text, no control characters or overrides.
    assert mail.get_content_type() == "text/plain" and not mail.is_multipart()
    body = mail.get_content()
    assert "Sounds good <!channel>" in body and "<https://evil.test|Open thread in replyguard>" in body
    assert not any(c in body for c in "\x1b\u202e\u202c") and " redoverwritten" in body
    subject = str(mail["Subject"])
    assert "\n" not in subject and "\u202e" not in subject and NAME in subject

    # Webhook: the words unchanged, as JSON strings (data).
    data = payload["data"]
    assert data["text"] == TEXT and data["subject"] == SUBJECT
    assert data["lead"]["company"] == COMPANY and data["lead"]["name"] == NAME
