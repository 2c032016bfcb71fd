"""A hand-written reader for the date forms out-of-office notices actually use.

Contract: `read_date(span, sent)` reads the date written at the START of `span` (the text right
after an anchor such as "until" or "bis zum") and returns it, or None when the span does not
start with one of the forms below; the caller then falls back to dateparser, which is about a
hundred times slower. Forms, in every supported language's month and weekday names:

- "<day>[.|st|er] [de|of] <month> [de] [year]"  (2 août 2024, 5. August, 12 de agosto de 2024)
- "<month> <day>[st] [, year]"                   (August 12th, Jan 2, July 26, 2024)
- "<weekday> <day>"                              (lunes 5: the next 5th on or after the Date)
- "<weekday>" / "next <weekday>"                 (the next such day strictly after the Date)

Up to two lead words (weekday, article, "the", "den", "el", ...) may come first. Numeric forms
(26.07., 7/26, 2024-08-12) stay in returndate.py, which resolves D/M versus M/D.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTH_NAMES: dict[int, tuple[str, ...]] = {
    1: ("január", "january", "jan", "januar", "jänner", "janvier", "janv", "enero", "ene", "gennaio",
        "janeiro", "januari", "stycznia", "styczeń", "styczen", "tammikuuta", "tammikuu", "ledna",
        "leden", "ocak", "января", "январь"),
    2: ("február", "february", "feb", "februar", "février", "fevrier", "févr", "fevr", "febrero", "febbraio",
        "fevereiro", "fev", "februari", "lutego", "luty", "helmikuuta", "helmikuu", "února",
        "unora", "únor", "şubat", "subat", "февраля", "февраль"),
    3: ("március", "march", "mar", "märz", "maerz", "mär", "mrz", "mars", "marzo", "março", "marco", "maart",
        "mrt", "marts", "marca", "marzec", "maaliskuuta", "maaliskuu", "března", "brezna",
        "březen", "mart", "марта", "март"),
    4: ("április", "april", "apr", "avril", "avr", "abril", "abr", "aprile", "kwietnia", "kwiecień",
        "huhtikuuta", "huhtikuu", "dubna", "duben", "nisan", "апреля", "апрель"),
    5: ("május", "may", "mai", "mayo", "maggio", "maio", "mei", "maj", "maja", "toukokuuta", "toukokuu",
        "května", "kvetna", "květen", "mayıs", "mayis", "мая", "май"),
    6: ("június", "june", "jun", "juni", "juin", "junio", "giugno", "giu", "junho", "czerwca", "czerwiec",
        "kesäkuuta", "kesäkuu", "června", "cervna", "červen", "haziran", "июня", "июнь"),
    7: ("július", "july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lug", "julho", "lipca",
        "lipiec", "heinäkuuta", "heinäkuu", "července", "cervence", "červenec", "temmuz", "июля",
        "июль"),
    8: ("augusztus", "august", "aug", "août", "aout", "agosto", "augustus", "augusti", "sierpnia", "sierpień",
        "elokuuta", "elokuu", "srpna", "srpen", "ağustos", "agustos", "августа", "август"),
    9: ("szeptember", "september", "sep", "sept", "septembre", "septiembre", "setiembre", "settembre",
        "setembro", "września", "wrzesień", "syyskuuta", "syyskuu", "září", "zari", "eylül",
        "eylul", "сентября", "сентябрь"),
    10: ("október", "october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "ott", "outubro",
         "października", "październik", "lokakuuta", "lokakuu", "října", "rijna", "říjen", "ekim",
         "октября", "октябрь"),
    11: ("november", "nov", "novembre", "noviembre", "novembro", "listopada", "listopad",
         "marraskuuta", "marraskuu", "listopadu", "kasım", "kasim", "ноября", "ноябрь"),
    12: ("december", "dec", "dezember", "dez", "décembre", "decembre", "déc", "diciembre", "dic",
         "dicembre", "dezembro", "desember", "grudnia", "grudzień", "joulukuuta", "joulukuu",
         "prosince", "prosinec", "aralık", "aralik", "декабря", "декабрь"),
}  # fmt: skip
_WEEKDAY_NAMES: dict[int, tuple[str, ...]] = {
    0: ("monday", "mon", "montag", "lundi", "lunes", "lunedì", "lunedi", "segunda-feira",
        "segunda", "maandag", "måndag", "mandag", "poniedziałek", "poniedzialek", "maanantai",
        "maanantaina", "pondělí", "pondeli", "pazartesi", "понедельник"),
    1: ("tuesday", "tue", "tues", "dienstag", "mardi", "martes", "martedì", "martedi",
        "terça-feira", "terça", "terca", "dinsdag", "tisdag", "tirsdag", "wtorek", "tiistai",
        "tiistaina", "úterý", "utery", "salı", "sali", "вторник"),
    2: ("wednesday", "wed", "mittwoch", "mercredi", "miércoles", "miercoles", "mercoledì",
        "mercoledi", "quarta-feira", "quarta", "woensdag", "onsdag", "środa", "sroda",
        "keskiviikko", "keskiviikkona", "středa", "streda", "çarşamba", "carsamba", "среда"),
    3: ("thursday", "thu", "thur", "thurs", "donnerstag", "jeudi", "jueves", "giovedì", "giovedi",
        "quinta-feira", "quinta", "donderdag", "torsdag", "czwartek", "torstai", "torstaina",
        "čtvrtek", "ctvrtek", "perşembe", "persembe", "четверг"),
    4: ("friday", "fri", "freitag", "vendredi", "viernes", "venerdì", "venerdi", "sexta-feira",
        "sexta", "vrijdag", "fredag", "piątek", "piatek", "perjantai", "perjantaina", "pátek",
        "patek", "cuma", "пятница"),
    5: ("saturday", "sat", "samstag", "samedi", "sábado", "sabado", "sabato", "zaterdag",
        "lördag", "lørdag", "sobota", "lauantai", "lauantaina", "cumartesi", "суббота"),
    6: ("sunday", "sun", "sonntag", "dimanche", "domingo", "domenica", "zondag", "söndag",
        "søndag", "niedziela", "sunnuntai", "sunnuntaina", "neděle", "nedele", "pazar",
        "воскресенье"),
}  # fmt: skip
# Case forms a weekday takes after "from", "until" and "on" in Polish ("od poniedziałku", "do
# piątku", "w środę"), Russian ("с понедельника", "до пятницы", "в среду"), Czech ("do pátku",
# "ve středu") and Hungarian ("hétfőn"; the "-tól"/"-ig" forms are read in returndate.py).
_WEEKDAY_FORMS: dict[int, tuple[str, ...]] = {
    0: ("poniedziałku", "poniedzialku", "понедельника", "hétfő", "hétfőn", "hetfo"),
    1: ("wtorku", "вторника", "kedd", "kedden"),
    2: ("środy", "srody", "środę", "srode", "среды", "среду", "středy", "stredy", "středu", "stredu",
        "szerda", "szerdán"),
    3: ("czwartku", "четверга", "čtvrtka", "ctvrtka", "csütörtök", "csütörtökön"),
    4: ("piątku", "piatku", "пятницы", "пятницу", "pátku", "patku", "péntek", "pénteken"),
    5: ("soboty", "sobotę", "sobote", "субботы", "субботу", "sobotu", "szombat", "szombaton"),
    6: ("niedzieli", "niedzielę", "niedziele", "воскресенья", "neděle", "nedele", "neděli", "nedeli",
        "vasárnap"),
}  # fmt: skip
MONTHS: dict[str, int] = {name: num for num, names in _MONTH_NAMES.items() for name in names}
WEEKDAYS: dict[str, int] = {
    name: num for table in (_WEEKDAY_NAMES, _WEEKDAY_FORMS) for num, names in table.items() for name in names
}


def _alternation(names: list[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


#: Every month name and every weekday form, longest first, as regex alternations.
MONTH_ALT = _alternation(list(MONTHS))
WEEKDAY_ALT = _alternation(list(WEEKDAYS))
_MONTH = rf"(?P<month>{MONTH_ALT})"
_MONTH2 = _MONTH.replace("?P<month>", "?P<month2>")
_WEEKDAY_ALT = WEEKDAY_ALT
_LEAD_WORDS = (
    r"the|on|le|el|den|dem|der|il|lo|la|o|a|dia|am|op|på|du|au|al|dnia|zum|ab|dal|next|this|"
    r"coming|nächsten|nächster|kommenden|prochain|próximo|proximo|prossimo|volgende|nästa|"
    r"neste|næste|vom|dès|from|per|w|ve|em|no|na|nel|nella|en|at|"
    # "from" before a weekday: "à partir de lundi", "a partir del lunes", "da lunedì", "från
    # måndag", "fra mandag", "od poniedziałku", "с понедельника", "v pondělí"
    r"à|partir|partire|de|del|da|från|fra|och|og|med|od|v|с|в|"
    r"d"  # Danish "fredag d. 2. august" (d. = den)
)
_LEAD = rf"(?:(?:(?P<weekday>{_WEEKDAY_ALT})|{_LEAD_WORDS})\b[,.]?\s+){{0,3}}"
_YEAR = r"(?:\s*,?\s*(?:de\s+|del\s+)?(?P<year>(?:19|20)\d{2})\b)?"
LEAD = re.compile(rf"^\s*{_LEAD}", re.IGNORECASE)  # lead words only: "on Monday, ", "na segunda-feira, "
_DAY_SUFFIX = r"(?:st|nd|rd|th|er|e|º|ª|\.)?"
_DAY_MONTH = re.compile(
    rf"^\s*{_LEAD}(?P<day>\d{{1,2}}){_DAY_SUFFIX}\s*(?:de\s+|of\s+|d['’]\s*)?{_MONTH}\b\.?{_YEAR}",
    re.IGNORECASE,
)
_MONTH_DAY = re.compile(
    rf"^\s*{_LEAD}{_MONTH2}\b\.?\s+(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\b(?![./:]\d){_YEAR}",
    re.IGNORECASE,
)
# A bare day after a weekday ("lunes 5", "Friday the 2nd") or with an ordinal/dot ("the 3rd").
_BARE_DAY = re.compile(
    rf"^\s*{_LEAD}(?P<day>\d{{1,2}})(?!\d)(?P<suffix>st|nd|rd|th|er|\.)?(?![\d./:-]\d)(?!\s*(?:%|h\b|uhr|am\b|pm\b))",
    re.IGNORECASE,
)
_WEEKDAY_ONLY = re.compile(
    rf"^\s*(?:(?:{_LEAD_WORDS})\s+){{0,3}}(?P<weekday>{_WEEKDAY_ALT})(?![\w-])(?!\s*,?\s*(?:the\s+)?\d)",
    re.IGNORECASE,
)


_RELATIVE = (
    r"tomorrow|next|end|mid|middle|early|late|beginning|in\s+(?:\d|a|an|one|two|three|four)\b|"
    r"morgen|übermorgen|nächste\w*|ende|anfang|mitte|demain|fin|début|mi-|mañana|finales|"
    r"principios|mediados|próxim\w*|domani|fine|inizio|metà|prossim\w*|amanhã|final|início|"
    r"meados|eind|begin|midden|volgende|imorgon|slutet|början|mitten|nästa|i\s+morgen|slutten|"
    r"slutningen|starten|næste|neste|jutr\w*|końc\w*|początk\w*|połow\w*|huomenna|zítra|"
    r"konce|začátk\w*|yarın|завтра|конц\w*|начал\w*|середин\w*"
)
#: Spans worth handing to dateparser: they start (after lead words) with a number, a month or
#: weekday name, or a relative expression. Anything else ("to you as soon as I can") is not a
#: date, and dateparser costs milliseconds to say so (or, worse, finds one in it).
WORTH_DATEPARSER = re.compile(
    rf"^[\s(\[]*(?:(?:{_LEAD_WORDS})\b[,.]?\s+){{0,2}}(?:\d|(?:{_alternation(list(MONTHS))}|"
    rf"{_WEEKDAY_ALT}|{_RELATIVE})\b)",
    re.IGNORECASE,
)


#: A date without a year up to this long before the message is read as past (a responder left
#: on after the absence: "back on 1 December" sent on the 7th), not as next year's.
RECENT_PAST = timedelta(days=21)


def with_rollover(month: int, day: int, year: int | None, sent: date) -> date | None:
    """The date, with the next year when no year is written and it lies more than RECENT_PAST
    before the message."""
    try:
        if year is not None:
            return date(year, month, day)
        candidate = date(sent.year, month, day)
        if candidate < sent - RECENT_PAST:
            candidate = date(sent.year + 1, month, day)
        return candidate
    except ValueError:
        return None


def _next_day_of_month(day: int, sent: date) -> date | None:
    for ahead in range(3):
        month = (sent.month - 1 + ahead) % 12 + 1
        year = sent.year + (sent.month - 1 + ahead) // 12
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate >= sent:
            return candidate
    return None


def _month(name: str) -> int | None:
    # Case-insensitive matching can accept a spelling whose lower() is not in the table
    # (Turkish dotted capital I lowers to two code points): such a span is simply not read.
    return MONTHS.get(name.lower())


def read_date(span: str, sent: date) -> date | None:
    """The date at the start of `span`, or None if it is not one of the module's forms."""
    match = _DAY_MONTH.match(span) or _MONTH_DAY.match(span)
    if match:
        groups = match.groupdict()
        month = _month(groups.get("month") or groups.get("month2") or "")
        year = int(groups["year"]) if groups.get("year") else None
        return with_rollover(month, int(groups["day"]), year, sent) if month else None
    match = _BARE_DAY.match(span)
    if match and (match.group("weekday") or match.group("suffix")):
        return _next_day_of_month(int(match.group("day")), sent)
    match = _WEEKDAY_ONLY.match(span)
    wanted = WEEKDAYS.get(match.group("weekday").lower()) if match else None
    if wanted is None:
        return None
    return next_weekday(wanted, sent)


def next_weekday(wanted: int, sent: date) -> date:
    """The next day strictly after `sent` that falls on weekday `wanted` (Monday is 0)."""
    return sent + timedelta(days=(wanted - sent.weekday() - 1) % 7 + 1)
