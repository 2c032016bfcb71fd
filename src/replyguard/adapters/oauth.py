"""OAuth2 for connected mailboxes (Google, Microsoft): Authlib's client, never our own token code.

`OAuthClient` is one provider's client: `begin` makes the authorization URL of the code flow
with PKCE (S256) and a fresh state; `finish` trades the redirect it came back with (or the
bare code a person pasted) for a `Grant`; `refresh` gets a new access token with the refresh
token. A provider that answers `invalid_grant` (or 400/401 with no usable token: the person
took the access away, the refresh token expired) raises `GrantRevoked`; any other failure
(the network, a 5xx) raises `TokenUnavailable`, which is worth trying again later.

`xoauth2` is the SASL XOAUTH2 string IMAP and SMTP log in with (Google's and Microsoft's
documented format). Tokens are kept out of every repr and error message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol


class TokenUnavailable(RuntimeError):
    """No access token could be had now (the provider did not answer, or not usefully)."""


class GrantRevoked(TokenUnavailable):
    """The provider refused the stored grant: only a person can connect the mailbox again."""


class GrantUnusable(TokenUnavailable):
    """The stored grant cannot be used here (no configured key opens it, the provider has no
    client configured): the mailbox's own problem, though the provider may still honour it."""


class AuthorizationFailed(ValueError):
    """The redirect a person came back with is not a usable authorization (refused, a state
    that does not match, no code)."""


class TokenSource(Protocol):
    """What a login asks for an access token. `renew`: the server refused the last one, so
    get a new one from the provider whatever its expiry (a refused refresh raises GrantRevoked)."""

    def __call__(self, *, renew: bool = False) -> str: ...


@dataclass(frozen=True, slots=True)
class Grant:
    access_token: str = field(repr=False)
    refresh_token: str | None = field(repr=False)
    expires_at: datetime | None
    scope: str = ""


@dataclass(frozen=True, slots=True)
class Authorization:
    """Where to send a person, and what to remember until they come back."""

    url: str
    state: str = field(repr=False)
    code_verifier: str = field(repr=False)


def xoauth2(user: str, access_token: str) -> str:
    """The SASL XOAUTH2 initial response, before base64 (`user=...^Aauth=Bearer ...^A^A`)."""
    return f"user={user}\x01auth=Bearer {access_token}\x01\x01"


@dataclass(frozen=True, slots=True)
class OAuthClient:
    client_id: str
    client_secret: str | None = field(repr=False)
    authorize_url: str
    token_url: str
    scope: str
    redirect_uri: str
    #: Extra authorization parameters (Google: access_type=offline and prompt=consent, so that
    #: a refresh token comes back every time).
    authorize_params: tuple[tuple[str, str], ...] = ()
    timeout: float = 20.0

    def _session(self, state: str | None = None) -> Any:
        from authlib.integrations.requests_client import OAuth2Session  # noqa: PLC0415 (Authlib and requests load only to sign in or refresh: transports import this module for its errors)

        return OAuth2Session(
            client_id=self.client_id,
            client_secret=self.client_secret,
            scope=self.scope,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            state=state,
        )

    def begin(self, login_hint: str | None = None) -> Authorization:
        """The authorization URL (code flow, PKCE S256, a fresh state)."""
        from authlib.common.security import generate_token  # noqa: PLC0415 (see _session)

        verifier = generate_token(64)
        extra = dict(self.authorize_params)
        if login_hint:
            extra["login_hint"] = login_hint
        with self._session() as session:
            url, state = session.create_authorization_url(self.authorize_url, code_verifier=verifier, **extra)
        return Authorization(url, state, verifier)

    def finish(self, response: str, state: str, code_verifier: str, now: datetime) -> Grant:
        """Trade what the person came back with for a grant. `response`: the whole redirect URL
        (its state is checked) or the bare code. Raises AuthorizationFailed, GrantRevoked or
        TokenUnavailable."""
        from authlib.integrations.base_client.errors import MismatchingStateError, OAuthError  # noqa: PLC0415 (see _session)
        from authlib.oauth2.rfc6749.errors import OAuth2Error  # noqa: PLC0415 (see _session)

        response = response.strip()
        if not response:
            raise AuthorizationFailed("no redirect URL or code was given")
        if "error=" in response and "code=" not in response:
            raise AuthorizationFailed("the provider sent back a refusal (access was not granted)")
        kwargs: dict[str, Any] = {"code_verifier": code_verifier}
        if "://" in response or response.startswith("?"):
            kwargs["authorization_response"] = response
        else:
            kwargs["code"] = response
        try:
            with self._session(state) as session:
                token = session.fetch_token(self.token_url, timeout=self.timeout, **kwargs)
        except (MismatchingStateError, OAuth2Error) as exc:
            if getattr(exc, "error", "") == "invalid_grant":
                raise AuthorizationFailed(
                    "the code was refused (used already, or too old): start again"
                ) from None
            raise AuthorizationFailed(f"the authorization was refused: {_said(exc)}") from None
        except OAuthError as exc:
            raise _failure(exc) from None
        except Exception as exc:  # requests' network errors, a non-JSON answer
            raise TokenUnavailable(
                f"the token endpoint did not answer usefully: {exc.__class__.__name__}"
            ) from None
        return _grant(token, now, None)

    def refresh(self, refresh_token: str, now: datetime) -> Grant:
        """A new access token. Raises GrantRevoked or TokenUnavailable."""
        from authlib.integrations.base_client.errors import OAuthError  # noqa: PLC0415 (see _session)

        try:
            with self._session() as session:
                token = session.refresh_token(
                    self.token_url, refresh_token=refresh_token, timeout=self.timeout
                )
        except OAuthError as exc:
            raise _failure(exc) from None
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status in (400, 401):
                raise GrantRevoked(f"the provider refused the refresh (HTTP {status})") from None
            raise TokenUnavailable(
                f"the token endpoint did not answer usefully: {exc.__class__.__name__}"
            ) from None
        return _grant(token, now, refresh_token)


def _said(exc: Exception) -> str:
    error = getattr(exc, "error", None) or exc.__class__.__name__
    return str(error)[:100]


def _failure(exc: Exception) -> TokenUnavailable:
    error = getattr(exc, "error", "")
    if error in ("invalid_grant", "unauthorized_client", "invalid_client"):
        return GrantRevoked(f"the provider refused the grant ({error})")
    return TokenUnavailable(f"the provider answered {_said(exc)}")


def _grant(token: dict[str, Any], now: datetime, previous_refresh: str | None) -> Grant:
    access = token.get("access_token")
    if not access:
        raise TokenUnavailable("the token endpoint answered without an access token")
    expires_in = token.get("expires_in")
    expires_at = now + timedelta(seconds=int(expires_in)) if expires_in else None
    refresh = token.get("refresh_token") or previous_refresh
    return Grant(str(access), str(refresh) if refresh else None, expires_at, str(token.get("scope") or ""))
