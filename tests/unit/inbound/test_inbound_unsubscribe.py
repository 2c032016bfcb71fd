"""Unsubscribe requests in several languages, ARF reports, and quoted footers that do not count."""

from __future__ import annotations

import pytest

from replyguard.domain.states import ReplyKind


@pytest.mark.parametrize(
    "text",
    [
        "STOP",
        "Please remove me from your list.",
        "Unsubscribe",
        "Bitte entfernen Sie mich aus Ihrem Verteiler.",
        "Merci de me désinscrire de cette liste.",
        "Por favor, darme de baja.",
        "Vi prego di cancellatemi dalla lista.",
        "Graag afmelden voor deze mails.",
        "Ta bort mig från listan, tack.",
        "Proszę mnie wypisać z listy.",
        "Quero descadastrar meu e-mail.",
    ],
)
def test_unsubscribe_words(mail, run, text):
    result = run(mail(text))
    assert result.kind is ReplyKind.UNSUBSCRIBE
    assert any("unsubscribe" in e for e in result.evidence)


def test_unsubscribe_in_quoted_footer_is_ignored(mail, run):
    body = (
        "Interesting, what does the enterprise plan cost?\n\n"
        "On Mon, Jul 15, 2024 at 9:58 AM Max <sales@example.com> wrote:\n"
        "> Our Q3 offer.\n> To unsubscribe, reply STOP.\n"
    )
    assert run(mail(body)).kind is ReplyKind.HUMAN_REPLY


def arf(feedback_type: str) -> bytes:
    return (
        "From: staff@feedback.example.net\r\nTo: abuse@example.com\r\n"
        "Subject: Complaint about message from 192.0.2.1\r\n"
        "Date: Tue, 16 Jul 2024 08:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="R"\r\n\r\n'
        "--R\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n"
        "--R\r\nContent-Type: message/feedback-report\r\n\r\n"
        f"Feedback-Type: {feedback_type}\r\nUser-Agent: SomeGenerator/1.0\r\nVersion: 1\r\n\r\n"
        "--R\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        "From: sales@example.com\r\nMessage-ID: <rg.00@example.com>\r\n\r\n--R--\r\n"
    ).encode()


@pytest.mark.parametrize("feedback_type", ["abuse", "opt-out"])
def test_arf_reports_count_as_unsubscribe(run, feedback_type):
    result = run(arf(feedback_type))
    assert result.kind is ReplyKind.UNSUBSCRIBE
    assert result.evidence == (f"arf:{feedback_type}",)


def test_more_ways_to_say_stop(mail, run):
    for text in (
        "Bitte nehmen Sie mich aus Ihrem Verteiler.",
        "Merci de ne plus m'écrire.",
        "Por favor, dejen de enviarme correos.",
    ):
        assert run(mail(text)).kind is ReplyKind.UNSUBSCRIBE, text


def test_newsletter_unsubscribe_with_a_question_is_a_conversation(mail, run):
    text = "Please unsubscribe me from your newsletter - but can you call me Friday about the pilot?"
    assert run(mail(text)).kind is ReplyKind.HUMAN_REPLY
    assert run(mail("Please unsubscribe me from your newsletter.")).kind is ReplyKind.UNSUBSCRIBE
