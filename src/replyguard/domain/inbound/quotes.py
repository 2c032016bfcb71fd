"""New-text extraction: what the sender wrote now, without quoted history or signature.

Contract: `new_text(plain)` returns the sender's own words from a plain-text body, and
`new_text_from_body(body)` does the same for a parsed body (HTML-only mail is rendered with
its client quote markers removed first). When a rule cannot decide, text is kept: dropping a
person's words is worse than showing a few quoted lines. The quote-header families are the
ones from talon, crisp mail-parser-reply and Mozilla's localised strings (see the research).
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.htmltext import html_to_text
from replyguard.domain.inbound.parse import Body
from replyguard.domain.inbound.signoffs import strip_signature

_WROTE_VERBS = (
    r"wrote|writes|a écrit|a ecrit|escribió|escribio|ha scritto|scrisse|escreveu|schrieb|"
    r"schreef|napisał\w*|napisal\w*|pisze|skrev|kirjoitti|đã viết|napsal\w*|написал\w*|"
    r"пишет|έγραψε|yazdı|het volgende|skrifaði|írta|a scris|kirjutas|rašė"
)
# A quote header ends with the verb (English, French, Spanish...) or starts with a lead word
# and ends with a colon (German "Am ... schrieb Max <m@x>:", Swedish "Den ... skrev X:").
_ENDS_WITH_VERB = re.compile(rf"(?:{_WROTE_VERBS})(?:\s+\S+){{0,1}}\s*[:：]\s*$", re.IGNORECASE)
_LEAD_WORD = re.compile(
    r"^\s*(?:On|Le|El|Il|Em|Am|Op|W dniu|Dnia|Den|På|Pe|Vào|Dne|Στις|В|Op|Il giorno)\b",
    re.IGNORECASE,
)
_VERB_ANYWHERE = re.compile(rf"\b(?:{_WROTE_VERBS})\b", re.IGNORECASE)
_CJK_HEADER = re.compile(r"(?:写道|寫道|のメッセージ|작성)\s*[:：]?\s*$")
_SEPARATOR = re.compile(
    r"^\s*[-_=*]{2,}\s*(?:Original Message|Original-Nachricht|Ursprüngliche Nachricht|"
    r"Originalnachricht|Message d'origine|Message original|Mensaje original|"
    r"Messaggio originale|Mensagem original|Oorspronkelijk bericht|Origineel bericht|"
    r"Oprindelig (?:besked|meddelelse)|Ursprungligt meddelande|Originalmeddelande|"
    r"Opprinnelig melding|Wiadomość oryginalna|Oryginalna wiadomość|Alkuperäinen viesti|"
    r"Původní zpráva|Исходное сообщение|Forwarded message|Weitergeleitete Nachricht|"
    r"Message transféré|Mensaje reenviado|Messaggio inoltrato|Doorgestuurd bericht|"
    r"Videresendt meddelelse|Vidarebefordrat meddelande|Wiadomość przekazana)\s*[-_=*]{0,}\s*$",
    re.IGNORECASE,
)
_FORWARD_LINE = re.compile(r"^\s*(?:Begin forwarded message|Anfang der weitergeleiteten)", re.I)
_FIELD_FROM = re.compile(
    r"^\s*>?\s*\*?(?:From|Von|De|Da|Van|Från|Fra|Od|Lähettäjä|От|Від|Feladó|Kimden|Frá|"
    r"寄件者|发件人|差出人|보낸 사람)\s*\*?\s*[:：]",
    re.IGNORECASE,
)
_FIELD_OTHER = re.compile(
    r"^\s*>?\s*\*?(?:Sent|Date|To|Subject|Cc|Gesendet|Datum|An|Betreff|Envoyé|À|Objet|"
    r"Enviado|Enviada|Fecha|Para|Asunto|Inviato|Data|A|Oggetto|Verzonden|Aan|Onderwerp|"
    r"Skickat|Till|Ämne|Sendt|Til|Emne|Wysłano|Wysłane|Do|Temat|Odesláno|Komu|Předmět|"
    r"Lähetetty|Vastaanottaja|Aihe|Отправлено|Кому|Тема|Assunto|Dátum|Tárgy|Tarih|Konu|"
    r"Kopie|Kopi|Kopia|Copie|CC|Gönderildi|Gönderilme Tarihi|Kime|Bilgi|Elküldve|Címzett|"
    r"Дата|Копия|Датум|Послато)\s*\*?\s*[:：]",
    re.IGNORECASE,
)
_UNDERLINE = re.compile(r"^\s*_{8,}\s*$")
_LOTUS = re.compile(r"^\s*(?:Sent by|Please respond to)\s*:?", re.IGNORECASE)
# New text sits at the top; a history marker further down than this is not worth the scan.
_MAX_SCAN_LINES = 400
_EMAIL_IN_LINE = re.compile(r"\S+@\S+")
_ATTRIBUTION_HINT = re.compile(r"@|\d{1,2}:\d{2}")
_WRAPPED_ATTRIBUTION = re.compile(r"[@<]|\d{1,2}[:.]\d{2}|\d{4}")
_HTML_QUOTE = re.compile(
    r"<blockquote|gmail_quote|divRplyFwdMsg|moz-cite-prefix|yahoo_quoted|OLK_SRC_BODY_SECTION", re.I
)


def _is_outlook_block(lines: list[str], i: int) -> bool:
    """A From-like field followed closely by two more header fields (any supported language)."""
    if not _FIELD_FROM.match(lines[i]):
        return False
    fields = sum(1 for line in lines[i + 1 : i + 6] if _FIELD_OTHER.match(line))
    return fields >= 2


def _is_header_at(lines: list[str], i: int) -> bool:
    line = lines[i]
    stripped = line.strip()
    if not stripped:
        return False
    if _SEPARATOR.match(line) or _FORWARD_LINE.match(line) or _is_outlook_block(lines, i):
        return True
    if _UNDERLINE.match(line):
        return any(_FIELD_FROM.match(x) for x in lines[i + 1 : i + 3])
    if _CJK_HEADER.search(stripped):
        return True
    if ":" not in stripped and not any(":" in x for x in lines[i + 1 : i + 3]):
        return False  # every remaining form ends with a colon: skip the costly joins
    # A header may wrap over up to three lines ("On Mon, ... Bob <b@x>\nwrote:").
    for span in (1, 2, 3):
        window = lines[i : i + span]
        if len(window) < span or (span > 1 and not all(x.strip() for x in window)):
            break
        joined = " ".join(x.strip() for x in window)
        if len(joined) > 400:
            break
        if span > 1 and not (_LEAD_WORD.match(joined) or re.search(r"\d|@", window[0])):
            continue
        if _ENDS_WITH_VERB.search(joined):
            return True
        if _LEAD_WORD.match(joined) and joined.endswith(":") and _VERB_ANYWHERE.search(joined):
            return True
    return False


def _lotus_start(lines: list[str], i: int) -> int | None:
    """Lotus Notes puts 'Name <addr>' then 'Sent by:'/'Please respond to' above the history."""
    if not _LOTUS.match(lines[i]):
        return None
    for j in range(i - 1, max(-1, i - 4), -1):
        if _EMAIL_IN_LINE.search(lines[j]):
            return j
    return i


def _attribution_above(lines: list[str], i: int) -> int:
    """An attribution line right above a '>' block is part of the history, in any language:
    it names the sender ('@') or a time, and ends with a colon ("пн, 15 июл. 2024 г. в 09:58,
    Max <m@x>:", "2024年7月15日(月) 9:58 Max <m@x>:")."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 1 or i - j > 2:
        return i  # nothing above, or the only line: keep it as the sender's words
    above = lines[j].strip()
    if not (above.endswith((":", "：")) and len(above) < 200 and _ATTRIBUTION_HINT.search(above)):
        return i
    # Clients wrap a long attribution over up to three lines; each of them names an address,
    # a bracket or a number, which a sentence of the sender's rarely does.
    while j > 1 and i - j < 4 and lines[j - 1].strip() and _WRAPPED_ATTRIBUTION.search(lines[j - 1]):
        j -= 1
    return j


def _split_at_history(lines: list[str]) -> int:
    """Index of the first line of quoted history, or len(lines) when there is none."""
    for i, line in enumerate(lines[:_MAX_SCAN_LINES]):
        if line.lstrip().startswith(">"):
            return _attribution_above(lines, i)
        if _is_header_at(lines, i):
            return i
        lotus = _lotus_start(lines, i)
        if lotus is not None:
            return lotus
    return len(lines)


def _tidy(lines: list[str]) -> str:
    text = "\n".join(line.rstrip() for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def split_new_text(plain: str) -> tuple[str, bool]:
    """The sender's new words, and whether quoted history (a quote header or '>' lines) was found."""
    lines = plain.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut = _split_at_history(lines)
    top = strip_signature(_tidy(lines[:cut]))
    history = cut < len(lines)
    if top or not history:
        return top, history
    # Bottom-posting (Thunderbird, mailing-list style): the new words sit below '>' quotes.
    rest = [line for line in lines[cut:] if not line.lstrip().startswith(">")]
    rest = [line for i, line in enumerate(rest) if not _is_header_at(rest, i)]
    return strip_signature(_tidy(rest)), history


def new_text(plain: str) -> str:
    """The sender's new words in a plain-text body: history and signature removed."""
    return split_new_text(plain)[0]


def new_text_with_history(body: Body) -> tuple[str, bool]:
    """New text from a parsed body, and whether the sender quoted earlier messages below it.

    Quoting is a human habit: out-of-office and other responders answer without the history.
    For HTML-only mail, a client quote element (Gmail's gmail_quote, a blockquote, Outlook's
    reply separator) counts as history too.
    """
    if body.plain.strip():
        return split_new_text(body.plain)
    if body.html.strip():
        rendered = html_to_text(body.html, cut_quotes=True)
        text, history = split_new_text(rendered)
        return text, history or _HTML_QUOTE.search(body.html) is not None
    return "", False


def new_text_from_body(body: Body) -> str:
    """New text from a parsed body; HTML-only mail loses its client quote markup first."""
    return new_text_with_history(body)[0]
