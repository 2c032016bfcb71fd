# ruff: noqa: E501  (pattern tables read best one family per line)
"""Why a delivery failed, in sisimai's reason taxonomy, from the facts of one failed recipient.

Contract: `reason_for(facts)` returns `(reason, why)`: a reason name of `bounce_policy.REASONS`
(or "delivered"/"vacation") and the phrase or code that decided it, for the evidence. It never
raises. The order of the checks follows sisimai (https://libsisimai.org, BSD-2-Clause): first the
families whose wording is specific (a full mailbox, an SPF failure, an unknown user at RCPT),
each also accepted from its status code; then the status code's own meaning; then the
families whose wording is generic (policy, system errors, expiry); "onhold" when there was a
diagnostic that named nothing, "undefined" when there was none.

The wording lists are ours, written for the phrases real MTAs send (many of them the same
phrases sisimai's reason modules list); several languages are covered because bounce prose is
localised by the receiving MTA.

Facts that change a reason:
- the SMTP command the failure answered: "user unknown" after DATA is a content filter, not a
  missing mailbox; a rejection at MAIL FROM is about our sender address;
- the status code, only when it is a real one (never read out of an IP address);
- the SMTP reply code (521/556 mean the host accepts no mail at all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from replyguard.domain.inbound.phrases import compile_lower


@dataclass(frozen=True, slots=True)
class Facts:
    """What one failed recipient's report says, normalised by bounce.py."""

    status: str | None = None  # an enhanced status code such as 5.1.1
    reply_code: str | None = None  # the SMTP reply code such as 550
    action: str | None = None  # failed | delayed | delivered | ...
    command: str | None = None  # RCPT | MAIL | DATA | HELO | CONN | None (unknown)
    diagnostic: str = ""  # the diagnostic text, lower-cased


def _p(*alternatives: str) -> re.Pattern[str]:
    return compile_lower("|".join(f"(?:{a})" for a in alternatives))


