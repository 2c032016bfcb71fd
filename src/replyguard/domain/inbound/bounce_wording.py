# ruff: noqa: E501  (phrase tables read best one wording per line)
"""What mail servers write for each bounce reason: one phrase family per reason.

Contract: `Words(text).says(reason)` (or `says(reason, text)`) returns the phrase of `reason`'s
family found in `text` (lower case, whitespace collapsed), or None. `WORDING` maps each reason
of sisimai's taxonomy to its `Family`. Nothing here decides a reason on its own:
bounce_reasons.py applies them in sisimai's order with the status code and the SMTP command.

Speed: a family is a few hundred wordings, and one regular expression of all of them costs
about half a microsecond per character of text. So each wording is indexed by its first word
(or, when that word may run on, by a fragment that must occur): a text is split into words
once, and only the wordings whose first word it contains are searched (`Family.search`).

The inventory follows the phrases that sisimai's reason modules list (https://libsisimai.org,
BSD-2-Clause), which come from real servers' source code and documented error pages (Postfix,
Sendmail, Exim, qmail, Exchange, Gmail, Yahoo, Orange, ...), rewritten here as patterns of our
own, with a few wordings in other languages that receiving servers localise. A family should
only hold wordings that name its reason unambiguously: a generic word ("rejected", "policy")
would take bounces away from the reason they belong to.
"""

from __future__ import annotations

import re

from replyguard.domain.inbound.phrases import compile_lower

# "a ... b": fragments of one wording, in order, each within 120 characters of the one before.
# Not a regex gap (two of those in a row backtrack badly on hostile text): `Aligned` finds each
# fragment after the previous one, first occurrence only, as sisimai does.
_GAP = "\x00"
_WINDOW = 120
_TOKEN = re.compile(r"\w+(?:'\w+)*")
_QUANTIFIERS = frozenset("?*+{")
_LITERAL_AFTER = frozenset(',;:!/<>@-="#%&~')  # characters that end a word in a text


def _split_top(source: str) -> list[str]:
    """A regex source split at its top-level "|" (not inside groups or character classes)."""
    parts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    return [*parts, source[start:]]


def _group_end(source: str) -> int:
    """The index of the ")" closing the group that `source` starts with (-1 when unbalanced)."""
    depth, i = 0, 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i
        i += 1
    return -1


def _expand(branch: str, depth: int = 0) -> list[str]:
    """ "(?:a|b) c" -> ["a c", "b c"], so that each wording starts with its own first word."""
    end = _group_end(branch) if branch.startswith("(?:") else -1
    if end < 0 or depth > 2 or branch[end + 1 : end + 2] in _QUANTIFIERS:
        return [branch]
    rest = branch[end + 1 :]
    return [e for alt in _split_top(branch[3:end]) for e in _expand(alt + rest, depth + 1)]


def _anchor(branch: str) -> tuple[str, str]:
    """How to tell cheaply that `branch` may match: ("word", w) when its first word w is a whole
    word of any text it matches; ("needle", s) when the fragment s must occur in such a text;
    ("always", "") when neither can be said."""
    word = ""
    for ch in branch:
        if not (ch.isalnum() or ch == "_"):
            break
        word += ch
    rest = branch[len(word) :]
    if word and word.isascii():
        nxt = rest[:1]
        whole = not rest or (nxt == " " and rest[1:2] not in _QUANTIFIERS) or nxt in _LITERAL_AFTER
        whole = whole or (nxt == "\\" and not rest[1:2].isalnum()) or (nxt == "'" and rest[1:2].isalpha())
        if nxt == "'":  # "can't": the apostrophe belongs to the word
            return ("needle", word) if len(word) >= 2 else ("always", "")
        if whole:
            return "word", word
        cut = word[:-1] if nxt in _QUANTIFIERS else word
        return ("needle", cut) if len(cut) >= 3 else ("always", "")
    if word:  # a word in a script without spaces (Japanese) or with accents: a fragment
        return "needle", word
    literal = ""
    i = 0
    while i < len(branch):
        ch = branch[i]
        if ch == "\\" and i + 1 < len(branch) and not branch[i + 1].isalnum():
            literal, i = literal + branch[i + 1], i + 2
        elif ch in ".^$*+?{}[]()|\\" or ch == _GAP:
            break
        else:
            literal, i = literal + ch, i + 1
    if i < len(branch) and branch[i] in _QUANTIFIERS and literal:
        literal = literal[:-1]
    return ("needle", literal) if len(literal) >= 3 else ("always", "")


