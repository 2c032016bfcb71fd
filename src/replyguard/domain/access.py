"""Who may do what: roles of people, scopes of API tokens, and the capability every page, API
route and use case declares. Pure: no database, no web.

Three levels of rights, in order: `read` (see everything of the workspace), `write` (the daily
work: decide on threads and answer them, import and enroll leads, approve steps, retry an
inbound message, keep one's own API tokens) and `admin` (create campaigns, resume mailboxes,
manage users and everybody's tokens, start an audit). A person's role gives a level (`readonly` → read,
`member` → write, `admin` and `owner` → admin); an owner also manages owners and admins. A
token's scope is a level, never more than the level of the person it acts for.

The command line is the operator of the machine (it reads the database directly): it acts as
an owner and is checked by nothing here.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum, StrEnum


class Level(IntEnum):
    READ = 1
    WRITE = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Level:
        """`read`, `write` or `admin` (a token's scope); ValueError otherwise."""
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"a scope is read, write or admin, not {text[:40]!r}") from None


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    READONLY = "readonly"

    @property
    def level(self) -> Level:
        return _ROLE_LEVELS[self]

    @classmethod
    def parse(cls, text: str) -> Role:
        try:
            return cls(text.strip().lower().replace("-", ""))
        except ValueError:
            raise ValueError(f"a role is one of {', '.join(ROLES)}, not {text[:40]!r}") from None


_ROLE_LEVELS = {Role.OWNER: Level.ADMIN, Role.ADMIN: Level.ADMIN, Role.MEMBER: Level.WRITE,
                Role.READONLY: Level.READ}  # fmt: skip
ROLES = tuple(r.value for r in Role)


class Capability(StrEnum):
    """What a route needs. Each has one level (`LEVELS`); the route walk in
    tests/web/test_tenant_isolation.py proves every route declares one."""

    READ = "read"  # every page and every GET of the API
    ACCOUNT = "account"  # one's own password and sessions
    THREADS = "threads"  # decisions on Reply Rescue threads, a person's answer
    LEADS = "leads"  # import leads, enroll them
    APPROVE = "approve"  # approve waiting steps
    INBOUND = "inbound"  # retry a quarantined message
    TOKENS = "tokens"  # one's own API tokens (never more rights than one's own)
    CAMPAIGNS = "campaigns"  # create a campaign
    MAILBOXES = "mailboxes"  # resume a paused mailbox
    USERS = "users"  # add, disable, enable, remove users; roles; passwords; sessions; unlock
    AUDIT = "audit"  # start an audit run from the web (it sends real email to the canary)

    @property
    def level(self) -> Level:
        return LEVELS[self]


LEVELS: dict[Capability, Level] = {
    Capability.READ: Level.READ,
    Capability.ACCOUNT: Level.READ,
    Capability.THREADS: Level.WRITE,
    Capability.LEADS: Level.WRITE,
    Capability.APPROVE: Level.WRITE,
    Capability.INBOUND: Level.WRITE,
    Capability.TOKENS: Level.WRITE,
    Capability.CAMPAIGNS: Level.ADMIN,
    Capability.MAILBOXES: Level.ADMIN,
    Capability.USERS: Level.ADMIN,
    Capability.AUDIT: Level.ADMIN,
}


@dataclass(frozen=True, slots=True)
class Principal:
    """Who acts: a signed-in person, an API token, or the operator at the command line.

    `label` is recorded as who did it; `level` is what they may do (for a token: its scope,
    capped by its person's role); `role` is the role they act with on other users (None: the
    operator, who may do anything); `user_id` is the person, if any; `token_id` and
    `token_expires_at` the token acting, if any."""

    label: str
    level: Level
    role: Role | None
    user_id: int | None = None
    token_id: int | None = None
    token_expires_at: datetime | None = None

    @classmethod
    def operator(cls, label: str = "cli") -> Principal:
        return cls(label, Level.ADMIN, None)

    def can(self, capability: Capability) -> bool:
        return allows(self.level, capability)

    def require(self, capability: Capability) -> None:
        require(self.level, capability, self.label)


class AccessDenied(PermissionError):
    """The person or token may not do this (the message says what it needs)."""


def plain_name(text: str, what: str, longest: int) -> str:
    """A name a person gives (a token's, a user's): spaces folded; ValueError for control
    characters or unpaired surrogates, which no database or page should carry."""
    name = " ".join(text.split())
    if any(unicodedata.category(c) in ("Cc", "Cs", "Cf") for c in name):
        raise ValueError(f"{what} may not contain control characters")
    if len(name) > longest:
        raise ValueError(f"{what} may have at most {longest} characters")
    return name


def allows(level: Level, capability: Capability) -> bool:
    return level >= capability.level


def require(level: Level, capability: Capability, who: str) -> None:
    """AccessDenied unless `level` is enough for `capability`; `who` names the caller."""
    if not allows(level, capability):
        raise AccessDenied(
            f"{who} may not do this: {capability.value} needs {capability.level.label} rights,"
            f" {who} has {level.label}"
        )


def token_level(scope: Level, role: Role | None) -> Level:
    """What a token may do: its scope, never more than its person's role (none: the operator's)."""
    return scope if role is None else min(scope, role.level)


def check_role_change(actor: Role | None, target: Role, new: Role | None) -> None:
    """May `actor` (None: the operator at the command line) change a user of role `target` to
    `new` (None: disable, remove, reset their password, end their sessions)? Only an owner
    acts on an owner or makes one; an admin manages members, read-only users and admins."""
    if actor is None or actor is Role.OWNER:
        return
    if actor is not Role.ADMIN:
        raise AccessDenied("only an owner or an admin manages users")
    if target is Role.OWNER or new is Role.OWNER:
        raise AccessDenied("only an owner acts on an owner or makes someone an owner")
