"""Issue 7, item 11: thread matching reads the header shapes real clients and gateways write.

Before: In-Reply-To without angle brackets or with spaces inside, a foreign id before ours,
a References list longer than 50 ids with ours near the end, and a comment glued after an id
were all missed (the reply then fell back to weaker evidence, or to none).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from tests.support.identity import first_sent, raw_mail, reply_headers, sent_workspace
from tests.support.scenario import FORECASTING, REPORTS, lead_state

FOREIGN = [f"<CAF{i:03d}+x@mail.gmail.test>" for i in range(60)]

Shape = Callable[[str], dict[str, str]]
SHAPES: dict[str, Shape] = {
    "no-angle-brackets": lambda ours: {"in_reply_to": ours.strip("<>")},
    "spaces-inside": lambda ours: {"in_reply_to": f"< {ours.strip('<>')} >"},
    "foreign-id-first": lambda ours: {"in_reply_to": f"{FOREIGN[0]} {ours}"},
    "references-over-50-ours-near-the-end": lambda ours: {
        "references": " ".join([*FOREIGN[:55], ours, *FOREIGN[55:]])
    },
    "comment-glued": lambda ours: {"in_reply_to": f"{ours}(Dana Whitfield's message of 7 Dec 2026)"},
    "folded-inside-the-id": lambda ours: {
        "references": f"{FOREIGN[1]}\r\n {ours.replace('@', chr(13) + chr(10) + ' @')}"
    },
    "folded-between-ids": lambda ours: {"references": "\r\n\t".join([*FOREIGN[:3], ours])},
}
LEADS = [
    "marc.keller@brightline-logistics.test",
    "j.brandt@kessler-maschinenbau.test",
    "claire.dubois@atelier-lumen.test",
    "tbecker@cedarpoint-supply.test",
    "aisha@meridian-health.test",
    "lortega@grupo-mirador.test",
    "ben.torres@pinecrest-retail.test",
]


def test_replies_in_real_header_shapes_match_their_thread(app: App, clock: FixedClock) -> None:
    sent_workspace(app, clock)
    for n, ((name, shape), lead) in enumerate(zip(SHAPES.items(), LEADS, strict=True)):
        # The Forecasting email (from sam@): the thread, not the address, picks the product.
        ours = first_sent(app, lead, FORECASTING)
        headers = reply_headers(
            lead,
            f"Re: {ours.subject}",
            to="sam@northwind-analytics.test",
            message_id=f"<r{n}@c.test>",
            **shape(ours.message_id),
        )
        result = ingest_raw(app, raw_mail(headers), "imap")
        assert "match:thread" in result.evidence, name
        assert lead_state(app, lead, FORECASTING) == "replied", name
        assert lead_state(app, lead, REPORTS) == "active", name


@pytest.mark.parametrize("name", ["no-angle-brackets", "references-over-50-ours-near-the-end"])
def test_a_stranger_replying_in_such_a_shape_still_stops_the_thread_lead(
    app: App, clock: FixedClock, name: str
) -> None:
    # Without the thread there is nothing else to go on: the sender is unknown, the subject ours
    # is not (before, this was unmatched and the lead went on receiving follow-ups).
    sent_workspace(app, clock)
    ours = first_sent(app, LEADS[0], REPORTS)
    headers = reply_headers("assistant@private-mail.test", "Re: your note", **SHAPES[name](ours.message_id))
    result = ingest_raw(app, raw_mail(headers), "imap")
    assert result.status == "matched" and "match:unknown-sender" in result.evidence
    assert lead_state(app, LEADS[0], REPORTS) == "replied"