class Aligned:
    """A wording in fragments ("mailbox ... full"): each fragment found after the previous one
    and within `_WINDOW` characters of it. Linear in the text: fragments are searched from each
    occurrence of the first, never re-tried at later positions once found."""

    def __init__(self, source: str) -> None:
        self.fragments = tuple(compile_lower(f) for f in source.split(_GAP))

    def search(self, text: str) -> str | None:
        first = self.fragments[0].search(text)
        while first is not None:
            end = self._rest(text, first.end())
            if end >= 0:
                return text[first.start() : end]
            first = self.fragments[0].search(text, first.start() + 1)
        return None

    def _rest(self, text: str, position: int) -> int:
        for fragment in self.fragments[1:]:
            found = fragment.search(text, position, position + _WINDOW + 200)
            if found is None or found.start() - position > _WINDOW:
                return -1
            position = found.end()
        return position


class Family:
    """One reason's wordings, indexed for `search` (see the module docstring)."""

    def __init__(self, *sources: str) -> None:
        self.sources = tuple(b for src in sources for top in _split_top(src) for b in _expand(top))
        self._compiled: list[re.Pattern[str] | Aligned | None] = [None] * len(self.sources)
        self._by_word: dict[str, list[int]] = {}
        self._needles: list[tuple[str, int]] = []
        self._always: list[int] = []
        for i, branch in enumerate(self.sources):
            kind, key = _anchor(branch)
            if kind == "word":
                self._by_word.setdefault(key, []).append(i)
            elif kind == "needle":
                self._needles.append((key, i))
            else:
                self._always.append(i)
        self._words = frozenset(self._by_word)

    def _pattern(self, i: int) -> re.Pattern[str] | Aligned:
        compiled = self._compiled[i]
        if compiled is None:
            source = self.sources[i]
            compiled = Aligned(source) if _GAP in source else compile_lower(source)
            self._compiled[i] = compiled
        return compiled

    def search(self, text: str, tokens: frozenset[str]) -> str | None:
        """The first wording of this family found in `text` (whose words are `tokens`)."""
        candidates = [i for w in self._words & tokens for i in self._by_word[w]]
        candidates += [i for needle, i in self._needles if needle in text]
        for i in sorted(candidates + self._always):
            pattern = self._pattern(i)
            if isinstance(pattern, Aligned):
                phrase = pattern.search(text)
                if phrase is not None:
                    return phrase
                continue
            found = pattern.search(text)
            if found:
                return found.group(0)
        return None


_family = Family