# Each family is a list of regex alternatives, searched in lower-cased text.
WORDING: dict[str, re.Pattern[str]] = {
    "mailboxfull": _p(
        r"mailbox (?:is )?full|mail ?box (?:\S+ )?(?:is )?(?:full|over (?:its )?quota)|full mailbox",
        r"over ?quota|quota (?:exceeded|violation|full)|exceeded (?:the )?(?:storage|quota)|"
        r"(?:disk|mailbox|maildir|account is \S+) quota|storage (?:allocation|quota)",
        r"insufficient (?:disk )?(?:space|storage)|not (?:sufficient|enough) (?:disk )?space|"
        r"no space left on device|out of storage space|space has been used up",
        r"mailbox (?:size limit|exceeds allowed size|would exceed|has exceeded)|mailfolder is full",
        r"too many messages (?:on the server|in (?:the|this) mailbox)|too much mail data",
        r"postfach (?:ist )?voll|speicherplatz|boîte (?:aux lettres )?(?:du destinataire )?(?:est )?pleine|"
        r"boite du destinataire pleine|buzón (?:del destinatario )?(?:está )?lleno|casella (?:\S+ )?piena|"
        r"caixa (?:postal )?(?:está )?cheia|skrzynka (?:\S+ )?(?:jest )?pełna|ящик (?:\S+ )?переполнен|"
        r"容量(?:が|を)?(?:超|オーバー|不足|いっぱい)|(?:メールボックス|受信箱)が(?:いっぱい|満杯)",
    ),
    "mesgtoobig": _p(
        r"message (?:is )?too (?:large|big)|message size (?:exceeds|limit|too)|"
        r"exceeds? (?:the )?(?:maximum |fixed )?(?:\S+ )?message size|max(?:imum)? message size|"
        r"size (?:limit )?exceeded|message length exceeds|email (?:is )?too large|"
        r"larger than (?:the )?(?:maximum|allowed)|message too big for system",
    ),
    "exceedlimit": _p(
        r"message length exceeds administrative limit|exceeds? (?:the )?recipient'?s? (?:size )?limit"
    ),
    "suspend": _p(
        r"(?:account|mailbox|user|address) (?:has been |is (?:currently )?|was )?(?:disabled|deactivated|"
        r"suspended|discontinued|frozen|terminated|locked|inactive|archived)",
        r"(?:disabled|deactivated|inactive|suspended|archived) (?:account|mailbox|user|recipient)",
        r"email account that you tried to reach is (?:disabled|inactive)|user suspended|"
        r"recipient suspend the service|temporarily inactive|has been suspended|is currently suspended",
    ),
    "hasmoved": _p(
        r"has moved|address (?:has )?changed|no longer (?:at|with) this address|mailbox has moved"
    ),
    "norelaying": _p(
        r"relay(?:ing)? (?:access )?(?:denied|not permitted|not allowed|prohibited)|"
        r"(?:not|unable to|we do not|does not) relay\b|no relaying|relay not permitted|"
        r"is not permitted to relay|not a gateway|relaying mail to .{1,60} is not allowed",
    ),
    "authfailure": _p(
        r"\bspf\b.{0,40}\b(?:fail|failure|violation|check)|sender policy framework|"
        r"(?:domain'?s? )?dmarc (?:policy|fail|check)|\bdkim (?:fail|check|verification|signature (?:fail|invalid))|"
        r"not (?:authorized|allowed) to send (?:mail )?(?:from|on behalf)|unauthenticated (?:email|mail)|"
        r"authentication (?:requirements|level)|per its spf record|bad spf records",
    ),
    "userunknown": _p(
        r"user (?:unknown|not found|not known|does not exist|not exist|doesn't exist|missing)|unknown user|"
        r"no such (?:user|mailbox|recipient|person|address|account)|"
        r"(?:recipient|mailbox|address|user|account) (?:address )?(?:does not|doesn't|did not) exist|"
        r"(?:invalid|unknown|bad) (?:recipient|mailbox|user|address|local[- ]?part|e-?mail address)|"
        r"recipient (?:unknown|not found|not exist|is not local|rejected: (?:unknown|invalid))|"
        r"(?:mailbox|recipient) (?:unavailable|not found|not present|invalid|unknown)|"
        r"address (?:unknown|not present in directory|does not exist|could not be found)|"
        r"not (?:a )?valid (?:user|recipient|mailbox)|is not a known user|not a local address|"
        r"no (?:account|mailbox) (?:by that name|here|found|available)|"
        r"recipient address rejected: (?:user unknown|unknown user|invalid user|userunknown|access denied)|"
        r"resolver\.adr\.recipient ?notfound|recipientnotfound|this user doesn't have a .{1,30} account|"
        r"there is no one at this address|this address no longer accepts mail|"
        r"email account that you tried to reach does not exist|not (?:in my|our) (?:validrcptto|list)|"
        r"badrcptto|bad destination mailbox|unknown or illegal alias|"
        r"existiert nicht|unbekannt|gibt es nicht|n'existe pas|inconnu|introuvable|no existe|"
        r"desconocido|non esiste|sconosciuto|não existe|desconhecido|nie istnieje|nieznany|"
        r"не существует|неизвестн|bestaat niet|onbekend|finns inte|存在しません|存在しない|見つかりません|"
        r"宛先(?:が|の)?(?:不明|誤り)|ユーザ(?:ー)?(?:が)?(?:不明|存在)|リストにありません|"
        r"not listed in (?:the )?(?:domino )?directory|not listed in public name",
    ),
    "filtered": _p(
        r"message filtered|user reject|refuses? to (?:accept|receive)|rejected due to user rules|"
        r"blocked by the recipient|only accepting mail from|recipient preferences|"
        r"restricted sms e-?mail|is not accepting any mail|account is protected|"
        r"受信拒否|拒否(?:設定|されました)",
    ),
    "requireptr": _p(
        r"reverse (?:dns|hostname|lookup)|\bptr\b|rdns|cannot find your hostname|"
        r"ip name lookup failed|cannot resolve your address|unresolvable relay host|"
        r"generic dns|hosts? with dynamic ip|dynamic ip",
    ),
    "notcompliantrfc": _p(
        r"rfc ?5322|rfc ?2822|rfc ?822|not (?:rfc[- ]?)?compliant|duplicate headers?|multiple (?:from|to|subject|date) "
    ),
    "badreputation": _p(r"(?:poor|bad|low) reputation|reputation (?:is|of)|sender score|ip reputation"),
    "contenterror": _p(
        r"header (?:error|syntax)|malformed (?:header|message|mime)|invalid (?:header|mime)|8-?bit|non-ascii|utf-?8 (?:header|string)"
    ),
    "rejected": _p(
        r"(?:sender|from|envelope sender) (?:address )?(?:rejected|refused|not allowed|blacklisted|invalid|verify failed)|"
        r"domain of sender address|sender (?:domain )?(?:must|is empty|not pre-approved|was rejected)|"
        r"invalid sender|sender (?:domain )?(?:does not|doesn't) exist|unroutable sender|"
        r"null sender|empty envelope sender|returned mail not accepted|bogus mail from|"
        r"mail from not owned|not (?:allowed|permitted|authorized) to post|not have permission to post|"
        r"may not have permission|members-only|non-member|moderat(?:or|ed)|closed (?:mailing )?list|"
        r"this server does not accept mail from|administrative prohibition|groups\.google\.com/support|"
        r"投稿する権限",
    ),
    "hostunknown": _p(
        r"host (?:unknown|not found|or domain name not found)|unknown host|"
        r"(?:domain|host) (?:not found|does not exist|is not reachable|name not found|unreachable)|"
        r"no such domain|name or service not known|nxdomain|unrouteable (?:mail )?domain|"
        r"unknown domain|recipient domain must exist|mail domain .{0,30} is unknown|"
        r"couldn't find any host named|domain must exist|mx records point to non-?existent hosts|unrouteable address|unroutable address|host \S+ not found|the account or domain may not exist|"
        r"\b553 \S+ does not exist|illegal host/domain",
    ),
    "spamdetected": _p(
        r"\bspam\b|unsolicited|junk mail|bulk (?:e-?mail|mail)|content filter|"
        r"message content rejected|rejected because of unacceptable content|spamassassin|"
        r"suspicious|spam-like|uribl|surbl|looks like spam",
    ),
    "speeding": _p(
        r"rate limit|sending (?:too )?fast|too fast|exceeded (?:the )?(?:sending|message) rate|ratelimit"
    ),
    "toomanyconn": _p(
        r"too many (?:connections|concurrent|sessions|simultaneous|recipients|messages|errors)|"
        r"connection limit|max(?:imum)? (?:number of )?connections",
    ),
    "blocked": _p(
        r"block(?:ed|list|ing)|blacklist|black list|denylist|\brbl\b|\bdnsbl\b|spamhaus|spamcop|barracuda|"
        r"(?<!not )listed (?:at|in|on|as)|banned sending ip|client host .{0,60}rejected|"
        r"not (?:currently )?accepting (?:mail|connections) from (?:your )?ip|refused to talk|"
        r"access denied.{0,60}\bip\b|sender ip address rejected|your ip|go away|helo command rejected|"
        r"connection (?:refused|dropped|reset)|service not available, closing transmission channel|"
        r"smtp error from remote mail server after initial connection|bad sender ip",
    ),
}

