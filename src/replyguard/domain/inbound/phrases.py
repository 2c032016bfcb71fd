"""Multilingual phrase families for automatic replies, compiled once at import.

Each family is a list of (language, regex source). They are only ever searched in the
sender's NEW text or subject, and a body phrase is only supporting evidence: on its own it
never makes a message automatic (a person may write "I was out of office last week").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Family = tuple[tuple[str, re.Pattern[str]], ...]


def compile_lower(src: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern for LOWER-CASED text. Searching `text.lower()` with a case-sensitive pattern
    is about five times faster than re.IGNORECASE (which disables the literal-prefix search),
    so every phrase family is written in lower case and callers lower the text once."""
    if any(ch.isupper() for ch in re.sub(r"\\.|\(\?P[<=]", "", src)):
        raise ValueError(f"phrase pattern must be lower case: {src[:60]!r}")
    return re.compile(src, flags)


def fold_case(text: str) -> str:
    """`text` lower-cased for the lower-case patterns. Turkish capital dotted I lowers to "i"
    plus a combining dot, which no pattern would match: it is folded to a plain "i"."""
    return text.lower().replace("i\u0307", "i")


def _family(entries: Sequence[tuple[str, str]]) -> Family:
    return tuple((lang, compile_lower(src)) for lang, src in entries)


def first_match(family: Family, text: str) -> str | None:
    """The language tag of the first pattern of `family` found in `text`, or None."""
    lowered = fold_case(text)
    for lang, pattern in family:
        if pattern.search(lowered):
            return lang
    return None


#: Subjects that only automatic replies carry (anchored prefixes and a few fixed suffixes).
AUTO_SUBJECT = _family(
    [
        (
            "en",
            r"^\s*(?:auto(?:matic)?[ -]?(?:reply|response|respons)|autoreply|autoresponse|"
            r"out of (?:the )?office(?: autoreply| alert| reply)?)\s*:",
        ),
        ("en", r"^\s*(?:autoresponse|auto-?reply|out of office autoreply)\s+-"),
        (
            "en",
            r"^\s*(?:out of (?:the )?office(?: reply| autoreply| alert)?|auto response|"
            r"automatic reply|autoreply)\s*$",
        ),
        ("en", r"\bis out of the office\b"),
        ("en", r"^\s*\[?(?:auto[ -]?generated|auto[ -]?reply|autoresponse)\]"),
        (
            "de",
            r"^\s*(?:automatische antwort|abwesenheitsnotiz|autom\. antwort)\b|"
            r"^\s*abwesenheit\s*:",
        ),
        ("fr", r"^\s*(?:réponse automatique|reponse automatique|absence)\s*:"),
        (
            "es",
            r"^\s*(?:respuesta automática|respuesta automatica)\b|"
            r"^\s*fuera de (?:la )?oficina\s*(?::|$)",
        ),
        (
            "it",
            r"^\s*(?:risposta automatica|risposta non al computer)\b|"
            r"^\s*(?:fuori sede|fuori ufficio)\s*(?::|$)",
        ),
        ("pt", r"^\s*(?:resposta automática|resposta automatica|ausência|ausencia)\s*:"),
        ("nl", r"^\s*(?:automatisch antwoord|afwezig(?:heid)?)\s*:"),
        ("sv", r"^\s*(?:automatiskt svar|autosvar)\b|^\s*(?:frånvaro|frånvarande)\s*(?::|$)"),
        ("da", r"^\s*(?:automatisk svar|autosvar|fraværende|fravær)\s*:"),
        ("pl", r"^\s*\[?(?:automatyczna odpowied[źz]|odpowied[źz] automatyczna)\b"),
        ("fi", r"^\s*(?:automaattinen vastaus|poissa)\s*:"),
        ("nb", r"^\s*(?:automatisk svar|fravær)\s*:"),
        ("cs", r"^\s*(?:automatická odpověď|automaticka odpoved|nepřítomnost)\s*:"),
        ("tr", r"^\s*(?:otomatik (?:yanıt|cevap|yanit)|ofis dışında)\s*:"),
        ("ru", r"^\s*(?:автоматический ответ|автоответ|нет на месте)\s*:"),
        ("ja", r"^\s*(?:自動応答|自動返信|不在)"),
        ("zh", r"^\s*(?:自动回复|自動回覆)"),
    ]
)

#: A responder's suffix after the original subject ("Re: hello (Automatic Response)", AOL).
AUTO_SUBJECT_SUFFIX = _family([("en", r"\((?:automatic|auto) (?:response|reply)\)\s*$")])