WORDING: dict[str, Family] = {
    "mailboxfull": _family(
        r"452 insufficient disk space|account disabled temporarly for exceeding receiving limits",
        r"boite du destinataire pleine|exceeded storage allocation|full mailbox|mailfolder is full",
        r"mailbox exceeds allowed size|mailbox size limit exceeded|mailbox would exceed maximum allowed storage",
        r"no space left on device|not sufficient disk space|quota violation for|too much mail data",
        r"user has exceeded quota, bouncing mail|user has too many messages on the server|user's space has been used up",
        rf"account is {_GAP} quota|disk{_GAP}quota|enough {_GAP} space|mailbox {_GAP}exceeded{_GAP} limit",
        rf"mailbox {_GAP}full|mailbox {_GAP}quota|maildir {_GAP}quota|over {_GAP}quota|over ?quota|quota {_GAP}exceeded",
        r"postfach (?:ist )?voll|boîte (?:aux lettres )?(?:du destinataire )?(?:est )?pleine|buzón (?:del destinatario )?(?:está )?lleno|casella (?:\S+ )?piena|caixa (?:postal )?(?:está )?cheia",
        r"skrzynka (?:\S+ )?(?:jest )?pełna|ящик (?:\S+ )?переполнен|容量(?:が|を)?(?:超|オーバー|不足|いっぱい)|(?:メールボックス|受信箱)が(?:いっぱい|満杯)",
    ),
    "mesgtoobig": _family(
        r"exceeded maximum inbound message size|exceeded the maximum incoming message size|line limit exceeded",
        r"max message size exceeded|message file too big|message length exceeds administrative limit",
        r"message size exceeds fixed (?:limit|maximum message size)|message size exceeds maximum value",
        r"message too big|message too large for this |size limit|taille limite du message atteinte",
    ),
    "exceedlimit": _family(r"message header size exceeds limit|message too large"),
    "suspend": _family(
        r" is currently suspended| temporary locked|archived recipient|boite du destinataire archivee",
        r"email account that you tried to reach is (?:disabled|inactive)|has been suspended|inactive account",
        r"invalid/inactive user|is a deactivated mailbox|is unavailable: user is terminated|mailbox currently suspended",
        r"mailbox disabled|mailbox is frozen|mailbox unavailable or access denied|recipient rejected: temporarily inactive",
        r"recipient suspend the service|this account has been disabled or discontinued|this account has been temporarily suspended",
        r"this address no longer accepts mail|this mailbox is disabled|user or domain is disabled|user suspended",
        r"vdelivermail: account is locked email bounced",
        # Expired, closed or deactivated accounts, in the words servers localise (issue 22):
        # each names the account or the mailbox, so a message's own expiry never reads so.
        r"(?:mailbox|account|e-?mail address) (?:has |is )?(?:expired|closed|deactivated|terminated)",
        r"(?:mailbox|account) (?:has been |was )(?:closed|deactivated|deleted|terminated|removed)",
        r"(?:mailbox|address|account) (?:is )?no longer (?:available|active|in use|exists)",
        r"konto (?:wygas[łl][oe]|(?:zosta[łl]o |jest )?(?:zablokowane|wy[łl][aą]czone|usuni[ęe]te|nieaktywne))",
        r"skrzynka (?:\S+ )?(?:wygas[łl]a|(?:zosta[łl]a |jest )?(?:zablokowana|wy[łl][aą]czona|usuni[ęe]ta|nieaktywna))",
        r"cuenta (?:\S+ ){0,2}(?:ha caducado|caducada|desactivada|cancelada|eliminada)|buzón (?:\S+ )?(?:caducado|desactivado|eliminado)",
        r"(?:postfach|konto) (?:\S+ ){0,2}(?:nicht mehr verf(?:ü|u|ue)gbar|abgelaufen|deaktiviert|gel(?:ö|o|oe)scht|aufgel(?:ö|o|oe)st)",
        r"compte (?:\S+ ){0,2}(?:a )?(?:expir[ée]|d[ée]sactiv[ée]|supprim[ée]|ferm[ée])",
        r"bo[îi]te (?:aux lettres )?(?:\S+ )?(?:expir[ée]e|d[ée]sactiv[ée]e|supprim[ée]e|ferm[ée]e)",
        r"casella (?:\S+ ){0,2}(?:(?:è |e )?scaduta|disattivata|chiusa|eliminata)|account (?:è |e )?(?:scaduto|disattivato)",
        r"conta (?:\S+ ){0,2}(?:expirou|expirada|desativada|encerrada|exclu[íi]da)",
        r"(?:mailbox|account|postvak) (?:is )?(?:verlopen|opgeheven|gedeactiveerd|verwijderd)",
        r"больше не обслуживается|(?:ящик|аккаунт|учетная запись|учётная запись) (?:\S+ )?(?:заблокирован|отключен|удален|удалён)",
    ),
    "hasmoved": _family(r" has been replaced by "),
    "norelaying": _family(
        r"as a relay|email address is not verified\.|insecure mail relay|no relaying|not a gateway|not local host",
        r"is not permitted to relay through this server without authentication|not allowed to relay through this machine",
        r"mail server requires authentication when attempting to send to a non-local e-mail address",
        r"not an open relay, so get lost|relay access denied|relay denied|relay not permitted|relaying denied",
        r"relaying mail to |specified domain is not allowed|that domain isn't in my list of allowed rcpthost",
        r"this system is not configured to relay mail|unable to relay |we don't handle mail for",
    ),
    "authfailure": _family(
        r"//spf\.pobox\.com|bad spf records for|dmarc policy|doesn't meet the required authentication level",
        r"please inspect your spf settings|sender policy framework \(spf\) fail|sender policy framework violation",
        r"spf \(sender policy framework\) domain authentication fail|spf check: fail",
        r"rejected due to: spf fail",  # postfix-policyd-spf
        r"the 5322\.from address doesn't meet the authentication requirements",
        rf" is not allowed to send mail\.{_GAP}_401|is not allowed to send from <{_GAP} per it's spf record",
    ),
    "userunknown": _family(
        r"#5\.1\.1 bad address|550 address invalid|5\.1\.0 address rejected\.|address does not exist",
        r"address not present in directory|address unknown|can't accept user|does not exist\.",
        r"destination addresses were unknown|destination server rejected recipients|email address (?:does not exist|could not be found)",
        r"invalid address|invalid mailbox|invalid recipient|is not a known user|is not a valid mailbox",
        r"is not an active address at this host|mailbox (?:does not exist|invalid|is inactive|is unavailable|not present|not found|unavaiable)",
        r"nessun utente simile in questo indirizzo|no account by that name here|no existe (?:dicha persona|ese usuario )",
        r"no mail box available for this user|no mailbox (?:by that name is currently available|found)",
        r"no such (?:address here|mailbox|person at this address|recipient|user)|no thank you rejected: account unavailable",
        r"no valid recipients, bye|not a valid (?:recipient|user here)|not a local address|not email addresses",
        r"recipient address rejected\. \(in reply to rcpt to command\)|recipient address rejected: (?:access denied|invalid user|invalid-recipient|unknown user|userunknown)",
        r"recipient (?:does not exist|is not accepted|is not local|not exist|not found|not ok|unknown)",
        r"recipient refuses to accept your mail|requested action not taken: mailbox unavailable|resolver\.adr\.recipient ?notfound",
        r"sorry, (?:user unknown|badrcptto|no mailbox here by that name|your envelope recipient has been denied)",
        r"that domain or user isn't in my list of allowed rcpthosts|the email account that you tried to reach does not exist",
        r"the following recipients was undeliverable|the user's email name is not found|there is no one at this address",
        r"this address no longer accepts mail|this email address is wrong or no longer valid",
        r"this recipient is (?:in my badrecipientto list|not in my validrcptto list)|this spectator does not exist",
        r"unknown (?:mailbox|recipient|user)|user (?:does not exist|missing home directory|not active|not exist|not found|not known|unknown)",
        r"utilisateur inconnu !|vdeliver: invalid or unknown virtual user|your envelope recipient is in my badrcptto list",
        r"weil die adresse nicht gefunden wurde oder keine e-mails empfangen kann",
        # "Does not exist" and "could not be found" in the shapes servers write (issue 22).
        r"(?:the )?recipient(?:['’]s)? (?:mailbox |address |e-?mail address )?(?:does not|doesn['’]t|did not) exist",
        r"(?:e-?mail )?address you entered (?:couldn['’]t|could not|was not|cannot|can['’]t) be found|addressee unknown",
        r"no such account|account (?:does not|doesn['’]t) exist|recipient (?:is )?invalid|recipient address (?:is )?invalid",
        r"(?:empf(?:ä|a|ae)nger|postfach|benutzer|adresse) (?:nicht gefunden|nicht vorhanden|(?:ü|u|ue)ng(?:ü|u|ue)ltig)",
        r"(?:adresse|destinataire|utilisateur) (?:introuvable|invalide)",
        r"(?:destinatario|usuario|buz[óo]n) (?:inexistente|no encontrado|inv[áa]lido)",
        r"(?:odbiorca|konto|adres) (?:nie istnieje|nieznany|nie zosta[łl] znaleziony)|nie ma takiego (?:u[żz]ytkownika|adresu|konta|odbiorcy)",
        r"(?:адресат|пользователь|получатель) не найден|(?:ontvanger|gebruiker|adres) (?:bestaat niet|niet gevonden|onbekend)",
        r"(?:anv(?:ä|a)ndaren|adressen|mottagaren) (?:finns inte|hittades inte)",
        # Localised wordings of the same fact (German, French, Spanish, Italian, Portuguese,
        # Polish, Russian, Dutch, Swedish, Japanese), each naming the mailbox or the user.
        r"(?:benutzer|empfänger|postfach|adresse) (?:ist )?unbekannt|unbekannter (?:benutzer|empfänger)",
        r"(?:postfach|adresse|benutzer|empfänger)\b.{0,40}?\bexistiert nicht",
        r"(?:utilisateur|destinataire|adresse) inconnu|(?:boîte|adresse) (?:aux lettres )?(?:\S+ )?n'existe pas",
        r"(?:usuario|buzón|destinatario) (?:desconocido|no existe)|(?:utente|casella|destinatario) (?:sconosciuto|inesistente|non esiste)",
        r"(?:usuário|destinatário|caixa postal) (?:desconhecido|não existe)|(?:użytkownik|adresat|skrzynka) (?:nieznany|nie istnieje)",
        r"(?:пользователь|адресат|ящик) не существует|(?:gebruiker|mailbox|adres) (?:onbekend|bestaat niet)|(?:användaren|adressen) finns inte",
        r"(?:宛先|ユーザ|ユーザー|アカウント|メールアドレス)(?:が|は)?(?:不明|存在しません|存在しない|見つかりません)",
        rf"<{_GAP}> not found|<{_GAP}>\.\.\. blocked by |account {_GAP} does not exist at the organization",
        rf"adresse d au moins un destinataire invalide\. invalid recipient\.{_GAP}41[68]|bad{_GAP}recipient",
        rf"mailbox {_GAP}does not exist|mailbox {_GAP}unavailable or access denied|no {_GAP} in name directory|non{_GAP}existent user",
        rf"rcpt <{_GAP} does not exist|rcpt \({_GAP}t exist |recipient {_GAP} was not found in",
        rf"recipient address rejected: user {_GAP}  does not exist|recipient address rejected: user unknown in {_GAP}  table",
        rf"said: 550{_GAP}5\.1\.1 {_GAP} user unknown |this user doesn't have a {_GAP} account|unknown e{_GAP}mail address",
        rf"unknown local{_GAP}part|user {_GAP} was not found|user {_GAP} does not exist|user \({_GAP}\) unknown",
    ),
    "filtered": _family(
        r"account is protected by|bounced address|has restricted sms e-mail|is not accepting any mail|message filtered",
        r"message rejected due to user rules|not found recipient account|recipient id refuse to receive mail",
        r"recipient is only accepting mail from specific email addresses|refused due to recipient preferences",
        r"user not found|user refuses to receive this mail|user reject|you have been blocked by the recipient",
    ),
    "requireptr": _family(
        r"access denied\. ip name lookup failed|all mail servers must have a ptr record with a valid reverse dns entry",
        r"bad dns ptr resource record|cannot find your hostname|cannot resolve your address\.|fix reverse dns for ",
        r"ips with missing ptr records|no ptr record found\.|please get a custom reverse dns name from your isp for your host",
        r"cannot find your reverse hostname|ptr record setup|reverse dns (?:failed|required)|sender ip reverse lookup rejected|unresolvable relay host name",
        r"the corresponding forward dns entry does not point to the sending ip",
        r"this system will not accept messages from servers/devices with no reverse dns",
        r"we do not accept mail from hosts with dynamic ip or generic dns ptr-records",
        rf"domain {_GAP} mismatches client ip|dns lookup failure: {_GAP} try again later|reverse dns lookup for host {_GAP} failed permanently",
        rf"server access {_GAP} forbidden by invalid rdns record of your mail server|service permits {_GAP} unverifyable sending ips",
    ),
    "notcompliantrfc": _family(
        r"duplicate header|this message is not rfc 5322 compliant|support\.google\.com/mail/\?p=rfcmessagenoncompliant",
        rf" multiple {_GAP} header",
    ),
    "badreputation": _family(
        r"a poor email reputation score|has been temporarily rate limited due to ip reputation|ip/domain reputation problems",
        r"likely suspicious due to the very low reputation|none/bad reputation|the sending mta's poor reputation",
        r"temporarily deferred due to unexpected volume or user complaints",
    ),
    "contenterror": _family(
        r"duplicate header|header size exceeds maximum permitted|improper use of 8-bit data in message header",
        r"message header size, or recipient list, exceeds policy limit|message mime complexity exceeds the policy maximum",
        r"routing loop detected -- too many received: headers|this message contain (?:invalid mime headers|improperly-formatted binary content)",
        r"this message contain text that uses unnecessary base64 encoding",
    ),
    "rejected": _family(
        r"access denied \(in reply to mail from command\)|access denied \(sender blacklisted\)|address rejected",
        r"administrative prohibition|batv (?:failed to verify|validation failure)|bogus mail from",
        r"backscatter protection detected an invalid or expired email address",
        r"because the sender isn't on the recipient's list of senders to accept mail from",
        r"can't determine purported responsible address|connections not accepted from servers without a valid sender domain",
        r"denied \[bouncedeny\]|denied by secumail valid-address-filter|delivery not authorized, message refused",
        r"does not exist e2110|domain of sender address |email address is on senderfilterconfig list|emetteur invalide",
        r"empty envelope senders not allowed|envelope blocked - |error: no third-party dsns",
        r"from: domain is invalid\. please provide a valid from:|fully qualified email address required|invalid domain, see <url:",
        r"invalid sender|is not a registered gateway user|mail from not owned by user|message rejected: email address is not verified",
        r"mx records for |null sender is not allowed|recipient addresses rejected : access denied|recipient not accepted\. \(batv: no tag",
        r"returned mail not accepted here|rfc 1035 violation: recursive cname records for|rule imposed mailbox access for",
        r"sending this from a different address or alias using the |sender address has been blacklisted",
        r"sender email address rejected|sender is in my black list|sender is spammer|sender not pre-approved|sender rejected",
        r"sender domain is empty|sender verify failed|sender was rejected|spam reporting address|syntax error: empty email address",
        r"the message has been rejected by batv defense|this server does not accept mail from|transaction failed unsigned dsn for",
        r"unroutable sender address|you are not allowed to post to this mailing list|"
        r"you may not have permission to post messages to the group|you are sending to/from an address that has been blacklisted",
        r"your access to submit messages to this e-mail system has been rejected|your email address has been blacklisted",
    ),
    "hostunknown": _family(
        r"domain does not exist|domain is not reachable|domain must exist|host or domain name not found|host unknown",
        r"host unreachable|mail domain mentioned in email address is unknown|name or service not known|no such domain",
        r"recipient address rejected: unknown domain name|recipient domain must exist|the account or domain may not exist",
        r"unknown host|unroutable address|unrouteable address",
        rf"553 {_GAP} does not exist",
    ),
    "spamdetected": _family(
        r" - spam|//www\.spamhaus\.org/help/help_spam_16\.htm|//dsbl\.org/help/help_spam_16\.htm|//mail\.163\.com/help/help_spam_16\.htm",
        r"554 5\.7\.0 reject, id=|appears to be unsolicited|blacklisted url in message|block for spam|blocked by policy: no spam please",
        r"blocked by spamassassin|blocked for abuse\. see http://att\.net/blocks|cannot be forwarded because it was detected as spam",
        r"considered unsolicited bulk e-mail \(spam\) by our mail filters|content filter rejection",
        r"cyberoam anti spam engine has identified this email as a bulk email|denied due to spam list|high probability of spam",
        r"is classified as spam and is rejected|listed in work\.drbl\.imedia\.ru|the mail server detected your message as spam",
        r"mail appears to be unsolicited|mail content denied|may consider spam|message considered as spam or virus",
        r"message contains spam or virus|message content rejected|message detected as spam|message filtered",
        r"message looks like spam|message is being rejected as it seems to be a spam|message refused by (?:mailmarshal|trustwave seg) spamprofiler",
        r"message rejected (?:as spam|because of unacceptable content|due to suspected spam content|for policy reasons)",
        r"message was rejected for possible spam/virus content|our email server thinks this email is spam",
        r"our system has detected that this message is |probable spam|reject bulk\.advertising|rejected: spamassassin score ",
        r"rejected - bulk email|rejecting banned content|rejecting mail content|related to content with spam-like characteristics",
        r"sender domain listed at |sending address not accepted due to spam filter|spam (?:blocked|check|content matched|detected|email|message rejected\.|not accepted|refused|rejection|score )",
        r"spambouncer identified spam|spamming not allowed|too many spam complaints|too much spam\.",
        r"the email message was detected as spam|the message has been rejected by spam filtering engine",
        r"the message was rejected due to classification as bulk mail|the content of this message looked like spam",
        r"identified as spam|this message (?:appears to be spam|has been identified as spam|has been scored as spam with a probability|was classified as spam)",
        r"this message was rejected by recurrent pattern detection system|transaction failed spam message not queued|we dont accept spam",
        r"your email (?:appears similar to spam we have received before|breaches local uribl policy|had spam-like |is considered spam|is probably spam|was detected as spam)",
        r"your message as spam and has prevented delivery|your message has been temporarily blocked by our filter",
        r"your message has been rejected because it appears to be spam|your message has triggered a spam block",
        r"your message may contain the spam contents|your message failed several antispam checks",
        rf"greylisted{_GAP} please try again in|mail score \({_GAP} over |mail rejete\. mail rejected\. {_GAP}506",
        rf"our filters rate at and above {_GAP} percent probability of being spam|rejected by {_GAP} \(spam\)",
        rf"rejected due to spam {_GAP}(?:classification|content)|rule imposed as {_GAP} is blacklisted on|spam {_GAP} exceeded|this message scored {_GAP} spam points",
    ),
    "speeding": _family(
        r"mail sent from your ip address has been temporarily rate limited|please try again slower",
        r"receiving mail at a rate that prevents additional messages from being delivered",
    ),
    "toomanyconn": _family(
        r"all available ips are at maximum connection limit|connection rate limit exceeded|exceeds per-domain connection limit for",
        r"has exceeded the max emails per hour |throttling failure: (?:daily message quota|maximum sending rate) exceeded",
        r"too many (?:connections|concurrent smtp connections|errors from your ip|recipients|smtp sessions for this host)",
        r"trop de connexions, |we have already made numerous attempts to deliver this message",
    ),
    "blocked": _family(
        r" said: 550 blocked|//www\.spamcop\.net/bl\.|bad sender ip address|banned sending ip|blacklisted by|blocked using ",
        r"blocked - see http|dnsbl:attrbl|client host rejected: abus detecte gu_eib_0[24]|client host rejected: may not be mail exchanger",
        r"client host rejected: was not authenticated|confirm this mail server|connection dropped|connection refused by",
        r"connection reset by peer|connection was dropped by remote host|connections not accepted from ip addresses on spamhaus xbl",
        r"currently sending spam see: |domain does not exist:|dynamic/zombied/spam ips blocked|error: no valid recipients from ",
        r"esmtp not accepting connections|extreme bad ip profile|go away|helo command rejected:|host network not allowed",
        r"hosts with dynamic ip|invalid ip for sending mail of domain|is in a black list|is not allowed to send mail from",
        r"mailfrom domain is listed in spamhaus|no access from mail server|no matches to nameserver query",
        r"not currently accepting mail from your ip|part of their network is on our block list|please use the smtp server of your isp",
        r"refused - see http|rejected - multi-blacklist|rejected because the sending mta or the sender has not passed validation",
        r"rejecting open proxy|sender ip address rejected|server access forbidden by your ip |service not available, closing transmission channel",
        r"smtp error from remote mail server after initial connection:|sorry, that domain isn't in my list of allowed rcpthosts",
        r"sorry, your remotehost looks suspiciously like spammer|temporarily deferred due to unexpected volume or user complaints",
        r"to submit messages to this e-mail system has been rejected|too many spams from your ip",
        r"too many unwanted messages have been sent from the following ip address above|was blocked by ",
        r"we do not accept mail from dynamic ips|you are not allowed to connect|you are sending spam|your ip address is listed in the rbl",
        r"your network is temporary blacklisted|your server requires confirmation",
        rf"\({_GAP}@{_GAP}:blocked\)|access from ip address {_GAP} blocked|client host {_GAP} blocked using",
        rf"connections will not be accepted from {_GAP} because the ip is in spamhaus's list|dnsbl:rbl {_GAP}>_is_blocked",
        rf"email blocked by {_GAP}(?:\.barracudacentral\.org|spamhaus)|host {_GAP} refused to talk to me: {_GAP} blocked",
        rf"ip {_GAP} is blocked by earthlink|is in an {_GAP}rbl on |mail server at {_GAP} is blocked|mail from {_GAP} refused:",
        rf"mail from {_GAP} refused, see {_GAP}orbs",
        rf"message from {_GAP} rejected based on blacklist|messages from {_GAP} temporarily deferred due to user complaints",
        rf"server ip {_GAP} listed as abusive|sorry! your ip address{_GAP} is blocked by rbl|the (?:domain|email|ip){_GAP} is blacklisted",
        rf"veuillez essayer plus tard\. service refused, please try later\. {_GAP}(?:103|510)|your access ip{_GAP} has been rejected",
        rf"your sender's ip address is listed at {_GAP}\.abuseat\.org",
    ),
    "virusdetected": _family(
        r"it has a potentially executable attachment|virus detected|virus phishing/malicious_url detected",
        r"the message was rejected because it contains prohibited virus or spam content",
        r"this form of attachment has been used by recent viruses or other malware|your message was infected with a virus",
    ),
    "policyviolation": _family(
        r"an illegal attachment on your message|because the recipient is not accepting mail with |by non-member to a members-only list",
        r"closed mailing list|denied by policy|email not accepted for policy reasons|email rejected due to security policies",
        r"header are not accepted|header error|local policy violation|message bounced due to organizational settings",
        r"message given low priority|message not accepted for policy reasons|message rejected due to local policy",
        r"messages with multiple addresses|rejected for policy reasons|protocol violation",
        r"the email address used to send your message is not subscribed to this group|the message was rejected by organization policy",
        r"this message was blocked because its content presents a potential|we do not accept messages containing images or other attachments",
        r"you're using a mass mailer",
        rf"you have exceeded the{_GAP}allowable number of posts without solving a captcha",
    ),
    "systemerror": _family(
        r"aliasing/forwarding loop broken|can't create user output file|could not load drd for domain|internal error reading data",
        r"internal server error: operation now in progress|interrupted system call|it encountered an error while being processed",
        r"it would create a mail loop|local configuration error|local error in processing|loop was found in the mail exchanger",
        r"loops back to myself|mail system configuration error|queue file write error|recipient deferred because there is no mdb",
        r"remote server is misconfigured|server configuration error|service currently unavailable|system config error",
        r"temporary local problem|timeout waiting for input|transaction failed ",
        rf"unable to connect {_GAP}daemon",
    ),
    "networkerror": _family(
        r"could not connect and send the mail to|dns records for the destination computer could not be found",
        r"hop count exceeded - possible mail loop|host is unreachable|host name lookup failure|host not found, try again",
        r"mail forwarding loop for |malformed (?:or unexpected )?name server reply|maximum forwarding loop count exceeded",
        r"message looping|message probably in a routing loop|no route to host|too many hops|unable to resolve route |unrouteable mail domain",
    ),
    "systemfull": _family(r"mail system full|requested mail action aborted: exceeded storage allocation"),
    "notaccept": _family(
        r"does not accept mail \(nullmx\)|host/domain does not accept mail|host does not accept mail|mail receiving disabled",
        r"name server: \.: host not found|no mx record found for domain=|no route for current request|smtp protocol returned a permanent error",
    ),
    "expired": _family(
        r"connection timed out|could not find a gateway for|delivery attempts will continue to be|delivery (?:time )?expired",
        r"failed to deliver to domain |giving up on|have been failing for a long time|has been delayed|it has not been collected after",
        r"message expired after sitting in queue for|message expired, (?:cannot connect to remote server|connection refulsed)",
        r"message timed out|retry time not reached for any host after a long failure period|server did not respond",
        r"this message has been in the queue too long|unable to deliver message after multiple retries",
        r"was not reachable within the allowed queue period|your message could not be delivered for more than",
        rf"could not be delivered for{_GAP} days",
    ),
    "failedstarttls": _family(r"starttls is required to send mail|tls required but not supported"),
    "securityerror": _family(
        r"account not subscribed to ses|authentication (?:credentials invalid|failure|required|turned on in your email client)",
        r"executable files are not allowed in compressed files|insecure mail relay|recipient address rejected: access denied",
        r"sorry, you don't authenticate or the domain isn't in my list of allowed rcpthosts|unauthenticated senders not allowed",
        r"verification failure|you are not authorized to send mail, authentication is required",
        rf"authentication failed; server {_GAP} said: |authentification invalide{_GAP}305|authentification requise{_GAP}402",
        rf"domain {_GAP} is a dead domain|user {_GAP} is not authorized to perform ses:sendrawemail on resource",
    ),
    "mailererror": _family(
        r" \|\| exit |procmail: |bin/procmail|bin/maidrop|command failed: |command died with status |command output:",
        r"mailer error|pipe to \|/|x-unix; ",
    ),
    "vacation": _family(r"vacation|out of (?:the )?office"),
}


# Wordings that contain a family's words but belong to another: "recipient address rejected"
# is about the recipient, not about our sender address.
_NOT: dict[str, re.Pattern[str]] = {
    "rejected": compile_lower(
        r"5\.1\.0 address rejected|recipient address rejected|sender ip address rejected"
    ),
}


class Words:
    """One diagnostic, split into words once, asked for any number of families."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = frozenset(_TOKEN.findall(text))
        self._seen: dict[str, str | None] = {}

    def says(self, reason: str) -> str | None:
        """The wording of `reason` found in the text, or None (each family searched once)."""
        if reason not in self._seen:
            self._seen[reason] = self._search(reason)
        return self._seen[reason]

    def _search(self, reason: str) -> str | None:
        family = WORDING.get(reason)
        if family is None or not self.text:
            return None
        exception = _NOT.get(reason)
        if exception is not None and exception.search(self.text):
            return None
        return family.search(self.text, self.tokens)


def says(reason: str, text: str) -> str | None:
    """The wording of `reason` found in `text` (lower case), or None."""
    return Words(text).says(reason)
