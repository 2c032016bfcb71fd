"""Phrase families for the intent of a human reply, per language (lower-case patterns).

Searched only in the sender's new text (quotes and signature already stripped). Each family
lists (language, pattern); `phrases.first_match` says which language matched first. Languages:
en, de, fr, es, nl, it, pt, sv, pl.
"""

from __future__ import annotations

from replyguard.domain.inbound.phrases import Family, compile_lower


def _family(entries: list[tuple[str, str]]) -> Family:
    return tuple((lang, compile_lower(src)) for lang, src in entries)


UNSUBSCRIBE = _family(
    [
        (
            "en",
            r"\bunsubscribe\b|\bremove me\b|\btake me off\b|\bstop (?:e-?mailing|emails|contacting|"
            r"writing)\b|\bdo(?:n't| not) (?:e-?mail|contact|write to) me\b|\bopt(?: me)? out\b",
        ),
        (
            "de",
            r"\babmelden\b|\baustragen\b|\bkeine (?:e-?mails|"
            r"mails|nachrichten) mehr\b|\bentfernen sie mich\b",
        ),
        (
            "fr",
            r"\bdésabonne|\bdésinscri|\bretirez[- ]moi\b|\bsupprimez[- ]moi\b|\bne plus recevoir\b|"
            r"\bne m'écrivez plus\b|"
            r"\bme (?:retirer|supprimer|rayer) de (?:votre|vos|la|cette) (?:liste|fichier)",
        ),
        (
            "es",
            r"\bdar(?:me)? de baja\b|\b(?:elimín|bórr|quít|sáq)(?:a|e|en)me\b|"
            r"\bno me (?:escriba|escribas|contacte)\b|"
            r"\b(?:elimin|borr|quit|sac)\w* de (?:su|tu|la|vuestra) lista\b",
        ),
        (
            "nl",
            r"\bafmelden\b|\buitschrijven\b|\bverwijder (?:mij|me)\b|\bgeen (?:e-?mails|mails) meer\b|"
            r"\bhaal (?:mij|me)\b[^.!?\n]{0,30}\b(?:van|uit) (?:uw|jullie|je|de) (?:mailing|verzend)?lijst\b",
        ),
        (
            "it",
            r"\bcancella(?:mi|temi|rmi)\b|\bdisiscriv|\brimuove(?:temi|rmi)\b|\btoglie(?:temi|rmi)\b|"
            r"\bnon (?:scrivermi|contattatemi)\b",
        ),
        ("pt", r"\bdescadastr|\bremova-me\b|\bremover-me\b|\bnão me (?:envie|contacte|escreva)\b"),
        ("sv", r"\bavregistrera\b|\bavsluta prenumeration\b|\bta bort mig\b|\bsluta (?:mejla|maila)\b"),
        (
            "pl",
            r"\bwypisz(?:cie)? mnie\b|\bwypisać\b|\busuń(?:cie)? mnie\b|\busunąć mnie\b|"
            r"\bproszę (?:do mnie )?nie pisać\b",
        ),
    ]
)

WRONG_PERSON = _family(
    [
        (
            "en",
            r"\bwrong (?:person|contact)\b|\bnot the (?:right|correct|best) (?:person|contact)\b|"
            r"\bnot my (?:area|department)\b|\bi(?:'m| am) not responsible\b|\bi do(?:n't| not) handle\b",
        ),
        ("de", r"\bnicht (?:der|die) richtige\b|\bfalsche(?:n)? ansprechpartner|\bnicht zuständig\b"),
        ("fr", r"\bpas la bonne personne\b|\bpas le bon (?:interlocuteur|contact)\b|\bpas en charge\b"),
        (
            "es",
            r"\bno soy la persona (?:adecuada|indicada|correcta)\b|\bpersona equivocada\b|"
            r"\bno me corresponde\b|\bno soy (?:el|la) responsable\b",
        ),
        ("nl", r"\bniet de juiste (?:persoon|contactpersoon)\b|\bniet verantwoordelijk\b"),
        ("it", r"\bnon sono la persona giusta\b|\bpersona sbagliata\b|\bnon mi occupo\b"),
        ("pt", r"\bnão sou a pessoa (?:certa|indicada)\b|\bpessoa errada\b|\bnão sou (?:o|a) responsável\b"),
        ("sv", r"\bfel person\b|\binte rätt person\b|\binte ansvarig\b"),
        ("pl", r"\bniewłaściwa osoba\b|\bnie jestem właściwą osobą\b|\bnie zajmuję się\b"),
    ]
)

