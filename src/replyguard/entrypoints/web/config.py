"""Settings of the web workspace, from what the composition root read (`settings.Environment`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, cast

from replyguard.domain.throttle import LoginPolicy
from replyguard.settings import Environment

CookieSecure = Literal["auto", "always", "never"]


@dataclass(frozen=True, slots=True)
class WebSettings:
    #: `Secure` on the session cookie: "auto" when the request came over https (directly or,
    #: through a trusted proxy, as its X-Forwarded-Proto says), "always", or "never".
    cookie_secure: CookieSecure = "auto"
    login: LoginPolicy = field(default_factory=LoginPolicy)
    #: When set, /metrics and the details of /readyz want `Authorization: Bearer <this>`;
    #: unset, /metrics answers loopback clients only. Kept out of repr so that it is never logged.
    metrics_token: str | None = field(default=None, repr=False)
    #: The largest upload (a CSV of leads, a campaign file) a form or the API accepts.
    max_upload_bytes: int = 20 * 1024 * 1024
    #: Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (off: none).
    #: Without them the client address is the connection's: what the sign-in throttle counts.
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def of(cls, environment: Environment) -> WebSettings:
        """The web's settings as the process read them (each value is checked there)."""
        return cls(
            cookie_secure=cast(CookieSecure, environment.cookie_secure),
            metrics_token=environment.metrics_token,
            trusted_proxies=environment.trusted_proxies,
        )
