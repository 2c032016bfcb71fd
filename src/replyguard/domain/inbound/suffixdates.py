"""Return dates whose keyword comes AFTER the date or weekday.

Contract: `suffix_candidates(text, sent)` yields (kind, lang, position, day) for Japanese and
Chinese dates and weekdays ("8月5日まで", "月曜日から出社", "下周一回来", "到7月26日"), and for
weekdays inflected by a suffix in Finnish ("perjantaihin asti", "maanantaista alkaen"),
Hungarian ("péntekig", "hétfőtől") and Turkish ("Cuma gününe kadar", "Pazartesi gününden
itibaren"). `kind` is "back", "until" or "range" as in returndate.py. A "from" form is the
return only when the same sentence says the person is back or reachable: "from Monday" alone is
as often the first day away.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta

from replyguard.domain.inbound.dateranges import cjk_range_ends
from replyguard.domain.inbound.fastdate import next_weekday, with_rollover
from replyguard.domain.inbound.phrases import compile_lower

Found = tuple[str, str, int, date]

# "8月5日まで" (until), "8月6日以降" (from), "将于8月5日返回" (back on).
_CJK_DATE = re.compile(
    r"(\d{1,2})月(\d{1,2})[日号][^。，,\n]{0,8}?(まで|以降|から|より|返回|回来|回到|上班|之前|前)"
    r"([^。\n]{0,8})"
)
# "から"/"より" (from) start the absence ("7月16日から8月12日まで") unless work resumes right after.
_JA_RESUME = re.compile(r"出社|出勤|戻|復帰|対応|返信|連絡|業務")
_BACK_WORDS = frozenset({"以降", "から", "より", "返回", "回来", "回到", "上班"})
# "到7月26日" / "至7月26日": Chinese "until" before the date.
_ZH_UNTIL = re.compile(r"(?:直到|到|至)(\d{1,2})月(\d{1,2})[日号]")
# "月曜日から出社", "金曜日まで", "来週月曜日以降"; "下周一回来", "周五之前".
_JA_WEEKDAY = re.compile(
    r"(来週)?([月火水木金土日])曜日?(?:[(（][^)）]{0,3}[)）])?\s*(まで|から|より|以降)([^。\n]{0,8})"
)
_ZH_WEEKDAY = re.compile(
    r"(?:(直到|到|至))?(下)?(?:周|星期|礼拜)([一二三四五六日天])[^。，,\n]{0,6}?(返回|回来|回到|上班|之前|前|回)"
)
_JA_DAYS = "月火水木金土日"
_ZH_DAYS = "一二三四五六日"

_FI_DAYS = ("maanantai", "tiistai", "keskiviikko", "torstai", "perjantai", "lauantai", "sunnuntai")
_HU_DAYS = ("hétfő", "kedd", "szerdá", "csütörtök", "péntek", "szombat", "vasárnap")
_TR_DAYS = ("pazartesi", "salı", "çarşamba", "perşembe", "cuma", "cumartesi", "pazar")
_TR_ASCII = {"sali": 1, "carsamba": 2, "persembe": 3}


def _alt(names: tuple[str, ...]) -> str:
    return "|".join(sorted(names, key=len, reverse=True))


_TR_ALT = _alt(_TR_DAYS + tuple(_TR_ASCII))
# Weekday suffix forms: until ("perjantaihin asti", "péntekig", "cumaya kadar").
_UNTIL_WEEKDAY = (
    ("fi", compile_lower(rf"\b({_alt(_FI_DAYS)})hin\s+(?:asti|saakka)\b")),
    ("hu", compile_lower(rf"(?<!\w)({_alt(_HU_DAYS)})ig\b")),
    ("tr", compile_lower(rf"(?<!\w)({_TR_ALT})(?:\s+gününe|['’]?y?[ae])?\s+kadar\b")),
)
# ... and from ("maanantaista alkaen", "hétfőtől", "pazartesi gününden itibaren").
_FROM_WEEKDAY = (
    ("fi", compile_lower(rf"\b({_alt(_FI_DAYS)})sta\s+(?:alkaen|lähtien)\b")),
    ("hu", compile_lower(rf"(?<!\w)({_alt(_HU_DAYS)})(?:tól|től|tol|tõl)\b")),
    ("tr", compile_lower(rf"(?<!\w)({_TR_ALT})(?:\s+gününden|['’]?(?:dan|den|tan|ten))\s+itibaren\b")),
)
# Words that say the person is back: "tavoitettavissa" (reachable), "újra elérhető" (reachable
# again), "ofisteyim" (I am in the office).
_BACK_SENTENCE = {
    "fi": compile_lower(r"tavoitettavissa|palaan|takaisin|toimistolla|töissä|paikalla|taas"),
    "hu": compile_lower(r"újra|ujra|ismét|ismet|vissza|elérhető|elerheto|irodában|rendelkezésre"),
    "tr": compile_lower(r"ofiste|işbaşı|isbasi|dönü|döne|ulaşabilir|ulaşılabilir|tekrar|yeniden"),
}
_SENTENCE_END = re.compile(r"[.!?\n]")


def _weekday_of(word: str, lang: str) -> int:
    days = {"fi": _FI_DAYS, "hu": _HU_DAYS, "tr": _TR_DAYS}[lang]
    return days.index(word) if word in days else _TR_ASCII[word]


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence around text[start:end], at most 80 characters either side."""
    lo = max(0, start - 80)
    before = max((m.end() for m in _SENTENCE_END.finditer(text, lo, start)), default=lo)
    after = _SENTENCE_END.search(text, end, end + 80)
    return text[before : after.start() if after else end + 80]


