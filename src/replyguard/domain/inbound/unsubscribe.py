"""Unsubscribe requests: words in the sender's new text or subject, and ARF opt-outs.

Contract: `detect_unsubscribe` looks only at the NEW text (never the quoted footer of our own
email, which may well say "unsubscribe") and the subject. ARF reports (RFC 5965) with
`Feedback-Type: opt-out` or `abuse` count too: a complaint must stop all mail exactly like an
unsubscribe. Taking a human reply for an unsubscribe is the safe error: both stop the mail.
"""

from __future__ import annotations

import re
from email.message import Message

from replyguard.domain.inbound.parse import content_type, decode_part, header
from replyguard.domain.inbound.phrases import compile_lower

_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (lang, compile_lower(src, re.MULTILINE))
    for lang, src in (
        (
            "en",
            r"\bunsubscribe\b|\bremove me\b|\btake me off\b|\bopt(?:-| )?out\b|"
            r"\bstop (?:e-?mailing|emails?|contacting|sending|writing|messaging)\b|"
            r"\b(?:do not|don't|dont|please never) (?:e-?mail|contact|write to|message) me\b|"
            r"\bno (?:more|further) e-?mails?\b|\bremove (?:my (?:e-?mail|address)|us) from\b|"
            r"\bnot interested[,.;! ]+(?:please )?(?:stop|remove)\b|^\s*stop\s*[.!]*\s*$",
        ),
        (
            "de",
            r"\babmelden\b|\baustragen\b|\bverteiler\b.{0,40}\b(?:entfernen|streichen|"
            r"löschen|nehmen)\b|\bentfernen sie mich\b|\bkeine (?:weiteren )?(?:e-?mails|"
            r"nachrichten|werbung)\b|\bnicht mehr (?:kontaktieren|anschreiben)\b|"
            r"\babbestellen\b|\bwiderspreche\b|\b(?:aus|von) (?:ihrem|ihrer|eurem|eurer|dem|der|diesem|"
            r"dieser) (?:e-?mail-?)?(?:verteiler|liste|mailingliste|newsletter)\b",
        ),
        (
            "fr",
            r"\bdésabonner\b|\bdésinscri\w*|\bretirez[- ]moi\b|\bne plus recevoir\b|"
            r"\bne (?:me )?(?:contactez|écrivez) plus\b|\bsupprimez[- ]moi\b|"
            r"\bne plus (?:me |m['’])?(?:écrire|contacter|envoyer|solliciter|relancer)\b",
        ),
        (
            "es",
            r"\bdar(?:me)? de baja\b|\bdarse de baja\b|\bno me (?:envíe|envíen|escriba|"
            r"contacte)n? más\b|\belimín(?:e|en)me\b|\beliminarme de\b|\bquitarme de\b|"
            r"\bdej(?:en|e|ad|a) de (?:enviar|escribir|mandar|contactar)\w*",
        ),
        (
            "it",
            r"\bdisiscriv\w*|\bcancellatemi\b|\brimuovetemi\b|\brimuovermi\b|"
            r"\bnon (?:voglio|desidero) più ricevere\b|\bnon (?:contattatemi|scrivetemi) più\b|"
            r"\bsmettete di (?:scrivermi|inviarmi|contattarmi)\b",
        ),
        (
            "pt",
            r"\bdescadastr\w*|\bcancelar (?:a )?(?:minha )?inscrição\b|\bremover-me\b|"
            r"\bnão (?:quero|desejo) (?:mais )?receber\b|\bremova-me\b|"
            r"\bparem de (?:enviar|mandar|me enviar)\b",
        ),
        (
            "nl",
            r"\bafmelden\b|\buitschrijven\b|\bverwijder (?:mij|me)\b|\bgeen (?:e-?mails|"
            r"berichten|mails) meer\b",
        ),
        (
            "sv",
            r"\bavregistrera\b|\bavsluta (?:min )?prenumeration\b|\bta bort mig\b|"
            r"\bsluta (?:mejla|maila|skicka)\b|\bavanmäl\w*",
        ),
        (
            "da",
            r"\bafmeld\w*|\bavmeld\w*|\bfjern (?:mig|meg)\b|\bstop med at sende\b|"
            r"\bslutt å sende\b",
        ),
        (
            "pl",
            r"\bwypisz\w*|\busuń (?:mnie|mój adres)\b|\bproszę nie (?:wysyłać|przysyłać)\b|"
            r"\bwypisać\b",
        ),
    )
)
_NEWSLETTER = re.compile(r"newsletter|nyhetsbrev|nieuwsbrief|infolettre|boletín|bulletin", re.I)
ARF_COMPLAINT_TYPES = frozenset({"opt-out", "optout", "abuse", "complaint"})
_FEEDBACK_TYPE = re.compile(r"^Feedback-Type\s*:\s*([\w-]+)", re.IGNORECASE | re.MULTILINE)


def arf_feedback_type(msg: Message) -> str | None:
    """The Feedback-Type of an RFC 5965 report, or None when the message is not one."""
    ctype = content_type(msg)
    if ctype != "multipart/report":
        return None
    try:
        report_type = msg.get_param("report-type") or ""
    except Exception:
        report_type = ""
    if str(report_type).lower() != "feedback-report":
        return None
    for part in msg.walk():
        if content_type(part) == "message/feedback-report":
            payload = part.get_payload()
            blocks = payload if isinstance(payload, list) else []
            for block in blocks:
                if isinstance(block, Message) and header(block, "feedback-type"):
                    return header(block, "feedback-type").lower()
            match = _FEEDBACK_TYPE.search(decode_part(part) if not blocks else "")
            return match.group(1).lower() if match else "abuse"
    return "abuse"


def detect_unsubscribe(msg: Message, subject: str, new_text: str) -> tuple[str, ...]:
    """Evidence names when this message asks to stop mail; () otherwise."""
    feedback = arf_feedback_type(msg)
    if feedback is not None:
        return (f"arf:{feedback}",) if feedback in ARF_COMPLAINT_TYPES else ()
    evidence = []
    subject = subject.lower()
    for lang, pattern in _WORDS:
        if pattern.search(subject):
            evidence.append(f"subject:{lang}:unsubscribe")
            break
    # Long new text that merely mentions a word is a conversation, not a request; a request
    # is short or says it early.
    head = new_text[:600].lower()
    for lang, pattern in _WORDS:
        found = pattern.search(head)
        if found:
            if _asks_to_keep_talking(head, found.start()):
                return ()  # a conversation: the caller answers "human reply"
            evidence.append(f"body:{lang}:unsubscribe")
            break
    return tuple(evidence)


def _asks_to_keep_talking(text: str, at: int) -> bool:
    """'Unsubscribe me from the newsletter - but can you call me Friday?': the request is about
    a newsletter, and another sentence asks us something. That is a conversation, for a person
    to handle; the caller treats it as a human reply (which stops the sequence too)."""
    start = max(text.rfind(sep, 0, at) for sep in ".!?\n") + 1
    ends = [i for sep in ".!?\n" if (i := text.find(sep, at)) != -1]
    sentence = text[start : min(ends) if ends else len(text)]
    if not _NEWSLETTER.search(sentence):
        return False
    rest = text[:start] + text[start + len(sentence) :]
    return "?" in rest or "？" in rest