#: Subjects that suggest an automatic message but that a person could also write.
WEAK_SUBJECT = _family(
    [
        ("en", r"\b(?:vacation|out of (?:the )?office|on holiday|away from (?:the )?office)\b"),
        ("en", r"^\s*thank(?:s| you) for (?:your|the) (?:e-?mail|message|enquiry|inquiry)"),
        ("de", r"\b(?:urlaub|abwesend|nicht im büro)\b"),
        ("fr", r"\b(?:absent|absente|en congés?|vacances)\b"),
        ("es", r"\b(?:vacaciones|ausente)\b"),
        ("it", r"\b(?:ferie|assente|in vacanza)\b"),
        ("pt", r"\b(?:férias|ausente)\b"),
        ("nl", r"\b(?:vakantie|afwezig)\b"),
        ("sv", r"\b(?:semester|ledig)\b"),
        ("da", r"\b(?:ferie|fraværende)\b"),
        ("pl", r"\b(?:urlop|nieobecn\w*)\b"),
    ]
)

#: The person is away (out of office) — searched in new text and subject.
OOO = _family(
    [
        (
            "en",
            r"\bout of (?:the )?office\b|\baway from (?:the |my )?(?:office|desk|e-?mail)\b|"
            r"\b(?:on|in) (?:annual |parental |maternity |paternity |sick |study )?leave\b|"
            r"\bon (?:vacation|holiday|holidays|a business trip)\b|\b(?:i am|i'm|i will be|"
            r"i'll be) (?:currently )?(?:away|travell?ing|out)\b|\bsabbatical\b|"
            r"\b(?:parental|maternity|paternity|medical) leave\b|\blimited access to (?:my )?"
            r"e-?mail\b|\bupon my return\b|\bis out of the office\b|\bvacation\b",
        ),
        (
            "de",
            r"\bnicht im büro\b|\babwesend\b|\bim urlaub\b|\burlaub\b|\baußer haus\b|"
            r"\bnicht erreichbar\b|\bnach meiner rückkehr\b|\bdienstreise\b|\belternzeit\b",
        ),
        (
            "fr",
            r"\babsente?\b|\ben congés?\b|\ben vacances\b|\bhors du bureau\b|"
            r"\bde retour le\b|\bà mon retour\b",
        ),
        (
            "es",
            r"\bfuera de (?:la )?oficina\b|\bde vacaciones\b|\bausente\b|\ba mi regreso\b|"
            r"\bfuera de la ciudad\b",
        ),
        (
            "it",
            r"\bfuori (?:sede|ufficio)\b|\bin ferie\b|\bassente\b|\bin vacanza\b|"
            r"\bal mio rientro\b|\brientrerò\b",
        ),
        (
            "pt",
            r"\bausente\b|\bde férias\b|\bfora do escritório\b|\bno meu regresso\b|"
            r"\bfora do escritorio\b",
        ),
        (
            "nl",
            r"\bafwezig\b|\bmet vakantie\b|\bniet op kantoor\b|\bbuiten kantoor\b|"
            r"\bweer bereikbaar\b",
        ),
        (
            "sv",
            r"\bpå semester\b|\bledig\b|\binte på kontoret\b|\bfrånvarande\b|"
            r"\btjänstledig\b|\bföräldraledig\b",
        ),
        (
            "da",
            r"\bpå ferie\b|\bfraværende\b|\bikke på kontoret\b|\bikke på kontoret\b|"
            r"\bpå barsel\b",
        ),
        ("pl", r"\bna urlopie\b|\bpoza biurem\b|\bnieobecn\w*\b|\bna zwolnieniu\b"),
        ("fi", r"\blomalla\b|\bpoissa toimistolta\b"),
        ("nb", r"\bhar ferie\b|\bpå ferie\b|\bikke på kontoret\b"),
        ("cs", r"\bna dovolené\b|\bmimo kancelář\b|\bnepřítomn\w*"),
        ("tr", r"\bizindeyim\b|\btatildeyim\b|\bofis dışında\w*"),
        ("ru", r"\bв отпуске\b|\bвне офиса\b|\bв командировке\b"),
        ("ja", r"休暇|不在|出張"),
        ("zh", r"休假|不在办公室"),
    ]
)

