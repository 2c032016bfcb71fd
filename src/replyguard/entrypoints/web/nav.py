"""The navigation of every page, in one place: a new area adds one line here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NavItem:
    key: str
    label: str
    href: str
    capability: str = "read"  # shown to those who have it (domain/access.py)


NAV: tuple[NavItem, ...] = (
    NavItem("inbox", "Inbox", "/inbox"),
    NavItem("campaigns", "Campaigns", "/campaigns"),
    NavItem("leads", "Leads", "/leads"),
    NavItem("inbound", "Inbound", "/inbound"),
    NavItem("mailboxes", "Mailboxes", "/mailboxes"),
    NavItem("reports", "Reports", "/reports"),
    NavItem("audit", "Audit", "/audit"),
    NavItem("settings", "API tokens", "/settings/tokens"),
    NavItem("users", "Users", "/settings/users", "users"),
)

#: Where a person lands after signing in: the Reply Rescue inbox, what waits for them.
HOME = "/inbox"
