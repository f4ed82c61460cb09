"""The Host names ``kbgraph mcp --http`` answers: the command's list through the SDK's own
DNS-rebinding check (:func:`kbgraph.mcp._transport.host_checks`), without a real interface
(the listening socket and the server are stand-ins, the machine's names are set)."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

import kbgraph.inspector
from kbgraph.mcp import McpSettings, _command, _transport
from kbgraph.mcp._transport import host_checks

PORT = 8766


class _Listening:
    """A socket listening on ``host`` (192.0.2.2 is no interface of this machine)."""

    def __init__(self, host: str) -> None:
        self.host = host

    def getsockname(self) -> tuple[str, int]:
        return (self.host, PORT)


def _answered(monkeypatch: pytest.MonkeyPatch, host: str) -> tuple[str, ...]:
    """The Host names ``kbgraph mcp --http --host HOST --allow-remote`` serves with."""
    served: list[tuple[str, ...]] = []

    def serve(settings: Any, sock: Any, answered: tuple[str, ...], **_: Any) -> None:
        served.append(answered)

    monkeypatch.setattr(kbgraph.inspector, "listen", lambda host, port: _Listening(host))
    monkeypatch.setattr(_transport, "serve_http", serve)
    monkeypatch.setattr(_command.socket, "gethostname", lambda: "H42Box")
    monkeypatch.setattr(_command.socket, "getfqdn", lambda: "h42box.lab.example")
    _command._serve_http(cast(McpSettings, None), host, PORT, True, ())
    return served[0]


def _status(answered: tuple[str, ...], host: str) -> int:
    """What the SDK's check answers a POST naming ``host``: 200 when it passes."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", host.encode()), (b"content-type", b"application/json")],
    }
    check = TransportSecurityMiddleware(host_checks(answered))
    refused = anyio.run(check.validate_request, Request(scope), True)
    return 200 if refused is None else refused.status_code


@pytest.mark.parametrize(
    ("bound", "host", "status"),
    [
        # One address of the machine's, with --allow-remote: clients name the address or
        # the machine (its name was refused with 421, issue 42).
        ("192.0.2.2", f"192.0.2.2:{PORT}", 200),
        ("192.0.2.2", f"h42box:{PORT}", 200),
        ("192.0.2.2", "h42box.lab.example", 200),
        ("192.0.2.2", f"127.0.0.1:{PORT}", 200),
        ("192.0.2.2", f"evil.example:{PORT}", 421),
        ("192.0.2.2", f"192.0.2.2.rebind.example:{PORT}", 421),
        # Loopback: as strict as before, the machine's name included (a page's DNS name
        # rebound to 127.0.0.1 names anything but loopback).
        ("127.0.0.1", f"127.0.0.1:{PORT}", 200),
        ("127.0.0.1", f"localhost:{PORT}", 200),
        ("127.0.0.1", f"h42box:{PORT}", 421),
        ("127.0.0.1", f"127.0.0.1.rebind.example:{PORT}", 421),
    ],
)
def test_a_bound_address_answers_the_machines_names_and_loopback_stays_strict(
    monkeypatch: pytest.MonkeyPatch, bound: str, host: str, status: int
) -> None:
    assert _status(_answered(monkeypatch, bound), host) == status


def test_every_interface_answers_the_machines_names_too(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = _answered(monkeypatch, "0.0.0.0")
    assert {"h42box", "h42box.lab.example", "127.0.0.1"} <= set(answered)
    assert _status(answered, f"evil.example:{PORT}") == 421
