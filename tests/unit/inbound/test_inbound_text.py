"""Parsing and new-text extraction: charsets, encoded words, HTML, quotes, signatures."""

from __future__ import annotations

import pytest

from replyguard.domain.inbound.htmltext import html_to_text
from replyguard.domain.inbound.quotes import new_text
from replyguard.domain.states import ReplyKind


def multipart_alternative(plain: str, html: str) -> bytes:
    return (
        "From: Jana <jana@example.de>\r\nTo: sales@example.com\r\nSubject: Re: Q3\r\n"
        "Date: Mon, 15 Jul 2024 10:05:00 +0200\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/alternative; boundary="A"\r\n\r\n'
        f"--A\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{plain}\r\n"
        f"--A\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--A--\r\n"
    ).encode()


def test_iso_8859_1_body_and_encoded_word_subject(mail, run):
    raw = mail(
        "Grüße aus Köln, gerne nächste Woche.".encode("iso-8859-1"),
        subject="AW: Angebot",
        content_type='text/plain; charset="iso-8859-1"',
    ).replace(b"Subject: AW: Angebot", b"Subject: =?iso-8859-1?q?AW=3A_Angebot_f=FCr_Q3?=")
    result = run(raw)
    assert result.subject == "AW: Angebot für Q3"
    assert result.reply_text == "Grüße aus Köln, gerne nächste Woche."


def test_windows_1252_quotes_and_dashes(mail, run):
    body = "It’s fine – let’s talk “soon”.".encode("cp1252")
    result = run(mail(body, content_type="text/plain; charset=windows-1252"))
    assert result.reply_text == "It’s fine – let’s talk “soon”."


def test_unknown_charset_and_raw_8bit_header_do_not_break(mail, run):
    raw = mail("Ja, gerne.", content_type="text/plain; charset=x-made-up")
    raw = raw.replace(b"Subject: Re: Q3 offer", "Subject: Re: Q3 Angebot für Sie".encode())
    result = run(raw)
    assert result.reply_text == "Ja, gerne."
    assert result.subject == "Re: Q3 Angebot für Sie"


def test_html_only_gmail_reply_drops_the_quote(run):
    html = (
        '<div dir="ltr">Yes, Thursday works.<br></div><br><div class="gmail_quote">'
        '<div class="gmail_attr">On Mon, Jul 15, 2024 Max wrote:<br></div>'
        "<blockquote>Our Q3 offer &amp; prices</blockquote></div>"
    )
    raw = multipart_alternative("", html).replace(b"text/plain", b"text/x-empty")
    assert run(raw).reply_text == "Yes, Thursday works."


def test_outlook_html_cuts_at_divrplyfwdmsg_and_signature():
    html = (
        "<html><body><p>Happy to talk&nbsp;tomorrow.</p><div id='Signature'>Jana Schmidt<br>"
        "Head of IT</div><hr><div id='divRplyFwdMsg'><b>From:</b> Max</div><p>old</p>"
        "</body></html>"
    )
    assert html_to_text(html, cut_quotes=True) == "Happy to talk tomorrow."


def test_thunderbird_html_cite_prefix():
    html = (
        '<p>Agreed.</p><div class="moz-cite-prefix">Am 15.07.2024 schrieb Max:</div>'
        '<blockquote type="cite">x</blockquote>'
    )
    assert html_to_text(html, cut_quotes=True) == "Agreed."


