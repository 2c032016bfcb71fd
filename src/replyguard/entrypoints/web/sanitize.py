"""Inbound HTML made safe to look at: nh3 (ammonia) with a mail-shaped allow-list.

What comes out has no script, event handler, form, frame, object, SVG or MathML, no
`javascript:`/`data:` or relative URL (a relative URL would reach our own origin), and
inline styles limited to properties that cannot load anything. It is shown only inside an
`<iframe sandbox srcdoc>` without allow-scripts, under the page's CSP: three layers, so one
mistake is not enough. Remote images (trackers) are dropped unless the person asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import nh3

_TAGS = (set(nh3.ALLOWED_TAGS) - {"map", "area"}) | {"font"}
_ATTRIBUTES: dict[str, set[str]] = {
    **{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
    "*": {"style", "dir", "lang", "title", "align", "valign", "width", "height", "bgcolor"},
    "a": {"href", "title", "hreflang"},
    "font": {"color", "face", "size"},
    "table": {"summary", "align", "border", "cellpadding", "cellspacing", "width", "bgcolor"},
}
#: None of these can name a URL (no background, no border-image, no content, no cursor).
_STYLES = {
    "color",
    "background-color",
    "font",
    "font-family",
    "font-size",
    "font-style",
    "font-weight",
    "line-height",
    "letter-spacing",
    "text-align",
    "text-decoration",
    "text-transform",
    "vertical-align",
    "white-space",
    "width",
    "max-width",
    "min-width",
    "height",
    "margin",
    "margin-top",
    "margin-bottom",
    "margin-left",
    "margin-right",
    "padding",
    "padding-top",
    "padding-bottom",
    "padding-left",
    "padding-right",
    "border",
    "border-top",
    "border-bottom",
    "border-left",
    "border-right",
    "border-color",
    "border-style",
    "border-width",
    "border-collapse",
    "border-spacing",
    "border-radius",
    "display",
}
_LINK_SCHEMES = ("http://", "https://", "mailto:")
_IMAGE_SCHEMES = ("http://", "https://")


@dataclass(frozen=True, slots=True)
class SafeHtml:
    html: str
    blocked_images: int  # remote images left out (0 when they were allowed)


def sanitize_email_html(html: str, *, remote_images: bool = False) -> SafeHtml:
    blocked = 0

    def keep(tag: str, attribute: str, value: str) -> str | None:
        nonlocal blocked
        if attribute not in ("href", "src"):
            return value
        url = value.strip()
        if attribute == "href":
            return url if url.lower().startswith(_LINK_SCHEMES) else None
        if tag == "img" and url.lower().startswith(_IMAGE_SCHEMES):
            if remote_images:
                return url
            blocked += 1
        return None

    cleaned = nh3.Cleaner(
        tags=_TAGS,
        clean_content_tags={"script", "style", "title", "noscript"},
        attributes=_ATTRIBUTES,
        attribute_filter=keep,
        url_schemes={"http", "https", "mailto"},
        filter_style_properties=_STYLES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    ).clean(html)
    return SafeHtml(cleaned, blocked)


def message_csp(*, remote_images: bool) -> str:
    """The message page's policy. The sandboxed srcdoc frame inherits it, so its inline styles
    need 'unsafe-inline' for styles (never for scripts); remote images only when asked for."""
    images = "'self' data: https: http:" if remote_images else "'self' data:"
    return (
        f"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src {images}; "
        "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; frame-src 'self'"
    )
