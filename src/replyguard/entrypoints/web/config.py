"""Settings of the web workspace, read from the environment once (in `create_app`)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from typing import Literal

from replyguard.domain.throttle import LoginPolicy

CookieSecure = Literal["auto", "always", "never"]


def trusted_proxies(raw: str) -> tuple[str, ...]:
    """REPLYGUARD_TRUSTED_PROXIES: addresses or networks (comma- or space-separated) of the
    reverse proxies in front of the app. ValueError for anything else, "*" included: a proxy
    is named, never assumed."""
    found = []
    for item in raw.replace(",", " ").split():
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(
                f"REPLYGUARD_TRUSTED_PROXIES: {item!r} is not an IP address or network"
                " (e.g. 127.0.0.1, 10.0.0.0/8)"
            ) from None
        found.append(str(network) if "/" in item else str(network.network_address))
    return tuple(found)


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
    def from_env(cls) -> WebSettings:
        secure = os.environ.get("REPLYGUARD_COOKIE_SECURE", "auto").strip().lower() or "auto"
        if secure not in ("auto", "always", "never"):
            raise ValueError(f"REPLYGUARD_COOKIE_SECURE must be auto, always or never, got {secure!r}")
        return cls(
            cookie_secure=secure,  # type: ignore[arg-type]
            metrics_token=os.environ.get("REPLYGUARD_METRICS_TOKEN") or None,
            trusted_proxies=trusted_proxies(os.environ.get("REPLYGUARD_TRUSTED_PROXIES", "")),
        )
