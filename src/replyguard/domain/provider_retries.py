"""How long each inbound provider keeps retrying a request we did not answer with a 2xx.

A request we refuse for load (429/503) or fail to store comes back later, carrying what it
carried the first time. Whatever we check on it must still pass then: a signed timestamp is
accepted for as long as the provider retries, plus a margin, and replay is stopped by the
token claimed once in the store transaction (service_layer/inbound/webhook_nonces.py), never by age.

The schedules, as each provider documents them (read 2026-12-02):

- Mailgun (routes and webhooks): every answer but 2xx and 406 is retried "during 8 hours"
  at 5 min, 10 min, 15 min, 1 h, 2 h and 4 h, with the original signed timestamp and token.
  https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-retries
- Postmark (inbound webhook): every answer but 200 and 403 is retried 10 times over about
  10.5 hours (1, 5, 10, 10, 10, 15, 30 min, 1 h, 2 h, 6 h). Nothing is signed, nothing ages.
  https://postmarkapp.com/support/article/understanding-inbound-webhook-retries-in-postmark
- SendGrid (Inbound Parse): only 5xx answers are queued and retried, for up to 3 days, then
  dropped without notice. Nothing is signed, nothing ages.
  https://www.twilio.com/docs/sendgrid/for-developers/parsing-email/inbound-email
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

#: How far a signed timestamp may be ahead of our clock (the provider's clock runs fast).
CLOCK_SKEW = timedelta(minutes=5)
#: Added to a documented schedule: a retry is queued at the last interval, then waits its turn.
MARGIN = timedelta(hours=1)


@dataclass(frozen=True)
class RetrySchedule:
    provider: str
    retries_for: timedelta  # from the first attempt to the last retry, as documented
    retried_unless: str  # the answers that stop the retries
    source: str

    @property
    def max_age(self) -> timedelta:
        """How old a signed timestamp may be and still be this provider retrying."""
        return self.retries_for + MARGIN

    @property
    def keep_tokens(self) -> timedelta:
        """How long a used token must be remembered: while its timestamp can still pass."""
        return self.max_age + 2 * CLOCK_SKEW


MAILGUN = RetrySchedule(
    "mailgun",
    timedelta(hours=8),
    "2xx, 406",
    "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-retries",
)
POSTMARK = RetrySchedule(
    "postmark",
    timedelta(hours=10, minutes=30),
    "200, 403",
    "https://postmarkapp.com/support/article/understanding-inbound-webhook-retries-in-postmark",
)
SENDGRID = RetrySchedule(
    "sendgrid",
    timedelta(days=3),
    "2xx, 4xx",
    "https://www.twilio.com/docs/sendgrid/for-developers/parsing-email/inbound-email",
)