def _next_week(day: int, sent: date) -> date:
    """Weekday `day` of the calendar week after `sent`'s (weeks start on Monday)."""
    return sent - timedelta(days=sent.weekday()) + timedelta(days=7 + day)


def _cjk_dates(text: str, sent: date) -> Iterator[Found]:
    for pos, month, day_of_month in cjk_range_ends(text):
        end = with_rollover(month, day_of_month, None, sent)
        if end:
            yield "range", "ja", pos, end
    for match in _CJK_DATE.finditer(text):
        if match.group(3) in {"から", "より"} and not _JA_RESUME.search(match.group(4)):
            continue
        day = with_rollover(int(match.group(1)), int(match.group(2)), None, sent)
        if day:
            yield ("back" if match.group(3) in _BACK_WORDS else "until"), "ja", match.start(), day
    for match in _ZH_UNTIL.finditer(text):
        day = with_rollover(int(match.group(1)), int(match.group(2)), None, sent)
        if day:
            yield "until", "zh", match.start(), day


def _cjk_weekdays(text: str, sent: date) -> Iterator[Found]:
    for match in _JA_WEEKDAY.finditer(text):
        if match.group(3) in {"から", "より"} and not _JA_RESUME.search(match.group(4)):
            continue
        wanted = _JA_DAYS.index(match.group(2))
        day = _next_week(wanted, sent) if match.group(1) else next_weekday(wanted, sent)
        yield ("until" if match.group(3) == "まで" else "back"), "ja", match.start(), day
    for match in _ZH_WEEKDAY.finditer(text):
        wanted = _ZH_DAYS.index(match.group(3)) if match.group(3) != "天" else 6
        day = _next_week(wanted, sent) if match.group(2) else next_weekday(wanted, sent)
        until = match.group(1) or match.group(4) in {"之前", "前"}
        yield ("until" if until else "back"), "zh", match.start(), day


_CJK_CHAR = re.compile(r"[\u3040-\u9fff]")


def suffix_candidates(text: str, sent: date) -> Iterator[Found]:
    """Every date or weekday of the module's forms in lower-cased `text`; see the docstring."""
    if _CJK_CHAR.search(text):
        yield from _cjk_dates(text, sent)
        yield from _cjk_weekdays(text, sent)
    for lang, pattern in _UNTIL_WEEKDAY:
        for match in pattern.finditer(text):
            yield "until", lang, match.start(), next_weekday(_weekday_of(match.group(1), lang), sent)
    for lang, pattern in _FROM_WEEKDAY:
        for match in pattern.finditer(text):
            if _BACK_SENTENCE[lang].search(_sentence(text, match.start(), match.end())):
                yield "back", lang, match.start(), next_weekday(_weekday_of(match.group(1), lang), sent)
