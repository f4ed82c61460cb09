"""The Host names ``kbgraph mcp --http`` answers: the command's list through the SDK's own
DNS-rebinding check (:func:`kbgraph.mcp._transport.host_checks`), without a real interface
(the listening socket and the server are stand-ins, the machine's names are set)."""

from __future__ import annotations

import socket
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
    """A socket listening on ``host`` (192.0.2.2 is no interface of this machine); an IPv6
    one is dual-stack unless ``v6_only`` (``IPV6_V6ONLY``, Linux's default off)."""

    def __init__(self, host: str, *, v6_only: bool = False) -> None:
        self.host, self.v6_only = host, v6_only
        self.family = socket.AF_INET6 if ":" in host else socket.AF_INET

    def getsockname(self) -> tuple[str, int]:
        return (self.host, PORT)

    def getsockopt(self, level: int, option: int) -> int:
        assert self.family == socket.AF_INET6
        assert (level, option) == (socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)
        return int(self.v6_only)


# The address each family's route leaves from (no real interface: route_address is set).
ROUTED = {socket.AF_INET: "192.0.2.2", socket.AF_INET6: "fd00::2"}


def _answered(
    monkeypatch: pytest.MonkeyPatch, host: str, *, v6_only: bool = False
) -> tuple[str, ...]:
    """The Host names ``kbgraph mcp --http --host HOST --allow-remote`` serves with."""
    served: list[tuple[str, ...]] = []

    def serve(settings: Any, sock: Any, answered: tuple[str, ...], **_: Any) -> None:
        served.append(answered)

    listening = _Listening(host, v6_only=v6_only)
    monkeypatch.setattr(kbgraph.inspector, "listen", lambda host, port: listening)
    monkeypatch.setattr(_transport, "serve_http", serve)
    monkeypatch.setattr(_command.socket, "gethostname", lambda: "H42Box")
    monkeypatch.setattr(_command.socket, "getfqdn", lambda: "h42box.lab.example")
    monkeypatch.setattr(_command.socket, "getaddrinfo", _no_addresses)
    monkeypatch.setattr(_command, "route_address", ROUTED.get)
    _command._serve_http(cast(McpSettings, None), host, PORT, True, ())
    return served[0]


def _no_addresses(*_: object) -> list[Any]:
    raise OSError("the names resolve to nothing here")


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


@pytest.mark.parametrize(
    ("v6_only", "host", "status"),
    [
        # Dual-stack (IPV6_V6ONLY off): IPv4 clients connect too, and name the machine by
        # its IPv4 address; that got 421 while the IPv6 one got 200 (issue 42, hole 13).
        (False, f"[fd00::2]:{PORT}", 200),
        (False, f"192.0.2.2:{PORT}", 200),
        (False, f"h42box:{PORT}", 200),
        (False, f"evil.example:{PORT}", 421),
        # IPv6 only: no IPv4 client reaches it, and no IPv4 address is answered.
        (True, f"[fd00::2]:{PORT}", 200),
        (True, f"192.0.2.2:{PORT}", 421),
    ],
)
def test_every_ipv6_interface_answers_the_ipv4_addresses_when_dual_stack(
    monkeypatch: pytest.MonkeyPatch, v6_only: bool, host: str, status: int
) -> None:
    assert _status(_answered(monkeypatch, "::", v6_only=v6_only), host) == status


@pytest.mark.parametrize(
    ("host", "v6_only", "families"),
    [
        ("0.0.0.0", False, (socket.AF_INET,)),
        ("::", False, (socket.AF_INET6, socket.AF_INET)),
        ("::", True, (socket.AF_INET6,)),
    ],
)
def test_the_families_a_wildcard_socket_serves(
    host: str, v6_only: bool, families: tuple[socket.AddressFamily, ...]
) -> None:
    listening = cast(socket.socket, _Listening(host, v6_only=v6_only))
    assert _command.served_families(listening) == families


def test_the_machines_addresses_are_those_of_each_family_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_command.socket, "gethostname", lambda: "H42Box")
    monkeypatch.setattr(_command.socket, "getfqdn", lambda: "h42box.lab.example")
    monkeypatch.setattr(_command.socket, "getaddrinfo", _no_addresses)
    monkeypatch.setattr(_command, "route_address", ROUTED.get)
    both = _command.machine_addresses((socket.AF_INET6, socket.AF_INET))
    assert both == ("h42box", "h42box.lab.example", "fd00::2", "192.0.2.2")
    assert _command.machine_addresses() == ("h42box", "h42box.lab.example", "192.0.2.2")