#: Wording that only an automatic message uses; supporting evidence for a weak header.
AUTO_BODY = _family(
    [
        (
            "en",
            r"\b(?:this is an? )?(?:automatic|automated|auto-generated) (?:reply|response|"
            r"message|e-?mail|notification)\b|\bauto-?reply\b|\bi will (?:reply|respond|get back)"
            r"[^.\n]{0,40}\b(?:as soon as possible|upon my return|when i (?:am )?(?:back|return))"
            r"|\bthank you for (?:your|you) (?:e-?mail|message)\b[^.\n]{0,80}\n?[^.\n]{0,80}"
            r"\b(?:as soon as possible|shortly|within)\b|\bdo not reply to this\b",
        ),
        (
            "de",
            r"\bautomatische (?:antwort|nachricht|e-mail)\b|\bdiese nachricht wurde "
            r"automatisch\b",
        ),
        ("fr", r"\b(?:réponse|message) automatique\b"),
        ("es", r"\b(?:respuesta|mensaje) automátic[oa]\b"),
        ("it", r"\b(?:risposta|messaggio) automatic[oa]\b"),
        ("pt", r"\b(?:resposta|mensagem) automática\b"),
        ("nl", r"\bautomatisch (?:antwoord|bericht|gegenereerd)\b"),
        ("sv", r"\bautomatiskt (?:svar|meddelande)\b"),
        ("da", r"\bautomatisk (?:svar|besked|meddelelse)\b"),
        ("pl", r"\bautomatyczn\w+ (?:odpowied\w+|wiadomo\w+)\b"),
    ]
)

#: The address is abandoned: "no longer with the company", "mailbox not monitored".
LEFT_COMPANY = _family(
    [
        (
            "en",
            r"\bno longer (?:with|employed|working|work(?:s)? (?:at|for)|at|part of|in use|active|monitored|"
            r"checked|valid)\b|\b(?:has|have) left (?:the|our) (?:company|firm|organi[sz]ation|"
            r"team)\b|\b(?:mailbox|inbox|address|account) (?:is )?(?:not|no longer) "
            r"(?:monitored|in use|checked|active)\b|\bmy (?:new )?e-?mail address (?:has )?"
            r"changed\b|\bplease (?:update|use) my new (?:e-?mail )?address\b",
        ),
        (
            "de",
            r"\bnicht mehr (?:im unternehmen|bei uns|für uns tätig|tätig|erreichbar unter|"
            r"in betrieb|aktiv)\b|\bhat das unternehmen verlassen\b|\bzukünftig\b|"
            r"\bneue (?:e-mail-)?adresse\b|\bpostfach wird nicht mehr\b",
        ),
        (
            "fr",
            r"\bne fait plus partie\b|\ba quitté (?:la société|l'entreprise)\b|"
            r"\bn'est plus (?:consultée|active|utilisée)\b|\bnouvelle adresse\b",
        ),
        (
            "es",
            r"\bya no (?:trabaja|forma parte|está en uso|se revisa)\b|"
            r"\bha dejado la empresa\b|\bnueva dirección\b",
        ),
        (
            "it",
            r"\bnon (?:lavora|fa) più\b|\bnon è più (?:attiva|in uso|monitorata)\b|"
            r"\bha lasciato l'azienda\b|\bnuovo indirizzo\b",
        ),
        (
            "pt",
            r"\bjá não (?:trabalha|faz parte)\b|\bnão (?:trabalha|faz) mais\b|"
            r"\bnovo endereço\b",
        ),
        (
            "nl",
            r"\bniet meer (?:werkzaam|in dienst|in gebruik|actief)\b|"
            r"\bheeft het bedrijf verlaten\b|\bnieuwe e-?mailadres\b",
        ),
        (
            "sv",
            r"\binte längre (?:anställd|verksam|i bruk|aktiv)\b|\bhar slutat\b|"
            r"\bny e-?postadress\b",
        ),
        (
            "da",
            r"\bikke længere (?:ansat|aktiv|i brug)\b|\bikke lenger (?:ansatt|aktiv|i bruk)\b|"
            r"\bhar fratrådt\b|\bhar sluttet\b",
        ),
        (
            "pl",
            r"\bnie pracuje już\b|\bjuż nie pracuje\b|\bnie jest już (?:aktywn|używan)\w*\b|"
            r"\bnowy adres\b",
        ),
    ]
)

#: Challenge/response filters and sender-verification robots.
CHALLENGE = _family(
    [
        (
            "en",
            r"\b(?:guest list|approved senders?|sender verification|verify (?:that )?you"
            r"(?:r address)? (?:are|is)|has been waitlisted|is protected by|requires confirmation|"
            r"click (?:on )?(?:the|this) (?:following )?link[^.\n]{0,60}(?:verify|deliver|"
            r"added|confirm))\b",
        ),
    ]
)