REFERRAL = _family(
    [
        (
            "en",
            r"\b(?:talk|speak) (?:to|with)\b|\breach out to\b|\bcontact\b|\bget in touch with\b|"
            r"\bloop(?:ing)? in\b|\bcc(?:'?ing|'d)?\b|\bcopying\b|\bforward(?:ed|ing)? (?:this|it|your)\b|"
            r"\bis the (?:right|best) person\b|\bhandles (?:this|that|our)\b|\bis responsible for\b",
        ),
        (
            "de",
            r"\bwenden sie sich an\b|\bansprechpartner(?:in)? (?:ist|wäre)\b|\bkontaktieren sie\b|"
            r"\bzuständig ist\b|\bleite .{0,30}weiter\b|\bin kopie\b|\bmelden sie sich (?:bei|an)\b",
        ),
        ("fr", r"\bcontactez\b|\badressez-vous à\b|\bs'occupe\b|\ben copie\b|\bje transmets\b|\bvoir avec\b"),
        (
            "es",
            r"\bcontacte con\b|\bhable con\b|\bpóngase en contacto\b|\bse encarga\b|\ben copia\b|"
            r"\ble paso\b|\bescriba a\b",
        ),
        ("nl", r"\bneem contact op met\b|\bwendt u (?:zich )?tot\b|\bis verantwoordelijk\b|\bin de cc\b"),
        ("it", r"\bcontatti\b|\brivolgersi a\b|\brivolgetevi a\b|\bsi occupa\b|\bin copia\b|\bscriva a\b"),
        ("pt", r"\bfale com\b|\bentre em contato com\b|\bcontacte\b|\bé (?:o|a) responsável\b|\bem cópia\b"),
        ("sv", r"\bkontakta\b|\bvänd dig till\b|\bansvarar för\b|\bprata med\b"),
        (
            "pl",
            r"\bkontaktować się z\b|\bskontaktuj się z\b|\bskontaktować się z\b|\bodpowiada za\b|\bw kopii\b",
        ),
    ]
)

NOT_INTERESTED = _family(
    [
        (
            "en",
            r"\bnot interested\b|\bno,? thanks?\b|\bno thank you\b|\bwe(?:'re| are) all set\b|"
            r"\bnot a (?:good )?fit\b|\bwe already (?:use|have)\b|\bnot for us\b|\bno need\b",
        ),
        ("de", r"\bkein(?:erlei)? interesse\b|\bnicht interessiert\b|\bkein bedarf\b|\bnein,? danke\b"),
        ("fr", r"\bpas intéressée?s?\b|\bnon,? merci\b|\bpas besoin\b|\baucun intérêt\b"),
        ("es", r"\bno me interesa\b|\bno estamos interesados\b|\bno,? gracias\b|\bno nos interesa\b"),
        ("nl", r"\bgeen interesse\b|\bniet geïnteresseerd\b|\bnee,? bedankt\b|\bgeen behoefte\b"),
        ("it", r"\bnon (?:sono|siamo) interessat\w\b|\bnon ci interessa\b|\bno,? grazie\b"),
        (
            "pt",
            r"\bnão tenho interesse\b|\bnão (?:estou|"
            r"estamos) interessad\w+\b|\bnão,? obrigad\w\b|\bsem interesse\b",
        ),
        ("sv", r"\binte intresserad\w*\b|\bnej,? tack\b|\binget intresse\b"),
        (
            "pl",
            r"\bnie (?:jestem|jesteśmy) zainteresowan\w*\b|"
            r"\bnie,? dziękuję\b|\bnie jesteśmy zainteresowani\b",
        ),
    ]
)

