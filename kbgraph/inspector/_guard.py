"""What every response of the inspector goes through: a Host check (a page of another site
that rebinds its DNS name to 127.0.0.1 would otherwise read the inspector, token included),
a refusal of what another site's page asks for (an ``<img>`` pointing at ``/api/search``
with costly path globs cannot read the reply, but the search would run), and headers that
keep pages from running or loading anything but the app's own files
(Content-Security-Policy), from being framed, and from being cached."""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbgraph._base.hosts import LOOPBACK_HOSTS, host_name, is_ip

from ._config import InspectorConfig

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
TOKEN_HEADER = "x-kbgraph-token"


async def _refuse(send: Send, status: int, detail: str) -> None:
    """One plain-text line, with the security headers, before the app sees the request."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": detail.encode()})


def token_matches(given: str | None, config: InspectorConfig) -> bool:
    return bool(given) and hmac.compare_digest(str(given).encode(), config.token.encode())


class Guard:
    """Pure ASGI middleware: refuses other Host names (421) and requests another site's
    page sent (403), and adds the security headers."""

    def __init__(self, app: ASGIApp, config: InspectorConfig) -> None:
        self.app = app
        self.config = config

    def _allowed(self, host: str, scope: Scope) -> bool:
        """An exact name: loopback, one the config allows (the address bound), or the IP
        address this connection came in on (a server bound to every interface answers to
        the address a client dialled). A DNS name that merely resolves to 127.0.0.1
        (``127.0.0.1.rebind.example``, ``127.evil.com``) is none of them."""
        if self.config.any_host:
            return True
        name = host_name(host)
        if not name:
            return False
        if name in self.config.allowed_hosts or name in LOOPBACK_HOSTS:
            return True
        local = (scope.get("server") or ("",))[0]
        return isinstance(local, str) and is_ip(name) and name == local.lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self._allowed(host, scope):
            await _refuse(
                send,
                421,
                f"kbgraph inspect answers to loopback names and the address it listens on "
                f"only, not {host[:200]!r} (a DNS name pointing at it could be another site's); "
                "open it as http://127.0.0.1:PORT/, or name the host with --allow-host",
            )
            return
        if headers.get("sec-fetch-site") == "cross-site":
            await _refuse(
                send,
                403,
                "kbgraph inspect does not answer what another site's page asks for (the "
                "browser said Sec-Fetch-Site: cross-site); open the address it printed from "
                "the address bar, or script it with a client that is not a browser page",
            )
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


__all__ = ["SECURITY_HEADERS", "TOKEN_HEADER", "Guard", "host_name", "token_matches"]
