"""Out-of-office return dates in many languages, relative to the message Date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from replyguard.domain.inbound.returndate import find_return_date
from replyguard.domain.states import ReplyKind

SENT = datetime(2024, 7, 15, 10, 5, tzinfo=timezone(timedelta(hours=2)))  # a Monday


def back(text: str, sent: datetime = SENT, hint: str | None = None) -> str | None:
    day, _rule = find_return_date(text, "", sent, "", hint)
    return day.isoformat() if day else None


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        ("en", "I am out of the office and will be back on Monday, July 29.", "2024-07-29"),
        ("en", "I'm away through 7/26 with limited access to email.", "2024-07-27"),
        ("de", "Ich bin bis einschließlich 26.07.2024 nicht im Büro.", "2024-07-27"),
        ("de", "Ab dem 29.07. bin ich wieder erreichbar.", "2024-07-29"),
        ("fr", "Je suis absent jusqu'au vendredi 2 août 2024 inclus.", "2024-08-03"),
        ("fr", "Je serai de retour le lundi 5 août.", "2024-08-05"),
        ("es", "Estaré fuera de la oficina hasta el 30 de julio de 2024.", "2024-07-30"),
        ("it", "Sarò fuori ufficio fino al 31 luglio 2024 compreso.", "2024-08-01"),
        ("it", "Rientrerò giovedì 1 agosto.", "2024-08-01"),
        ("pt", "Estarei ausente até dia 12 de agosto de 2024.", "2024-08-12"),
        ("nl", "Ik ben afwezig tot en met vrijdag 26 juli 2024.", "2024-07-27"),
        ("nl", "Vanaf maandag 29 juli ben ik weer bereikbaar.", "2024-07-29"),
        ("sv", "Jag är på semester till och med den 9 augusti 2024.", "2024-08-10"),
        ("sv", "Jag är tillbaka måndag 12 augusti.", "2024-08-12"),
        ("da", "Jeg er på ferie og tilbage den 5. august.", "2024-08-05"),
        ("pl", "Jestem na urlopie do 2 sierpnia 2024 r.", "2024-08-02"),
        ("ja", "8月5日まで夏季休暇を取得しております。", "2024-08-05"),
        ("ja", "8月6日以降に順次返信いたします。", "2024-08-06"),
    ],
)
def test_return_dates_per_language(lang, text, expected):
    assert back(text, hint=lang) == expected


def test_explicit_return_beats_until():
    text = "I am out from 7/15 through 7/19. I will return on Monday, July 22."
    assert back(text) == "2024-07-22"


def test_year_rollover_for_a_date_without_year():
    sent = datetime(2024, 12, 20, 9, 0, tzinfo=UTC)
    assert back("Ich bin bis zum 3. Januar im Urlaub.", sent, "de") == "2025-01-03"
    assert back("Back on January 6th.", sent) == "2025-01-06"


def test_until_the_7th_inclusive_means_back_on_the_8th():
    sent = datetime(2024, 8, 1, 9, 0, tzinfo=UTC)
    assert back("I'm on leave until the 7th inclusive.", sent) == "2024-08-08"


def test_next_monday_is_relative_to_the_message_date():
    assert back("I will be back next Monday.") == "2024-07-22"


def test_ambiguous_numeric_date_is_resolved_by_plausibility():
    # Sent 5 July 2010: "05/07/2010" can only be 5 July (May is in the past).
    assert back("I am away until 05/07/2010.", datetime(2010, 7, 5, 12, tzinfo=UTC)) == "2010-07-05"
    # Sent 9 September 2008: 11 September is nearer than 9 November.
    sent = datetime(2008, 9, 9, 16, tzinfo=UTC)
    assert back("I will not return until 09/11/2008.", sent) == "2008-09-11"


def test_dates_in_the_past_or_absent_give_none():
    assert back("I was away until 3 March 2023.") is None
    assert back("Ich bin derzeit im Urlaub und melde mich nach meiner Rückkehr.", hint="de") is None


def test_no_date_out_of_office_still_classified(mail, run):
    raw = mail(
        "Hallo,\n\nich bin derzeit im Urlaub und lese meine E-Mails nur unregelmäßig.",
        subject="Urlaub",
        headers={"Auto-Submitted": "auto-replied", "Precedence": "bulk", "X-Autoreply": "yes"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.OUT_OF_OFFICE
    assert result.return_date is None
    assert result.to_json()["return_date"] is None


DEC = datetime(2024, 12, 20, 16, 40, tzinfo=UTC)  # a Friday before the year end


@pytest.mark.parametrize(
    ("lang", "text", "sent", "expected"),
    [
        ("fi", "Olen lomalla 2.8.2024 asti.", SENT, "2024-08-02"),
        ("fi", "Palaan toimistolle maanantaina 5.8.", SENT, "2024-08-05"),
        ("cs", "Jsem na dovolené do 2. 8. 2024.", SENT, "2024-08-02"),
        ("ru", "Я в отпуске до 5 августа.", SENT, "2024-08-05"),
        ("tr", "5 Ağustos tarihine kadar izindeyim.", SENT, "2024-08-05"),
        ("zh", "我正在休假，将于8月5日返回办公室。", SENT, "2024-08-05"),
        ("es", "Estoy de vacaciones hasta el lunes 5.", datetime(2024, 7, 29, tzinfo=UTC), "2024-08-05"),
        ("de", "Ich bin bis zum 6. Januar im Urlaub.", DEC, "2025-01-06"),
        ("fr", "Je suis absente jusqu'au 3 janvier inclus.", DEC, "2025-01-04"),
        ("nl", "Ik ben met vakantie t/m 6 januari.", DEC, "2025-01-07"),
        ("sv", "Jag är ledig till och med 6 januari.", DEC, "2025-01-07"),
        ("pl", "Jestem na urlopie do 7 stycznia.", DEC, "2025-01-07"),
        ("it", "Sono in ferie fino al 7/1.", DEC, "2025-01-07"),
        ("en", "I am out of the office until 02.01. and will reply afterwards.", DEC, "2025-01-02"),
        ("en", "I am on holiday and will be returning Jan 2.", DEC, "2025-01-02"),
        ("en", "Back on the 3rd.", datetime(2024, 12, 26, tzinfo=UTC), "2025-01-03"),
        ("en", "I will be back 2024-09-02.", SENT, "2024-09-02"),
        ("en", "I am out of the office until Friday, July 26.", SENT, "2024-07-26"),
    ],
)
def test_more_languages_and_the_year_end(lang, text, sent, expected):
    assert back(text, sent, lang) == expected


def test_common_forms_do_not_need_dateparser(monkeypatch):
    from replyguard.domain.inbound import returndate

    def boom(*_args: object) -> None:
        raise AssertionError("dateparser was called")

    monkeypatch.setattr(returndate, "_with_dateparser", boom)
    assert back("Je serai de retour le lundi 5 août.", hint="fr") == "2024-08-05"
    assert back("Estaré fuera hasta el 30 de julio de 2024.", hint="es") == "2024-07-30"
    assert back("I will be back on Monday, August 12th.") == "2024-08-12"
    assert back("Back on Thursday.") == "2024-07-18"


def test_fast_reader_leaves_numbers_that_are_not_dates_alone():
    from datetime import date

    from replyguard.domain.inbound.fastdate import read_date

    sent = date(2024, 7, 15)
    for span in ("5 pm today", "10 Uhr", "3 weeks", "2 days"):
        assert read_date(span, sent) is None, span
    assert read_date("the 5th of August", sent) == date(2024, 8, 5)
    assert read_date("martes 6 de agosto de 2024", sent) == date(2024, 8, 6)


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        ("fr", "Je suis en congés du 15 au 26 juillet.", "2024-07-27"),
        ("es", "Estaré fuera del 15 al 31 de julio.", "2024-08-01"),
        ("it", "Sono in ferie dal 15 al 26 luglio.", "2024-07-27"),
        ("hu", "Szabadságon vagyok augusztus 5-ig.", "2024-08-05"),
    ],
)
def test_ranges_give_the_day_after_their_last_day(lang, text, expected):
    # The end of a range is a day away ("du 15 au 26": away on the 26th); "augusztus 5-ig"
    # (until the 5th) is a plain until and gives the 5th.
    assert back(text, hint=lang) == expected