LATER = _family(
    [
        (
            "en",
            r"\bnot (?:right )?now\b|\bmaybe later\b|\breach out (?:again )?(?:in|after|next|around)\b|"
            r"\bcircle back\b|\bfollow up (?:in|after|next)\b|\bnext (?:quarter|year|month)\b|"
            r"\bcheck back\b|\bget back to me\b|\btiming (?:isn't|is not) right\b|\bafter the holidays\b|"
            r"\b(?:ping|contact|email) me (?:again )?(?:in|"
            r"after|next)\b|\bnot (?:a priority )?this quarter\b",
        ),
        (
            "de",
            r"\bspäter\b|\bnicht jetzt\b|\bim nächsten (?:quartal|jahr|monat)\b|\bderzeit nicht\b|"
            r"\baktuell nicht\b|\bzu einem späteren zeitpunkt\b|\bmelden sie sich (?:gerne )?(?:im|"
            r"nach|ab|wieder)\b",
        ),
        (
            "fr",
            r"\bplus tard\b|\bpas pour le moment\b|\bpas maintenant\b|\brecontactez[- ]moi\b|"
            r"\brevenez vers moi\b|\ble trimestre prochain\b|\bl'année prochaine\b",
        ),
        (
            "es",
            r"\bmás adelante\b|\bmás tarde\b|\bahora no\b|"
            r"\ben este momento no\b|\bel próximo (?:trimestre|año)\b|"
            r"\bvuelva a (?:contactarme|escribirme)\b|\bescríbame (?:en|después|a partir)\b",
        ),
        (
            "nl",
            r"\blater\b|\bniet nu\b|\bop dit moment niet\b|\bvolgend (?:kwartaal|jaar)\b|"
            r"\bneem (?:later|in|na) .{0,20}contact\b",
        ),
        (
            "it",
            r"\bpiù avanti\b|\bpiù tardi\b|\bnon ora\b|\bal momento no\b|\bil prossimo (?:trimestre|anno)\b|"
            r"\bricontattami\b|\brisentiamoci\b",
        ),
        (
            "pt",
            r"\bmais tarde\b|\bmais para a frente\b|\bagora não\b|\bno momento não\b|"
            r"\bpróximo (?:trimestre|ano)\b|\bvolte a (?:contactar|entrar em contato)\b",
        ),
        (
            "sv",
            r"\bsenare\b|\binte nu\b|\bjust nu inte\b|\bnästa (?:kvartal|"
            r"år)\b|\bhör av dig (?:igen|i|efter)\b",
        ),
        (
            "pl",
            r"\bpóźniej\b|\bnie teraz\b|\bw tej chwili nie\b|\bw przyszłym (?:kwartale|roku)\b|"
            r"\bodezw(?:ij|ać|ać się|ijcie) (?:się )?(?:w|po)\b",
        ),
    ]
)

INTERESTED = _family(
    [
        (
            "en",
            r"\bsounds (?:good|great|interesting)\b|\blet'?s (?:talk|chat|meet|set up|schedule|do)\b|"
            r"\bhappy to (?:chat|talk|meet|hop)\b|\b(?:book|schedule|set up) a (?:call|meeting|demo)\b|"
            r"\binterested\b|\bsend (?:me )?(?:some )?times\b|\bi(?:'m| am) (?:free|available)\b|"
            r"\bcan we (?:talk|meet|chat)\b|\b(?:a|quick) call\b|\bdemo\b",
        ),
        (
            "de",
            r"\bgerne?\b|\bklingt (?:gut|interessant|spannend)\b|\binteressier|\btermin\b|\bgespräch\b|"
            r"\btelefonat\b|\blassen sie uns\b",
        ),
        (
            "fr",
            r"\bintéressée?\b|\bm'intéresse\b|\bvolontiers\b|\bavec plaisir\b|\bappelez[- ]moi\b|"
            r"\brendez-vous\b|\bun appel\b|\béchanger\b|\bdisponible\b",
        ),
        ("es", r"\bme interesa\b|\binteresad[oa]\b|\breunión\b|\bllamada\b|\bhablemos\b|\bcon gusto\b"),
        ("nl", r"\binteresse\b|\bgeïnteresseerd\b|\bafspraak\b|\bbellen\b|\bgesprek\b|\bgraag\b"),
        ("it", r"\binteressat\w\b|\bmi interessa\b|\bvolentieri\b|\bchiamata\b|\briunione\b|\bincontro\b"),
        (
            "pt",
            r"\binteressad[oa]\b|\btenho interesse\b|\breunião\b|\bchamada\b|\bconversar\b|\bcom prazer\b",
        ),
        ("sv", r"\bintresserad\b|\bintressant\b|\bmöte\b|\bsamtal\b|\bgärna\b"),
        ("pl", r"\bzainteresowan\w*\b|\bspotkanie\b|\brozmow\w*\b|\bchętnie\b"),
    ]
)

