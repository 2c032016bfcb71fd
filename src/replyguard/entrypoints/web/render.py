"""Server-side rendering: one Jinja2 environment (autoescaped, strict), the page response with
its Content-Security-Policy, and the small filters the templates use."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from replyguard.domain.clock import Clock
from replyguard.entrypoints.web.nav import NAV
from replyguard.entrypoints.web.products import NEW_PRODUCT

#: Pages run our own script and stylesheet only. `img-src data:` is for the inline SVG icons.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; frame-src 'self'"
)

#: Badge colour of each state, by family: calm for waiting, green for done, red for trouble.
_BADGES = {
    "active": "blue",
    "scheduled": "blue",
    "awaiting_approval": "amber",
    "claimed": "violet",
    "sending": "violet",
    "sent": "green",
    "matched": "green",
    "ok": "green",
    "replied": "green",
    "human_reply": "green",
    "cancelled": "grey",
    "stopped": "grey",
    "completed": "grey",
    "waiting": "grey",
    "out_of_office": "amber",
    "probable": "amber",
    "stale": "amber",
    "held": "amber",
    "auto_reply": "grey",
    "unknown": "red",
    "failed": "red",
    "failing": "red",
    "bounced": "red",
    "bounce_hard": "red",
    "bounce_soft": "amber",
    "unparsable": "red",
    "unmatched": "amber",
    "unsubscribed": "grey",
    "unsubscribe": "grey",
    "revoked": "grey",
    "open": "blue",
    "snoozed": "grey",
    "done": "grey",
    "probable_reply": "amber",
    "unknown_outcome": "red",
    "step_failed": "red",
    "render_failed": "red",
    "left_company": "amber",
    "thread_taken": "amber",
    "confirm_sender": "amber",
    "quarantined": "red",
    "refused": "red",
    "suspect": "red",
    "passed": "green",
    "pass": "green",
    "fail": "red",
    "warn": "amber",
    "error": "red",
    "running": "violet",
    "paused": "red",
    "delivered": "green",
    "pending": "amber",
    "works": "green",  # a login `mailbox test` tried
    "fails": "red",
}


def badge_class(state: object) -> str:
    return f"badge badge-{_BADGES.get(str(state), 'grey')}"


def label(state: object) -> str:
    return str(state or "").replace("_", " ")


def when(value: datetime | date | None) -> str:
    """`Mon 7 Dec 2026, 14:05 UTC`: unambiguous and short."""
    if value is None:
        return "—"
    if isinstance(value, datetime):
        return f"{value:%a} {value.day} {value:%b %Y, %H:%M} UTC"
    return f"{value:%a} {value.day} {value:%b %Y}"


def instant(value: str | datetime | None) -> datetime | None:
    """An ISO-8601 time as the service layer's JSON-ready views carry it, as a datetime."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def duration(value: timedelta | float | int | None) -> str:
    """`3d 4h`, `12 min`, `40 s`: the two largest units."""
    if value is None:
        return "—"
    seconds = int(value.total_seconds() if isinstance(value, timedelta) else value)
    if seconds < 60:
        return f"{seconds} s"
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "min")]
    shown = [f"{n}{u}" if u != "min" else f"{n} min" for n, u in parts if n][:2]
    return " ".join(shown) or "0 s"


def _simulated_note(simulated: tuple[str, Clock] | None) -> object:
    """What the page header says on a simulated clock: a function, so each page has its time."""
    if simulated is None:
        return None
    source, clock = simulated

    def note() -> str:
        return f"Simulated clock ({source}): it is {when(clock.now())} here, not the real time."

    return note


class Renderer:
    """`simulated`: where a simulated clock came from (`--now`, `REPLYGUARD_NOW`) and the clock;
    every page then says, above everything else, that its times are not the real ones."""

    def __init__(self, simulated: tuple[str, Clock] | None = None) -> None:
        self.env = Environment(
            loader=PackageLoader("replyguard.entrypoints.web", "templates"),
            autoescape=select_autoescape(["html"]),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(badge=badge_class, label=label, when=when, duration=duration, instant=instant)
        self.env.globals.update(nav=NAV, NEW_PRODUCT=NEW_PRODUCT, simulated_clock=_simulated_note(simulated))

    def page(
        self,
        request: Request,
        template: str,
        context: Mapping[str, Any],
        *,
        status: int = 200,
        csp: str = CSP,
        headers: Mapping[str, str] | None = None,
    ) -> HTMLResponse:
        """A full page. Signed-in pages are never cached (they show workspace data)."""

        def url_with(**changes: object) -> str:
            params = {**request.query_params, **{k: str(v) for k, v in changes.items() if v is not None}}
            params = {k: v for k, v in params.items() if v != ""}
            return f"{request.url.path}?{urlencode(params)}" if params else request.url.path

        flash = getattr(request.state, "flash", ())
        html = self.env.get_template(template).render(
            {
                "request_path": request.url.path,
                "url_with": url_with,
                "viewer": None,
                "active": "",
                "flash": flash,
                **context,
            }
        )
        if flash:
            # Shown once: the session forgets them now (entrypoints/web/security.py).
            request.state.flash_shown()
            request.state.flash = ()
        all_headers = {"Content-Security-Policy": csp, "Cache-Control": "no-store", **(headers or {})}
        return HTMLResponse(html, status_code=status, headers=all_headers)