def test_multipart_alternative_prefers_plain(run):
    raw = multipart_alternative("Plain answer.\n\n> quoted", "<p>HTML answer</p>")
    assert run(raw).reply_text == "Plain answer."


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Sure.\n\nOn Mon, Jul 15, 2024 at 9:58 AM Max Weber <sales@example.com>\nwrote:\n> hi", "Sure."),
        ("D'accord.\n\nLe lun. 15 juil. 2024 à 09:58, Max <m@x.com> a écrit :\n> salut", "D'accord."),
        ("Vale.\n\nEl lun, 15 jul 2024 a las 9:58, Max (<m@x.com>) escribió:\n> hola", "Vale."),
        ("Gerne.\n\nAm 15.07.2024 um 09:58 schrieb Max Weber <m@x.com>:\n> Hallo", "Gerne."),
        ("Ok.\n\nIl giorno lun 15 lug 2024 alle ore 09:58 Max <m@x.com> ha scritto:\n> ciao", "Ok."),
        ("Prima.\n\nOp ma 15 jul. 2024 om 09:58 schreef Max <m@x.com>:\n> hoi", "Prima."),
        ("Tak.\n\nDen 15 juli 2024 skrev Max Weber <m@x.com>:\n> hej", "Tak."),
        ("Dobrze.\n\nW dniu 15.07.2024 o 09:58, Max <m@x.com> napisał:\n> cześć", "Dobrze."),
        ("Sim.\n\nEm seg., 15 de jul. de 2024 às 09:58, Max <m@x.com> escreveu:\n> olá", "Sim."),
        ("Yes.\n\n-----Original Message-----\nFrom: Max\nSent: Monday\nTo: Jana\nSubject: Q3", "Yes."),
        (
            "Ja.\n\nVon: Max Weber <m@x.com>\nGesendet: Montag, 15. Juli 2024 09:58\n"
            "An: Jana\nBetreff: Q3\n\nHallo",
            "Ja.",
        ),
        ("Oui.\n\nDe : Max <m@x.com>\nEnvoyé : lundi 15 juillet 2024 09:58\nÀ : Paul\nObjet : Q3", "Oui."),
        ("Sí.\n\nDe: Max <m@x.com>\nEnviado: lunes, 15 de julio\nPara: Ana\nAsunto: Q3", "Sí."),
        ("Ja.\n\nFrån: Max <m@x.com>\nSkickat: den 15 juli 2024\nTill: Erik\nÄmne: Q3", "Ja."),
        ("OK\n\n________________________________\nFrom: Max <m@x.com>\nSent: Monday", "OK"),
    ],
)
def test_quote_headers_in_many_languages(body, expected):
    assert new_text(body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Call me at 5.\n\nSent from my iPhone", "Call me at 5."),
        ("Passt.\n\nVon meinem iPhone gesendet", "Passt."),
        ("D'accord.\n\nEnvoyé de mon iPhone", "D'accord."),
        ("Prima.\n\nVerstuurd vanaf mijn iPad", "Prima."),
        ("Vale.\n\nEnviado desde mi móvil", "Vale."),
        ("Fine.\n\nGet Outlook for Android", "Fine."),
        ("Yes please.\n\n-- \nJana Schmidt\nHead of IT\n+49 30 1234", "Yes please."),
        ("Sounds good.\n\nBest regards,\nJana Schmidt\nACME GmbH", "Sounds good."),
        ("Gerne.\n\nMit freundlichen Grüßen\nJana Schmidt", "Gerne."),
        ("Bien reçu.\n\nCordialement,\nPaul Martin", "Bien reçu."),
        ("Confermo.\n\nMarco", "Confermo."),
        ("Thanks!", "Thanks!"),
    ],
)
def test_signatures_and_mobile_footers(body, expected):
    assert new_text(body) == expected


def test_bottom_posted_reply_is_found_below_the_quote():
    body = "On Mon, Jul 15, 2024, Max wrote:\n> Shall we talk?\n> Max\n\nYes, Tuesday at 10.\n"
    assert new_text(body) == "Yes, Tuesday at 10."


def test_hotmail_quoted_header_fields():
    body = "Hello\n\n> Subject: Test\n> From: bob@example.org\n> Date: Mon, 2 Apr 2012\n>\n> Hi"
    assert new_text(body) == "Hello"


def test_fixture_file_thunderbird_reply(run, fixtures):
    result = run((fixtures / "thunderbird_reply_fr.eml").read_bytes())
    assert result.kind is ReplyKind.HUMAN_REPLY
    assert result.reply_text == "Bonjour Max,\n\nOui, mardi à 14h me convient."


def test_phrase_patterns_must_be_lower_case():
    from replyguard.domain.inbound.phrases import compile_lower

    assert compile_lower(r"\bout of office\b\S").search("i am out of office!")
    with pytest.raises(ValueError, match="lower case"):
        compile_lower(r"Out of office")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Да, в среду.\n\nпн, 15 июл. 2024 г. в 09:58, Max <m@x.com>:\n\n> Здравствуйте", "Да, в среду."),
        ("水曜日で。\n\n2024年7月15日(月) 9:58 Max <m@x.com>:\n\n> 鈴木様", "水曜日で。"),
        (
            "Gerne.\n\nMax Muster <m@x.com> schrieb am Fr., 28.\nApr. 2017 um 11:53 Uhr:\n\n> Hallo",
            "Gerne.",
        ),
        (
            "Evet.\n\nKimden: Max <m@x.com>\nGönderildi: 15 Temmuz 2024 09:58\nKime: Emre\nKonu: Q3",
            "Evet.",
        ),
    ],
)
def test_attribution_lines_without_a_verb_and_more_outlook_languages(body, expected):
    assert new_text(body) == expected


def test_the_senders_only_line_above_a_quote_is_kept():
    # The first line is never taken for an attribution, even with a colon and a time in it.
    assert new_text("Yes, 10:30 works:\n> shall we meet?") == "Yes, 10:30 works:"
