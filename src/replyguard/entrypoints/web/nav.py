"""The navigation of every page, in one place: a new area adds one line here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NavItem:
    key: str
    label: str
    href: str


# The Reply Rescue inbox slots in first, when its pages land:
#     NavItem("inbox", "Inbox", "/inbox"),
NAV: tuple[NavItem, ...] = (
    NavItem("campaigns", "Campaigns", "/campaigns"),
    NavItem("leads", "Leads", "/leads"),
    NavItem("inbound", "Inbound", "/inbound"),
    NavItem("reports", "Reports", "/reports"),
    NavItem("settings", "API tokens", "/settings/tokens"),
)

#: Where a person lands after signing in (the Rescue inbox, once it exists).
HOME = "/campaigns"
