"""Keyword anchors that introduce an out-of-office date, per language.

Each anchor's pattern ends where the date should start. `kind` says what the date means:
"back" (the first day back), "until" (the last day away, or ambiguous), "until_incl" (the
last day away, stated inclusively), "range" (the end of a range of days away: also the last
day away), "out" (a day the person is away: weakest evidence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from replyguard.domain.inbound.phrases import compile_lower


@dataclass(frozen=True, slots=True)
class Anchor:
    lang: str
    kind: str
    pattern: re.Pattern[str]
    #: The match must start at a word boundary (checked by the caller, see `_a`).
    boundary: bool = False
    #: Only a range's end: a "from" word and a date must come just before (dateranges.py).
    needs_start: bool = False


_LEADING_BOUNDARY = re.compile(r"^(?:\\b|\(\?<!\\w\))")


def _a(lang: str, kind: str, src: str, *, needs_start: bool = False) -> Anchor:
    """An anchor searched in lower-cased text (see phrases.compile_lower: much faster than
    IGNORECASE). A leading \\b is checked by the caller instead of by the regex: without it the
    engine can skip ahead to the keyword's first letters, about three times faster."""
    bare = _LEADING_BOUNDARY.sub("", src)
    return Anchor(lang, kind, compile_lower(bare), boundary=bare != src, needs_start=needs_start)


def at_boundary(text: str, start: int) -> bool:
    """True when `start` begins a word: what a leading \\b would have checked."""
    return start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")


# Weekdays after "do"/"до" (until): Polish, Czech and Russian genitives ("do piątku", "do pátku").
_SLAVIC_WEEKDAY = (
    r"(?:poniedział|poniedzial|wtork|środy|srody|czwartk|piątk|piatk|soboty|niedziel|pondělí|pondeli|"
    r"úterý|utery|středy|stredy|čtvrtk|ctvrtk|pátk|patk|neděle|nedele|понедельник|вторник|сред|"
    r"четверг|пятниц|суббот|воскресень)"
)
_WEEKDAY_GAP = r"(?:[^\W\d_]{2,12},?\s+)?"  # "on Monday, July 22": the weekday is optional

ANCHORS: tuple[Anchor, ...] = (
    # English
    _a("en", "back", r"\bnot (?:be )?(?:back|return(?:ing)?|in the office)\s+(?:until|before)\s+"),
    _a(
        "en",
        "back",
        r"\b(?:back|return|returning|be back|in the office|available again|"
        r"reachable again)\s+(?:to (?:the|my) (?:office|desk)\s+|in (?:the )?office\s+|"
        r"at (?:the |my )?(?:desk|work|office)\s+|in\s+(?=on\b|from\b))?"
        r"(?:on|by|from|at)?\s*",
    ),
    _a("en", "until_incl", r"\b(?:through|thru|up to and including|until and including)\s+"),
    _a("en", "until", r"\b(?:until|till|til|untill)\s+"),
    _a("en", "out", r"\bout of (?:the )?office\s+(?:on\s+)?"),
    _a("en", "range", r"\bto\s+(?:the\s+)?", needs_start=True),  # "from July 15 to July 26"
    # German
    _a(
        "de",
        "until_incl",
        r"\bbis\s+(?:einschließlich|einschl\.|inklusive|inkl\.)\s+"
        r"(?:zum\s+|den\s+)?",
    ),
    _a("de", "until", r"\bbis\s+(?:zum\s+|am\s+|einschl\w*\s+)?"),
    _a("de", "back", r"\b(?:ab|ab dem|ab den|am)\s+(?=(?:[^.\n]|(?<=\d)\.){0,45}\b(?:wieder|zurück)\b)"),
    _a(
        "de",
        "back",
        r"\b(?:wieder|zurück)\s+(?:im büro\s+|erreichbar\s+|da\s+)?(?:am|ab)\s+"
        r"(?:dem\s+)?",
    ),
    # French
    _a("fr", "until", r"\bjusqu['’]?\s*(?:au|à|a)\s+(?:la\s+)?"),
    _a(
        "fr",
        "back",
        r"\b(?:de retour|retour prévu|rentrerai|serai de nouveau (?:disponible|"
        r"joignable)|serai disponible)\s+(?:au bureau\s+)?(?:le|à partir du|dès le|dès)?\s*",
    ),
    # Spanish
    _a("es", "until", r"\bhasta\s+(?:el\s+)?(?:día\s+|dia\s+)?"),
    _a(
        "es",
        "back",
        r"\b(?:regreso|regresaré|regresare|vuelvo|volveré|volvere|de vuelta|"
        r"me reincorporo|me reincorporaré)\s+(?:a la oficina\s+)?(?:el\s+)?(?:día\s+)?",
    ),
    # Italian
    _a("it", "until", r"\bfino\s+(?:al|a|all['’]|il)\s*"),
    _a(
        "it",
        "back",
        r"\b(?:rientrerò|rientrero|rientro|sarò di ritorno|di ritorno|tornerò|"
        r"sarò (?:nuovamente|di nuovo) (?:in ufficio|disponibile|raggiungibile))\s+(?:in ufficio\s+)?"
        r"(?:il\s+|dal\s+)?",
    ),
    # Portuguese
    _a("pt", "until", r"\baté\s+(?:ao\s+|o\s+|a\s+|à\s+)?(?:dia\s+)?"),
    _a(
        "pt",
        "back",
        r"\b(?:regresso|regressarei|retorno|retornarei|volto|voltarei|"
        r"estarei de volta)\s+(?:ao escritório\s+)?(?:no\s+|em\s+|a\s+)?(?:dia\s+)?",
    ),
    # Dutch
    _a("nl", "until_incl", r"\b(?:tot\s+en\s+met|t/m)\s+"),
    _a("nl", "until", r"\btot\s+"),
    _a("nl", "back", r"\b(?:vanaf|per)\s+(?=(?:[^.\n]|(?<=\d)\.){0,45}\b(?:weer|terug)\b)"),
    _a(
        "nl",
        "back",
        r"\b(?:weer|terug)\s+(?:aanwezig\s+|bereikbaar\s+|op kantoor\s+)?"
        r"(?:op|vanaf)\s+",
    ),
    # Swedish
    _a("sv", "until_incl", r"\b(?:till\s+och\s+med|t\.\s?o\.\s?m\.?)\s+(?:den\s+)?"),
    _a("sv", "until", r"\btill\s+(?:den\s+)?"),
    _a(
        "sv",
        "back",
        r"\b(?:tillbaka|åter)\s+(?:på kontoret\s+|i tjänst\s+)?(?:igen\s+)?"
        r"(?:på\s+|den\s+)?",
    ),
    # Danish and Norwegian
    _a("da", "until_incl", r"\btil\s+og\s+med\s+(?:den\s+|d\.\s+)?"),
    _a("da", "until", r"\btil\s+(?:den\s+|d\.\s+)?(?=\d|[^\W\d_]+dag)"),
    _a(
        "da",
        "back",
        r"\b(?:tilbage|tilbake)\s+(?:på kontoret\s+|igen\s+)?(?:den\s+|på\s+|"
        r"d\.\s+)?",
    ),
    # Polish and Czech ("do" needs a digit or a weekday after it: it is also an English word)
    _a("pl", "until", r"\bdo\s+(?:dnia\s+)?(?=\d|" + _SLAVIC_WEEKDAY + ")"),
    _a(
        "pl",
        "back",
        r"\b(?:wracam|wrócę|powrót|po powrocie,?|ponownie|"
        r"będę (?:dostępn[ya]|w biurze|z powrotem|osiągaln[ya]))\s+"
        r"(?:do (?:biura|pracy)\s+)?(?:w\s+|od\s+|dnia\s+)*",
    ),
)

