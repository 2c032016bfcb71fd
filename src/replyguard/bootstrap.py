"""The composition root: the one place where the world of a process is built.

`bootstrap()` reads the environment once (`settings.Environment`), then builds the engine, the
clock, the transport, the hooks and every unit of work from it; `App` hands out what a
process runs — units of work for its workspace (`uow`) or any workspace (`scoped`), notice
channels and their delivery, the model client, IMAP pollers — each wired here from the same
settings. Nothing below reaches for a global or for the environment: a use case gets what it
needs passed in, and a wire left out is an error where the process starts, not a default
somewhere deep inside (two processes could then disagree about the same setting).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, select
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import DEFAULT_URL, end_read, make_engine
from replyguard.adapters.transports.base import Transport
from replyguard.domain.clock import Clock, FixedClock, OffsetClock, SystemClock, parse_instant
from replyguard.service_layer.hooks import Hooks, NoHooks
from replyguard.service_layer.scoped import Scoped
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Environment, ModelSettings, NotifySettings, OAuthSettings, Settings

if TYPE_CHECKING:  # built on demand: most commands need none of them
    from replyguard.adapters.imap_source import Fetched, ImapPoller, Timing
    from replyguard.adapters.model_client import ModelClient
    from replyguard.adapters.notices.base import NoticeChannel
    from replyguard.adapters.oauth import OAuthClient, TokenSource
    from replyguard.adapters.secret_box import SecretBox
    from replyguard.adapters.sent_folder import SentFolder
    from replyguard.service_layer.inbound.mailbox_pollers import MailboxPollers
    from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery

DEFAULT_WORKSPACE = "default"
DEFAULT_TRANSPORT = "maildir:outbox"


class WorkspaceMissing(LookupError):
    pass


@dataclass
class App:
    engine: Engine
    clock: Clock
    settings: Settings
    transport_spec: str = DEFAULT_TRANSPORT
    workspace: str = DEFAULT_WORKSPACE
    #: The named points of the send, reply and notice paths (service_layer/hooks.py): nothing
    #: listens in the product; the audit and the tests' own wiring pass theirs.
    hooks: Hooks = field(default_factory=NoHooks)
    notify: NotifySettings = field(default_factory=NotifySettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    #: OAuth2 providers of mailboxes (Google, Microsoft): our client at each, the endpoints.
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    #: What the process read from its environment (web, logging and IMAP settings among it).
    environment: Environment = field(default_factory=Environment)
    #: The real time, for what is checked against the outside world's clock (a provider's
    #: signature window, our webhook signatures), whatever `clock` says.
    wall_clock: Clock = field(default_factory=SystemClock)
    #: Where a simulated clock came from ("--now" or "REPLYGUARD_NOW"); None on the real one.
    #: A process on a simulated clock says so at start-up, in its log lines and on every page.
    simulated: str | None = None
    #: Keys for secrets at rest, newest first (REPLYGUARD_SECRET_KEY or _FILE): never shown.
    secret_keys: tuple[str, ...] = field(default=(), repr=False)
    _transport: Transport | None = None
    #: Each connected mailbox's own transport, with the stored row it was built from.
    _mailbox_transports: dict[int, tuple[tuple[str | None, ...], Transport]] = field(
        default_factory=dict, repr=False
    )

    @property
    def postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def _read(self, query: Any) -> Any:
        """The one row (or None) of a read in a transaction of its own (`end_read`)."""
        with Session(self.engine) as session:
            row = session.execute(query).one_or_none()
            end_read(session)
        return row

    @cached_property
    def workspace_id(self) -> int:
        row = self._read(select(m.Workspace.id).where(m.Workspace.name == self.workspace))
        found: int | None = row[0] if row is not None else None
        if found is None:
            raise WorkspaceMissing(
                f"workspace {self.workspace!r} does not exist in this database: run `replyguard init`"
            )
        return found

    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.engine, self.clock, self.workspace_id, self.settings)

    @cached_property
    def scoped(self) -> Scoped:
        """Units of work for any workspace of this database (the web serves several)."""
        return Scoped(self.engine, self.clock, self.settings)

    def for_workspace(self, workspace_id: int) -> App:
        """This app for another workspace of the same database: the same engine, clock,
        settings, transport and hooks, its units of work scoped to `workspace_id` (the web's
        caller's workspace, never one named by a request)."""
        scoped = App(
            self.engine,
            self.clock,
            self.settings,
            self.transport_spec,
            hooks=self.hooks,
            notify=self.notify,
            model=self.model,
            oauth=self.oauth,
            environment=self.environment,
            wall_clock=self.wall_clock,
            simulated=self.simulated,
            secret_keys=self.secret_keys,
        )
        scoped.use_transport(self.transport)
        # `workspace_id` is a cached lookup by name; the caller knows the id already.
        scoped.__dict__["workspace_id"] = workspace_id
        return scoped

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            from replyguard.adapters.transports import make_transport

            self._transport = make_transport(self.transport_spec)
        return self._transport

    def use_transport(self, transport: Transport) -> None:
        self._transport = transport

    def secret_box(self) -> SecretBox | None:
        """What encrypts and decrypts secrets at rest, or None when no key is configured."""
        if not self.secret_keys:
            return None
        from replyguard.adapters.secret_box import SecretBox

        return SecretBox(self.secret_keys)

    def transport_for(self, mailbox_id: int | None, conn: Connection | None = None) -> Transport:
        """The transport that sends for a mailbox: its own SMTP server, logged in as itself,
        when it is connected (`replyguard mailbox add`); the default transport otherwise.
        `conn`: read the mailbox through it (a caller inside a transaction on SQLite, whose
        write lock a second connection would wait for).

        Built once per mailbox and built again when its stored account changes (one small
        read per call). A mailbox whose password cannot be read (no key, a key removed too
        soon) gets a transport that refuses every send as the mailbox's own problem, so the
        worker pauses the mailbox and tells its owners instead of failing the email."""
        if mailbox_id is None:
            return self.transport
        query = select(
            m.Mailbox.address, m.Mailbox.smtp_url, m.Mailbox.secret, m.Mailbox.oauth_provider
        ).where(m.Mailbox.id == mailbox_id, m.Mailbox.workspace_id == self.workspace_id)
        row = conn.execute(query).one_or_none() if conn is not None else self._read(query)
        if row is None or row.smtp_url is None:
            return self.transport
        stamp = (row.smtp_url, row.secret, row.oauth_provider)
        cached = self._mailbox_transports.get(mailbox_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if row.oauth_provider is not None:
            transport = self._oauth_transport(mailbox_id, row.address, row.smtp_url)
        else:
            transport = self._mailbox_transport(row.address, row.smtp_url, row.secret)
        self._mailbox_transports[mailbox_id] = (stamp, transport)
        if cached is not None:
            cached[1].close()
        return transport

    def sent_folder_for(self, mailbox_id: int | None) -> SentFolder | None:
        """Where a copy of each email the mailbox sends is appended: its IMAP account's Sent
        folder, when it has one and its provider does not save sent mail itself (Google and
        Microsoft do: `domain.sent_copies`). None otherwise, or when its password cannot be
        read (the send itself decides what that means)."""
        from replyguard.adapters.imap_source import ImapUrlError, parse_imap_url
        from replyguard.adapters.secret_box import NoSecretKey, SecretUnreadable
        from replyguard.adapters.sent_folder import SentFolder
        from replyguard.adapters.transports.smtp import SmtpSettings
        from replyguard.domain.sent_copies import provider_saves_sent
        from replyguard.service_layer.workspace.mailbox_accounts import passwords_of, with_password

        if mailbox_id is None:
            return None
        query = select(
            m.Mailbox.address, m.Mailbox.smtp_url, m.Mailbox.imap_url, m.Mailbox.sent_folder, m.Mailbox.secret
        ).where(m.Mailbox.id == mailbox_id, m.Mailbox.workspace_id == self.workspace_id)
        row = self._read(query)
        if row is None or not (row.imap_url and row.sent_folder and row.smtp_url):
            return None
        try:
            if provider_saves_sent(SmtpSettings.from_url(row.smtp_url).host):
                return None
            password = passwords_of(row.secret, self.secret_box(), row.address).get("imap")
            if password is None:
                return None
            return SentFolder(parse_imap_url(with_password(row.imap_url, password), row.sent_folder))
        except (NoSecretKey, SecretUnreadable, ImapUrlError, ValueError):
            return None

    def _mailbox_transport(self, address: str, smtp_url: str, secret: str | None) -> Transport:
        from replyguard.adapters.secret_box import NoSecretKey, SecretUnreadable
        from replyguard.adapters.transports.refusing import RefusingTransport
        from replyguard.adapters.transports.smtp import SmtpTransport
        from replyguard.service_layer.workspace.mailbox_accounts import smtp_settings_of

        try:
            return SmtpTransport(smtp_settings_of(address, smtp_url, secret, self.secret_box()))
        except (NoSecretKey, SecretUnreadable, ValueError) as exc:
            return RefusingTransport(f"the mailbox's own SMTP account cannot be used: {exc}")

    def _oauth_transport(self, mailbox_id: int, address: str, smtp_url: str) -> Transport:
        from dataclasses import replace

        from replyguard.adapters.transports.refusing import RefusingTransport
        from replyguard.adapters.transports.smtp import SmtpSettings, SmtpTransport

        try:
            parsed = SmtpSettings.from_url(smtp_url)
        except ValueError as exc:
            return RefusingTransport(f"the mailbox's own SMTP account cannot be used: {exc}")
        username = parsed.username or address
        return SmtpTransport(replace(parsed, username=username, oauth_token=self.oauth_token(mailbox_id)))

    def oauth_client(self, provider: str) -> OAuthClient:
        """Our OAuth2 client at `provider` (google, microsoft). Raises ValueError for a provider
        we have no client id for (REPLYGUARD_GOOGLE_CLIENT_ID, REPLYGUARD_MICROSOFT_CLIENT_ID)."""
        from replyguard.adapters.oauth import OAuthClient

        found = self.oauth.provider(provider)
        if found.client_id is None:
            prefix = f"REPLYGUARD_{found.name.upper()}_"
            raise ValueError(
                f"{found.label} sign-in is not configured: set {prefix}CLIENT_ID and {prefix}CLIENT_SECRET"
                f" (an OAuth client registered with {found.label}; see docs/architecture.md)"
            )
        return OAuthClient(
            client_id=found.client_id,
            client_secret=found.client_secret,
            authorize_url=found.authorize_url,
            token_url=found.token_url,
            scope=found.scope,
            redirect_uri=self.oauth.redirect_for(self.settings.public_url),
            authorize_params=found.authorize_params,
        )

    def oauth_token(self, mailbox_id: int) -> TokenSource:
        """What an OAuth2 mailbox's SMTP and IMAP logins call for an access token: the stored
        one, refreshed when less than the margin is left (against the real clock: the
        provider's). A refused grant pauses the mailbox and tells its owners."""
        from replyguard.service_layer.workspace.mailbox_oauth import access_token

        workspace_id = self.workspace_id

        def token(*, renew: bool = False) -> str:
            return access_token(
                self.scoped,
                self.secret_box(),
                self.oauth_client,
                workspace_id=workspace_id,
                mailbox_id=mailbox_id,
                now=self.wall_clock.now,
                margin=self.oauth.refresh_margin,
                renew=renew,
            )

        return token

    def notice_channels(self) -> list[NoticeChannel]:
        """The configured notice channels: an email to the owner through the transport (unless
        REPLYGUARD_NOTIFY_EMAIL=0), the signed webhook, the Slack-compatible one. Raises
        ValueError for a transport that does not parse."""
        from replyguard.adapters.notices import make_channels

        return make_channels(self.notify, self.transport if self.notify.email else None, self.wall_clock)

    def model_client(self) -> ModelClient | None:
        """The language model for drafts and intents, or None when REPLYGUARD_MODEL_URL is unset."""
        if self.model.url is None:
            return None
        from replyguard.adapters.model_client import ModelClient

        return ModelClient(self.model.url, self.model.model, self.model.api_key, self.model.timeout)

    def notice_delivery(self, channels: list[NoticeChannel] | None = None) -> NoticeDelivery:
        """The notice outbox's delivery to `channels` (by default the configured ones), with the
        model's drafts before each pass when a model is configured."""
        from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery

        drafts: Callable[[], int] | None = None
        client = self.model_client()
        if client is not None:
            from replyguard.service_layer.rescue.drafting import draft_pending

            def drafts() -> int:
                return draft_pending(self, client)

        found = self.notice_channels() if channels is None else channels
        return NoticeDelivery(self, found, self.notify, before_pass=drafts)

    def imap_poller(
        self,
        url: str,
        handle: Callable[[Fetched], None] | None = None,
        *,
        folder: str | None = None,
        timing: Timing | None = None,
        use_idle: bool = True,
        owner: str | None = None,
        history: bool = False,
        token: TokenSource | None = None,
    ) -> ImapPoller:
        """A poller for one IMAP folder, wired to this app's cursor table, lease and health.

        `handle`: by default `ingest_fetched(app)`. `token`: an OAuth2 mailbox's access
        tokens (its URL holds no password). `history`: on the folder's first start,
        import the mail already there as history (otherwise reading starts from now). Raises
        ImapUrlError for a URL that does not parse.
        """
        from replyguard.adapters.imap_source import ImapPoller, parse_imap_url
        from replyguard.service_layer.inbound.pollers import DbCursorStore, SourceLease, ingest_fetched
        from replyguard.service_layer.inbound.source_health import RecordedHealth

        source = parse_imap_url(url, folder, token)
        return ImapPoller(
            source,
            DbCursorStore(self, source.key),
            SourceLease(self, source.key, owner),
            handle or ingest_fetched(self),
            timing=timing,
            use_idle=use_idle,
            history=history,
            max_bytes=self.settings.message_max_bytes,
            health=RecordedHealth(self, source.key, source.password),
        )

    def mailbox_pollers(
        self,
        handle: Callable[[Fetched], None] | None = None,
        *,
        timing: Timing | None = None,
        history: bool = False,
    ) -> MailboxPollers:
        """One poller for every connected mailbox: each watched folder of each mailbox with an
        IMAP account, read by its own `imap_poller`, the list read again while it runs."""
        from replyguard.service_layer.inbound.mailbox_pollers import MailboxPollers
        from replyguard.service_layer.workspace.mailbox_accounts import OAuthFolder, watched_sources

        def sources() -> dict[str, str | OAuthFolder]:
            with self.uow() as uow:
                return watched_sources(uow, self.secret_box())

        def make(found: str | OAuthFolder) -> ImapPoller:
            if isinstance(found, OAuthFolder):
                token = self.oauth_token(found.mailbox_id)
                return self.imap_poller(found.url, handle, timing=timing, history=history, token=token)
            return self.imap_poller(found, handle, timing=timing, history=history)

        return MailboxPollers(sources, make)

    def init_database(self) -> int:
        """Migrate to the newest schema and make sure this app's workspace exists."""
        # Alembic and Mako load only for `init`, not on every command.
        from replyguard.adapters.db.migrate import lock_for_migrations, upgrade

        upgrade(self.engine)
        with Session(self.engine) as session, session.begin():
            # Concurrent inits: the first creates the workspace, the others wait here for it.
            lock_for_migrations(session.connection())
            found = session.scalar(select(m.Workspace).where(m.Workspace.name == self.workspace))
            if found is None:
                found = m.Workspace(
                    name=self.workspace, secret=secrets.token_hex(32), created_at=self.clock.now()
                )
                session.add(found)
                session.flush()
            workspace_id = found.id
        self.__dict__["workspace_id"] = workspace_id
        return workspace_id

    def close(self) -> None:
        """Close the transport and every pooled connection; closing twice is harmless."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        for _stamp, own in self._mailbox_transports.values():
            own.close()
        self._mailbox_transports.clear()
        self.engine.dispose()  # (on SQLite this also stops the log's checkpoint thread: wal.py)


def make_clock(now: str | None, *, running: bool = False) -> Clock:
    """`--now` as a fixed instant for one-shot commands, or a running one for long loops."""
    if not now:
        return SystemClock()
    instant = parse_instant(now)
    return OffsetClock(instant) if running else FixedClock(instant)


def bootstrap(
    db_url: str | None = None,
    *,
    now: str | None = None,
    running_clock: bool = False,
    transport: str | None = None,
    workspace: str | None = None,
    clock: Clock | None = None,
    hooks: Hooks | None = None,
    environment: Environment | None = None,
    worker: bool = False,
) -> App:
    """The App of one process. The arguments are the command line's global options, which win
    over the environment; `clock` is for a caller that moves time itself (the demo), `hooks`
    for one that watches the paths (the tests' fault worker); `worker` for the guarded worker's
    process (no pre-ping on its engine, and a pool large enough for its send slots: each slot
    uses two connections at once). Raises ValueError for a setting that does not parse."""
    env = Environment.read() if environment is None else environment
    instant = now or env.now
    return App(
        engine=make_engine(
            db_url or env.database_url or DEFAULT_URL,
            pool_size=max(5, 2 * env.settings.send_slots + 1),
            pre_ping=not worker,
        ),
        clock=clock or make_clock(instant, running=running_clock),
        settings=env.settings,
        transport_spec=transport or env.transport or DEFAULT_TRANSPORT,
        workspace=workspace or env.workspace or DEFAULT_WORKSPACE,
        hooks=hooks or NoHooks(),
        notify=env.notify,
        model=env.model,
        oauth=env.oauth,
        environment=env,
        simulated=None if not instant else "--now" if now else "REPLYGUARD_NOW",
        secret_keys=env.secret_keys,
    )