# Second pass: generic wording, read only when the first pass and the status found nothing.
WORDING_GENERIC: dict[str, re.Pattern[str]] = {
    "virusdetected": _p(r"virus|malware|infected|executable files? (?:are|is) not allowed"),
    "policyviolation": _p(
        r"policy|prohibit\w*|not (?:accepting|accept) mail with|illegal attachment|attachments? (?:are )?not allowed|"
        r"organization(?:al)? (?:settings|policy)|protocol violation|members-only list",
    ),
    "systemerror": _p(
        r"system (?:error|config)|internal (?:server |system )?error|configuration error|local error|"
        r"mail loop|loops back to myself|forwarding loop broken|service currently unavailable|"
        r"temporary (?:local )?problem|transaction failed|misconfigured|error while being processed|"
        r"queue file write error|can't create user output file",
    ),
    "networkerror": _p(
        r"no route to host|host is unreachable|network (?:error|is unreachable)|routing loop|"
        r"hop count exceeded|too many hops|mail forwarding loop|name server|dns (?:error|lookup|failure)|"
        r"lookup fail",
    ),
    "systemfull": _p(
        r"system (?:storage|disk) (?:full|has been exceeded)|mail system full|insufficient system storage"
    ),
    "notaccept": _p(
        r"does not accept (?:any )?mail|null ?mx|mail receiving disabled|no mx record|accepts no mail|"
        r"host/domain does not accept mail|indicated no smtp service|no mx found",
    ),
    "expired": _p(
        r"delivery (?:time )?expired|retry (?:time(?:out)?|timeout) exceeded|giving up|gave up|"
        r"too long in (?:the )?queue|in the queue too long|message expired|queue period|"
        r"could not be delivered for (?:more than )?\d|has not been delivered|not yet been delivered|"
        r"still (?:trying|undelivered)|will (?:continue|keep) (?:trying|to retry)|delivery attempts will continue|"
        r"has been delayed|is delayed|timed? ?out|server did not respond|deferred|could not connect|"
        r"unable to connect|connection (?:lost|closed)|failed to deliver to domain",
    ),
    "failedstarttls": _p(r"starttls|\btls\b.{0,30}(?:required|fail)|requiretls"),
    "securityerror": _p(
        r"authentication (?:required|failure|credentials)|insecure mail relay|unauthenticated senders|"
        r"verification failure|not authorized to send|encryption required",
    ),
    "suppressed": _p(r"suppression list|suppressed|on (?:the|our) suppression"),
    "mailererror": _p(r"mailer error|x-unix|procmail|command died|exit status|program failed|pipe to"),
    "syntaxerror": _p(
        r"syntax error|command unrecognized|command not recognized|unrecognized command|bad sequence of commands"
    ),
}

