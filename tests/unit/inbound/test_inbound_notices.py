"""Machine notices that are not bounces: provider events by mail, complaints without ARF, and
feedback reports about our own domain. Messages written here (never copied from the corpus)."""

from __future__ import annotations

import json

from replyguard.domain.inbound import classify
from replyguard.domain.states import ReplyKind


def _mail(headers: str, body: str) -> bytes:
    return (headers.strip().replace("\n", "\r\n") + "\r\n\r\n" + body.replace("\n", "\r\n")).encode()


def test_dmarc_forensic_report_has_no_effect():
    raw = _mail(
        """
From: dmarc-noreply@receiver.example
To: dmarc-ruf@sales.example
Subject: DMARC Forensic report for sales.example
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="R"
""",
        "--R\nContent-Type: text/plain\n\nThis is an authentication failure report.\n\n"
        "--R\nContent-Type: message/feedback-report\n\nFeedback-Type: auth-failure\nVersion: 1\n"
        "Auth-Failure: dmarc\n\n--R\nContent-Type: text/rfc822-headers\n\nFrom: max@sales.example\n"
        "To: lead@dest.example\nSubject: Q3 offer\n\n--R--\n",
    )
    result = classify(raw)
    assert result.kind is ReplyKind.AUTO_REPLY  # logged, never an unsubscribe: it is about our domain
    assert "arf:auth-failure:no-effect" in result.evidence


def test_hotmail_complaint_with_the_marker_on_the_attached_message_stops_mail():
    raw = _mail(
        """
From: staff@hotmail.example
To: abuse@sales.example
Subject: complaint about message from 192.0.2.10
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="J"
""",
        "--J\nContent-Type: message/rfc822\nContent-Disposition: inline\n\n"
        "X-HmXmrOriginalRecipient: lead@hotmail.example\nFrom: max@sales.example\nTo: lead@hotmail.example\n"
        "Subject: Q3 offer\n\nHello\n--J--\n",
    )
    result = classify(raw)
    assert result.kind is ReplyKind.UNSUBSCRIBE
    assert "complaint:non-arf" in result.evidence


def test_sns_wrapped_ses_bounce_folded_by_mail_software():
    inner = json.dumps({
        "notificationType": "Bounce",
        "bounce": {"bounceType": "Permanent", "bounceSubType": "General",
                   "bouncedRecipients": [{"emailAddress": "lead@dest.example", "status": "5.1.1",
                                          "diagnosticCode": "smtp; 550 5.1.1 user unknown"}]},
    })  # fmt: skip
    envelope = json.dumps({"Type": "Notification", "Message": inner}, indent=2)
    # Mail software folds the long "Message" line inside the JSON string; SNS appends a footer.
    folded = envelope.replace("user unknown", "user\n unknown")
    raw = _mail(
        """
From: SES <no-reply@sns.amazonaws.example>
To: max@sales.example
Subject: AWS Notification Message
Content-Type: text/plain; charset=UTF-8
""",
        folded + "\n\n--\nIf you wish to stop receiving notifications from this topic, click below.\n",
    )
    result = classify(raw)
    assert result.kind is ReplyKind.BOUNCE_HARD
    assert result.bounce is not None and result.bounce.recipient == "lead@dest.example"
