"""Notice channels (email, signed webhook, Slack-compatible webhook), built from settings."""

from __future__ import annotations

from replyguard.adapters.notices.base import NoticeChannel
from replyguard.adapters.notices.email import EmailChannel
from replyguard.adapters.notices.http import SlackChannel, WebhookChannel
from replyguard.adapters.transports.base import Transport
from replyguard.domain.clock import Clock, SystemClock
from replyguard.settings import NotifySettings


def make_channels(
    settings: NotifySettings, transport: Transport | None, wall: Clock | None = None
) -> list[NoticeChannel]:
    """The channels `settings` configure; `wall` is the real clock webhook signatures carry."""
    channels: list[NoticeChannel] = []
    if settings.email and transport is not None:
        channels.append(EmailChannel(transport))
    if settings.webhook_url and settings.webhook_secret:
        channels.append(
            WebhookChannel(
                settings.webhook_url, settings.webhook_secret, settings.timeout, wall=wall or SystemClock()
            )
        )
    if settings.slack_url:
        channels.append(SlackChannel(settings.slack_url, settings.timeout))
    return channels