QUESTION = _family(
    [
        (
            "en",
            r"\bhow much\b|\bpric(?:e|es|ing)\b|\bcost\b|\bwhat (?:does|is|are|do)\b|\bhow (?:does|do|is)\b|"
            r"\bcan (?:it|you)\b|\bdoes it\b|\bdo you\b",
        ),
        ("de", r"\bwas kostet\b|\bpreis\w*\b|\bkosten\b|\bwie (?:funktioniert|viel)\b|\bkönnen sie\b"),
        ("fr", r"\bcombien\b|\bprix\b|\btarif\w*\b|\bcomment\b|\best-ce que\b"),
        ("es", r"\bcuánto\b|\bprecio\w*\b|\bcosto\b|\bcómo\b|\bpueden\b"),
        ("nl", r"\bhoeveel\b|\bprijs\w*\b|\bkosten\b|\bhoe werkt\b|\bkunnen jullie\b"),
        ("it", r"\bquanto costa\b|\bprezz\w\b|\bcosto\b|\bcome funziona\b|\bpotete\b"),
        ("pt", r"\bquanto custa\b|\bpreço\w*\b|\bcusto\b|\bcomo funciona\b|\bvocês\b"),
        ("sv", r"\bvad kostar\b|\bpris\w*\b|\bhur fungerar\b|\bkan ni\b"),
        ("pl", r"\bile kosztuje\b|\bcen\w+\b|\bkoszt\w*\b|\bjak działa\b|\bczy możecie\b"),
    ]
)

PRICING = compile_lower(
    r"\bpric(?:e|es|ing)\b|\bcost\b|\bhow much\b|\bpreis|\bkosten\b|\bprix\b|\btarif|\bprecio|"
    r"\bprijs|\bprezz|\bpreço|\bpris\b|\bcen[aęy]\b|\bkoszt|\bcombien\b|\bcuánto\b|\bhoeveel\b|\bquanto\b"
)

#: Where a "later" date is written: the words before it, per language.
LATER_DATE_ANCHORS = _family(
    [
        ("en", r"\b(?:after|from|in|on|around|by|until|till|early|mid|late|next)\s+"),
        ("de", r"\b(?:nach|ab|im|am|bis|anfang|mitte|ende)\s+"),
        ("fr", r"\b(?:après|à partir du|à partir de|en|le|vers|début|mi-|fin)\s*"),
        ("es", r"\b(?:después del?|a partir del?|en|el|hacia|principios de|mediados de|finales de)\s+"),
        ("nl", r"\b(?:na|vanaf|in|op|rond|begin|half|eind)\s+"),
        ("it", r"\b(?:dopo|dal|da|a|il|verso|inizio|metà|fine)\s+"),
        ("pt", r"\b(?:depois de|a partir de|em|no dia|por volta de|início de|meados de|final de)\s+"),
        ("sv", r"\b(?:efter|från|i|på|runt|början av|mitten av|slutet av)\s+"),
        ("pl", r"\b(?:po|od|w|na|około|na początku|w połowie|pod koniec)\s+"),
    ]
)

#: Words of a meeting: with them an interested reply that also asks something is still "meeting".
MEETING = _family(
    [
        ("en", r"\b(?:call|meet|meeting|talk|chat|demo|schedule|calendar|times)\b"),
        ("de", r"\b(?:termin\w*|gespräch|telefonat|treffen|call)\b"),
        ("fr", r"\b(?:rendez-vous|appel|réunion|échanger|call)\b"),
        ("es", r"\b(?:reunión|llamada|hablemos|hablar)\b"),
        ("nl", r"\b(?:afspraak|bellen|gesprek|overleg)\b"),
        ("it", r"\b(?:chiamata|riunione|incontro|sentirci)\b"),
        ("pt", r"\b(?:reunião|chamada|conversar)\b"),
        ("sv", r"\b(?:möte|samtal|ringa)\b"),
        ("pl", r"\b(?:spotkani\w+|rozmow\w*|zadzwoni\w*)\b"),
    ]
)