# The meaning of an enhanced status code alone (RFC 3463 and its registry).
_STATUS_NAMES = {
    "4.1.6": "hasmoved", "4.1.7": "rejected", "4.1.8": "rejected", "4.1.9": "systemerror",
    "4.2.1": "blocked", "4.2.2": "mailboxfull", "4.2.3": "exceedlimit", "4.2.4": "filtered",
    "4.3.1": "systemfull", "4.3.2": "notaccept", "4.3.3": "systemerror", "4.3.5": "systemerror",
    "4.4.1": "expired", "4.4.2": "networkerror", "4.4.3": "systemerror", "4.4.4": "networkerror",
    "4.4.5": "systemfull", "4.4.6": "networkerror", "4.4.7": "expired", "4.5.3": "systemerror",
    "4.6.0": "contenterror", "4.7.1": "blocked", "4.7.24": "authfailure", "4.7.25": "requireptr",
    "4.7.26": "authfailure",
    "5.1.0": "userunknown", "5.1.1": "userunknown", "5.1.2": "hostunknown", "5.1.3": "userunknown",
    "5.1.4": "filtered", "5.1.6": "hasmoved", "5.1.7": "rejected", "5.1.8": "rejected",
    "5.1.9": "systemerror", "5.1.10": "notaccept", "5.2.0": "filtered", "5.2.1": "filtered",
    "5.2.2": "mailboxfull", "5.2.3": "exceedlimit", "5.2.4": "filtered", "5.3.0": "systemerror",
    "5.3.1": "systemfull", "5.3.2": "notaccept", "5.3.3": "systemerror", "5.3.4": "mesgtoobig",
    "5.3.5": "systemerror", "5.4.0": "networkerror", "5.4.3": "systemerror", "5.4.4": "hostunknown",
    "5.5.2": "syntaxerror", "5.5.3": "toomanyconn", "5.5.4": "systemerror", "5.5.5": "systemerror",
    "5.5.6": "syntaxerror", "5.7.13": "suspend", "5.7.16": "mesgtoobig", "5.7.17": "hasmoved",
    "5.7.18": "hasmoved", "5.7.20": "authfailure", "5.7.21": "authfailure", "5.7.22": "authfailure",
    "5.7.23": "authfailure", "5.7.24": "authfailure", "5.7.25": "requireptr", "5.7.26": "authfailure",
    "5.7.27": "notaccept", "5.7.28": "spamdetected", "5.7.29": "authfailure", "5.7.30": "failedstarttls",
}  # fmt: skip
_SECURITY = {f"5.7.{n}" for n in range(13)} | {"5.7.14", "5.7.15", "5.7.19"}
# Reasons a status code alone decides weakly: wording may still name a better one.
_WEAK = frozenset({"", "undefined", "onhold", "systemerror", "securityerror", "expired", "networkerror",
                   "hostunknown", "userunknown"})  # fmt: skip