ANCHORS += (
    # Russian ("до" needs a digit after it), Czech, Finnish, Turkish, Chinese-free forms
    # "по 26 июля" is inclusive in Russian ("в отпуске по 26 июля": the 26th is a day off).
    _a("ru", "until_incl", r"(?<!\w)по\s+(?=\d)"),
    _a("ru", "until", r"(?<!\w)до\s+(?=\d|" + _SLAVIC_WEEKDAY + ")"),
    _a("ru", "back", r"(?<!\w)(?:вернусь|буду в офисе|выйду на работу)\s+(?:в\s+офис\s+)?"),
    _a("cs", "back", r"\b(?:zpět|vrátím se|vracím se|budu (?:zpět|k dispozici))\s+(?:v\s+|ve\s+|od\s+)?"),
    _a("fi", "back", r"\b(?:palaan|takaisin)\s+(?:toimistolle\s+|töihin\s+)?"),
    # Ranges: "du 15 au 26 juillet", "del 15 al 31 de julio", "dal 15 al 26 luglio", "de 15 a 26
    # de julho": the end of the range is the last day away.
    _a("fr", "range", r"\bdu\s+\d{1,2}(?:er)?(?:[./]\d{1,2}\.?)?(?:\s+[^\W\d_]{3,12}\.?)?\s+au\s+"),
    _a(
        "es",
        "range",
        r"\b(?:del?|desde el)\s+\d{1,2}(?:/\d{1,2})?(?:\s+de\s+[^\W\d_]{3,12})?\s+(?:al|hasta el)\s+",
    ),
    _a("it", "range", r"\bdal\s+\d{1,2}(?:/\d{1,2})?(?:\s+[^\W\d_]{3,12})?\s+al\s+"),
    _a("pt", "range", r"\b(?:de|desde)\s+\d{1,2}(?:/\d{1,2})?(?:\s+de\s+[^\W\d_]{3,12})?\s+(?:a|até)\s+"),
    _a("nb", "back", r"\btilbake\s+(?:på\s+jobb\s+|på\s+kontoret\s+)?(?:den\s+|på\s+)?"),
)

#: A date followed by an inclusive marker ("26.07. einschließlich", "31 luglio compreso").
INCLUSIVE_AFTER = re.compile(
    r"^(?:[^.\n;]|(?<=\d)\.|(?<=\br)\.){0,40}?\b(?:inclusive|inclusively|included|einschließlich|inklusive|inclus|"
    r"incluse|incluso|incluido|inclusive|compreso|compresa|incluído|włącznie|inbegrepen|včetně|"
    r"vcetne|включительно|bezárólag|dahil|inkl)\b",
    re.IGNORECASE,
)
