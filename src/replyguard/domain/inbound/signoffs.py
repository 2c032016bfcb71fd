"""Signatures, mobile footers and sign-offs at the end of a sender's new text.

Contract: `strip_signature(text)` only ever removes a tail of `text`, and never everything:
if the whole text would go (a reply that is just "Thanks!"), it is returned unchanged.
"""

from __future__ import annotations

import re

# "-- " is the RFC 3676 signature separator; many clients strip the trailing space.
_SIG_DASHES = re.compile(r"^(?:-- ?|--|__)$")
_MOBILE_FOOTER = re.compile(
    r"^\s*(?:Sent from (?:my )?|Sent via |Sent with |Get Outlook for |Envoyé de (?:mon|ma) |"
    r"Envoyé depuis |Von meinem .{1,40} gesendet|Gesendet von (?:meinem )?|"
    r"Gesendet mit |Verstuurd vanaf |Verzonden vanaf |Enviado desde (?:mi )?|"
    r"Enviado de (?:meu|mi|o meu) |Enviado do (?:meu )?|Inviato da(?:l mio)? |"
    r"Skickat från (?:min )?|Sendt fra (?:min )?|Lähetetty |Wysłane z |Wysłano z |"
    r"Отправлено с |Надіслано з |iPhone'umdan gönderildi)",
    re.IGNORECASE,
)
_VALEDICTION = re.compile(
    r"^\s*(?:(?:best|kind|warm|warmest|many thanks and|with kind|with best)?\s*regards|best|"
    r"cheers|thanks|thank you|many thanks|thanks again|sincerely|yours sincerely|"
    r"yours faithfully|yours truly|yours|br|kr|all the best|best wishes|talk soon|"
    r"mit freundlichen grüßen|mit freundlichen gruessen|freundliche grüße|viele grüße|"
    r"beste grüße|liebe grüße|herzliche grüße|schöne grüße|grüße|gruß|lg|vg|mfg|"
    r"cordialement|bien cordialement|bien à vous|salutations|sincères salutations|"
    r"bonne journée|merci|saludos|un saludo|saludos cordiales|atentamente|un abrazo|gracias|"
    r"cordiali saluti|distinti saluti|saluti|un saluto|buona giornata|grazie|"
    r"atenciosamente|cumprimentos|melhores cumprimentos|abraço|abraços|obrigado|obrigada|"
    r"met vriendelijke groet(?:en)?|vriendelijke groet(?:en)?|groeten|groet|mvg|"
    r"med vänliga hälsningar|vänliga hälsningar|hälsningar|mvh|tack|"
    r"med venlig hilsen|venlig hilsen|hilsen|med vennlig hilsen|vennlig hilsen|"
    r"pozdrawiam|z poważaniem|pozdrowienia|serdecznie pozdrawiam|dziękuję|"
    r"ystävällisin terveisin|terveisin|s pozdravem|с уважением)\s*[,.!]?\s*$",
    re.IGNORECASE,
)
_NAME_LINE = re.compile(r"^\s*[/\-–—~]?\s*[A-ZÀ-ÖØ-Þ][\w.'’-]*(?:\s+[A-ZÀ-ÖØ-Þ][\w.'’-]*){0,2}\s*$")


def _cut_at(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    for i, line in enumerate(lines):
        if i > 0 and pattern.match(line.rstrip("\n")):
            return lines[:i]
    return lines


def _cut_valediction(lines: list[str]) -> list[str]:
    """Drop a closing phrase and the few short lines (name, title) that follow it."""
    for i in range(len(lines) - 1, 0, -1):
        if _VALEDICTION.match(lines[i]):
            tail = [x for x in lines[i + 1 :] if x.strip()]
            if len(tail) <= 4 and all(len(x) < 70 for x in tail):
                return lines[:i]
            return lines
    return lines


def _cut_trailing_name(lines: list[str]) -> list[str]:
    """Drop a lone name line ("Marco", "/Erik") after a paragraph that ended a sentence."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if len(lines) < 3 or lines[-2].strip() or not _NAME_LINE.match(lines[-1]):
        return lines
    before = [x for x in lines[:-1] if x.strip()]
    if before and re.search(r"[.!?:)]\s*$", before[-1]):
        return lines[:-1]
    return lines


def strip_signature(text: str) -> str:
    """Remove a trailing signature block, mobile footer or sign-off; never the whole text."""
    lines = text.split("\n")
    cut = _cut_at(lines, _SIG_DASHES)
    cut = _cut_at(cut, _MOBILE_FOOTER)
    cut = _cut_valediction(cut)
    cut = _cut_trailing_name(cut)
    result = re.sub(r"\n{3,}", "\n\n", "\n".join(cut)).strip()
    if result:
        return result
    # A mobile footer alone or a one-word reply: keep the words, minus an obvious footer.
    fallback = [x for x in lines if x.strip() and not _MOBILE_FOOTER.match(x)]
    return "\n".join(fallback).strip()