_BEFORE_DATA = frozenset({"CONN", "HELO", "MAIL", "RCPT"})
_ORDER = ("mailboxfull", "mesgtoobig", "exceedlimit", "suspend", "hasmoved", "norelaying", "authfailure",
          "userunknown", "filtered", "requireptr", "notcompliantrfc", "badreputation", "contenterror",
          "rejected", "hostunknown", "spamdetected", "speeding", "toomanyconn", "blocked")  # fmt: skip


def status_name(status: str | None) -> str:
    """What an enhanced status code means on its own ('' when it names nothing)."""
    if not status:
        return ""
    if status.startswith("2."):
        return "delivered"
    if status in _STATUS_NAMES:
        return _STATUS_NAMES[status]
    return "securityerror" if status in _SECURITY else ""


def _search(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.search(text)
    return found.group(0) if found else None


def _probe(reason: str, f: Facts, named: str) -> str | None:
    """sisimai's first pass: the status names this reason, or the wording does (with the
    command-dependent exceptions that keep a content filter from reading as a missing user)."""
    text = f.diagnostic
    hit = _search(WORDING[reason], text) if text else None
    if reason == "userunknown":
        if named == "userunknown":
            clash = ("blocked", "mailboxfull", "hasmoved", "rejected")
            if any(_search(WORDING[r], text) for r in clash) or _search(WORDING_GENERIC["notaccept"], text):
                return None
            return f.status
        # sisimai: wording alone means a missing user only when RCPT TO was refused; after DATA
        # the same words come from a filter. With no stage and no status we trust the words
        # (policy "missing-user-wording"); a status that names another reason wins.
        generic = ("", "notaccept", "filtered", "systemerror")
        return hit if f.command == "RCPT" or (f.command is None and named in generic) else None
    if reason == "filtered":
        if named == "filtered":
            return (
                hit
                or (_search(WORDING["userunknown"], text) if f.command == "DATA" or named else None)
                or None
            )
        if f.command in _BEFORE_DATA:
            return None
        return hit or (_search(WORDING["userunknown"], text) if f.command == "DATA" or named else None)
    if reason == "rejected" and named != "rejected":
        allowed = f.command in ("MAIL", "DATA") or named in ("", "securityerror", "systemerror", "onhold")
        return hit if allowed and not (hit and "recipient address rejected" in text) else None
    if reason == "hostunknown" and named == "hostunknown":
        return None if _search(WORDING_GENERIC["networkerror"], text) else f.status
    if reason == "spamdetected" and named != "spamdetected" and f.command in _BEFORE_DATA:
        return None
    if named == reason:
        return f.status
    return hit


def reason_for(f: Facts) -> tuple[str, str]:  # noqa: PLR0912 (one ordered list of checks)
    """(reason, why): see the module docstring for the order."""
    named = status_name(f.status)
    if named == "delivered":
        return "delivered", f.status or ""
    for reason in _ORDER:
        why = _probe(reason, f, named)
        if why:
            return reason, why
    if named in _WEAK or not named:
        for reason, pattern in WORDING_GENERIC.items():
            why = _search(pattern, f.diagnostic) if f.diagnostic else None
            if why:
                return reason, why
    if named:
        return named, f.status or ""
    status = f.status or ""
    if status[:3] in ("5.6", "4.6"):
        return "contenterror", status
    if status[:3] in ("5.7", "4.7"):
        return "securityerror", status
    if status[:3] in ("5.5", "4.5") or (f.reply_code or "").startswith("50"):
        return "syntaxerror", status or f.reply_code or ""
    if (f.action or "").startswith("delay"):
        return "expired", "action: delayed"
    if f.reply_code in ("521", "556"):
        return "notaccept", f.reply_code
    if f.command == "HELO":
        return "blocked", "rejected at HELO"
    if "vacation" in f.diagnostic or "out of office" in f.diagnostic:
        return "vacation", "vacation"
    return ("onhold", "no reason named") if f.diagnostic.strip() else ("undefined", "")
