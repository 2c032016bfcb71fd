"""The charts of the pages, from the read models to SVG."""

from __future__ import annotations

from markupsafe import Markup

from replyguard.entrypoints.web.svg import Series, stacked_bars
from replyguard.service_layer.queries.campaigns import SendsPerDay
from replyguard.service_layer.queries.charts import CampaignActivity, FirstAction


def sends_chart(sends: SendsPerDay) -> Markup:
    return stacked_bars(
        [f"{d.day:%d %b}" for d in sends.days],
        [
            Series("campaign", "from this campaign", [d.campaign for d in sends.days]),
            Series(
                "mailbox", "from the mailbox's other campaigns", [d.mailbox - d.campaign for d in sends.days]
            ),
        ],
        limit=sends.mailbox_cap,
        title=f"Sends per day from {sends.mailbox} against its daily cap of {sends.mailbox_cap}",
    )


def activity_chart(activity: CampaignActivity) -> Markup:
    return stacked_bars(
        [f"{d.day:%d %b}" for d in activity.days],
        [
            Series("replies", "replies", [d.replies for d in activity.days]),
            Series("ooo", "out of office", [d.out_of_office for d in activity.days]),
            Series("bounces", "bounces", [d.bounces for d in activity.days]),
            Series("other", "automatic replies and unsubscribes", [d.other for d in activity.days]),
        ],
        title=f"Replies, out-of-office and bounces per day: {activity.campaign}",
    )


def first_action_chart(stats: FirstAction) -> Markup:
    """How long replies waited for a person's first action, and how many still wait."""
    labels = [label for label, _ in stats.buckets] + ["no action yet"]
    return stacked_bars(
        labels,
        [
            Series("acted", "replies acted on", [n for _, n in stats.buckets] + [0]),
            Series("waiting", "replies still waiting", [0] * len(stats.buckets) + [stats.waiting]),
        ],
        title=f"Time from reply to a person's first action: {stats.campaign}",
        every_label=True,
    )
