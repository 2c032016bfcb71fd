"""Automatic replies: every header family, subjects in many languages, and the safety rule."""

from __future__ import annotations

from replyguard.domain.states import ReplyKind

EXCHANGE_OOF = {
    "X-Auto-Response-Suppress": "All",
    "X-MS-Exchange-Inbox-Rules-Loop": "jana@example.de",
    "Return-Path": "<>",
}


def test_exchange_oof_pair_is_out_of_office_in_any_language(mail, run):
    raw = mail(
        "Gracias por su mensaje. Estaré fuera hasta el 30 de julio.",
        subject="Respuesta automática: Q3 offer",
        headers=EXCHANGE_OOF,
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert "header:exchange-oof" in result.evidence
    assert result.return_date is not None and result.return_date.isoformat() == "2024-07-30"


def test_outlook_human_reply_with_auto_response_suppress_stays_human(mail, run):
    raw = mail(
        "Hallo Herr Weber,\n\nja, Donnerstag 10 Uhr passt.\n\nViele Grüße\nJana",
        subject="AW: Q3 offer",
        headers={"X-Auto-Response-Suppress": "DR, RN, NRN, OOF, AutoReply", "Thread-Topic": "Q3"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.HUMAN_REPLY
    assert result.reply_text == "Hallo Herr Weber,\n\nja, Donnerstag 10 Uhr passt."


def test_inbox_rules_loop_alone_is_not_out_of_office(mail, run):
    raw = mail(
        "I was out of office last week, sorry. Let's talk on Tuesday.",
        headers={"X-MS-Exchange-Inbox-Rules-Loop": "jana@example.de"},
    )
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_person_mentioning_absence_is_human(mail, run):
    raw = mail("I was on vacation until yesterday. Yes, let's talk next Monday!")
    result = run(raw)
    assert result.kind is ReplyKind.HUMAN_REPLY
    assert result.return_date is None


def test_human_answer_above_a_quoted_out_of_office_is_human(mail, run):
    body = (
        "Sounds good, send me the contract.\n\n"
        "On Mon, Jul 15, 2024 at 9:58 AM Max Weber <sales@example.com> wrote:\n"
        "> Automatic reply: I am out of the office until 26 July.\n"
        "> This is an automated message.\n"
    )
    result = run(mail(body, subject="Re: Automatic reply: Q3 offer"))
    assert result.kind is ReplyKind.HUMAN_REPLY
    assert result.reply_text == "Sounds good, send me the contract."


def test_gmail_vacation_responder(mail, run):
    raw = mail(
        "Hola:\n\nEstaré de vacaciones hasta el 2 de agosto de 2024.\n\nSaludos,\nLucía",
        subject="Vacaciones",
        headers={"Auto-Submitted": "auto-replied", "Precedence": "bulk", "X-Autoreply": "yes"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert "header:auto-submitted" in result.evidence
    assert "header:x-autoreply" in result.evidence
    assert result.return_date.isoformat() == "2024-08-02"


def test_icloud_vacation_uses_structured_end_date(mail, run):
    raw = mail(
        "I'm away until Sunday and will reply when I'm back.",
        subject="Auto reply: Q3 offer",
        date="Tue, 16 Jul 2024 09:05:00 +0200",
        headers={
            "X-Apple-Action": "VACATION",
            "X-Apple-Criteria": "{kind=VACATION,startDate=2024-07-12T22:00:00Z,endDate=2024-07-28T21:59:59Z}",
        },
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert result.return_date.isoformat() == "2024-07-29"
    assert "header:x-apple-criteria" in result.evidence


def test_zimbra_vacation_header(mail, run):
    raw = mail(
        "Estarei ausente até dia 12 de agosto de 2024.",
        subject="Ausência: Q3 offer",
        headers={"Auto-Submitted": "auto-replied (zimbra; vacation)"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert "header:auto-submitted-vacation" in result.evidence


def test_ticket_receipt_is_other_auto_reply(mail, run):
    raw = mail(
        "Thank you for your email. Your request #4711 has been received and we will answer "
        "as soon as possible.",
        subject="[Ticket #4711] Q3 offer",
        headers={"Auto-Submitted": "auto-generated"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.AUTO_REPLY
    assert not result.left_company


def test_left_company_notice_names_the_new_contact(mail, run):
    raw = mail(
        "Jana Schmidt is no longer with the company. Please contact vertrieb@example.de instead.",
        subject="Automatic reply: Q3 offer",
        headers=EXCHANGE_OOF,
    )
    result = run(raw)
    assert result.kind is ReplyKind.AUTO_REPLY
    assert result.left_company
    assert result.new_contact == "vertrieb@example.de"


def test_one_weak_header_is_not_enough(mail, run):
    raw = mail("Yes, please call me tomorrow.", headers={"Precedence": "bulk"})
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_two_weak_signals_make_an_auto_reply(mail, run):
    raw = mail(
        "Thank you for your e-mail.\nI will endeavour to reply as soon as possible.",
        subject="Thank you for your e-mail",
        headers={"Precedence": "bulk", "Return-Path": "<>"},
    )
    assert run(raw).kind is ReplyKind.AUTO_REPLY


def test_lotus_notes_subject_is_out_of_office_with_ddmm_date(mail, run):
    raw = mail(
        "I am out of the office until 05/01/2010.",
        subject="AUTO: Smith, John is out of the office. (returning 05/01/2010)",
        date="Mon, 4 Jan 2010 16:02:30 +0000",
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert result.return_date.isoformat() == "2010-01-05"


def test_challenge_response_is_auto_reply_not_bounce(mail, run):
    raw = mail(
        "Your message has been waitlisted. Please add yourself to my Guest List so your "
        "messages reach my inbox.",
        subject="Re: Q3 offer (Action Required)",
        sender="noreply@screening.example",
        headers={"X-Boxbe-Id": "1234", "Return-Path": "<>"},
    )
    assert run(raw).kind is ReplyKind.AUTO_REPLY


def test_localised_auto_reply_subjects_without_headers():
    from replyguard.domain.inbound import phrases

    for subject in (
        "Automatische Antwort: Q3",
        "Réponse automatique : Q3",
        "Risposta automatica: Q3",
        "Automatisch antwoord: Q3",
        "Automatiskt svar: Q3",
        "Automatyczna odpowiedź: Q3",
        "Resposta automática: Q3",
        "Automatisk svar: Q3",
        "自動応答: Q3",
        "Out of Office: Q3",
    ):
        assert phrases.first_match(phrases.AUTO_SUBJECT, subject), subject
    for subject in ("Re: Automatic reply to your offer", "Auto-renewal question", "Abwesenheit im August"):
        assert phrases.first_match(phrases.AUTO_SUBJECT, subject) is None, subject


def test_words_alone_never_make_a_machine(mail, run):
    # An auto-reply phrase and an out-of-office phrase, but no header a responder sets.
    raw = mail("Sorry - my auto-reply fired by mistake, I'm not out of the office. Call me at 11.")
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_subject_behind_a_reply_prefix_is_the_answered_subject(mail, run):
    raw = mail("Back early - send it over.", subject="Re: AUTO: John Smith is out of the office")
    assert run(raw).kind is ReplyKind.HUMAN_REPLY
    raw = mail("I am away.", subject="Re: hello (Automatic Response)", headers={"Return-Path": "<>"})
    assert run(raw).kind is not ReplyKind.HUMAN_REPLY


def test_mailing_list_precedence_is_not_a_responder_signal(mail, run):
    raw = mail(
        "I'm on vacation until the 29th, but yes, go ahead.",
        headers={"Precedence": "list", "List-Id": "<team.example.org>"},
    )
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_quoted_history_discounts_body_wording(mail, run):
    body = "I was out of office last week. Yes, Thursday.\n\nOn Mon, Jul 15, 2024 Max wrote:\n> Hi"
    assert run(mail(body, headers={"Return-Path": "<>"})).kind is ReplyKind.HUMAN_REPLY


def test_auto_submitted_no_declares_a_person(mail, run):
    raw = mail(
        "Thank you for your message. I will get back to you shortly.",
        headers={"Auto-Submitted": "no", "Precedence": "bulk"},
    )
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_precedence_bulk_alone_cannot_carry_wording(mail, run):
    raw = mail("I'm out of the office tomorrow, so let's speak on Friday.", headers={"Precedence": "bulk"})
    assert run(raw).kind is ReplyKind.HUMAN_REPLY
    raw = mail(
        "Thanks for contacting us! We received your message.",
        sender="noreply@bigco.example",
        headers={"Precedence": "bulk"},
    )
    assert run(raw).kind is ReplyKind.AUTO_REPLY


def test_only_capital_auto_is_the_lotus_prefix(mail, run):
    raw = mail("Wir suchen 12 Fahrzeuge. Ich bin bis Freitag im Urlaub.", subject="Auto: Leasingangebot")
    assert run(raw).kind is ReplyKind.HUMAN_REPLY
    raw = mail("I am out of the office until 12/08/2024.", subject="AUTO: Paul Young (returning 12/08/2024)")
    assert run(raw).kind is ReplyKind.OUT_OF_OFFICE
