"""Host headers of the servers kbgraph runs or guards: which names are loopback, and the
name a ``Host`` header carries (the inspector's guard and the guard of ``langgraph dev``'s
routes compare it; a DNS name rebound to 127.0.0.1 must not pass as loopback)."""

from __future__ import annotations

import ipaddress
import re

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

# A Host header: a name or IPv4 address, or a bracketed IPv6 address, and an optional port.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^\[\]:]+))(?::[0-9]{1,5})?")


def host_name(host: str) -> str:
    """``127.0.0.1:8765`` → ``127.0.0.1``; ``[::1]:8765`` → ``::1``; a bare ``::1`` stays;
    anything else that is not a host and port (``[::1]x``, ``a:b:c``) → ``""``."""
    host = host.strip().lower()
    match = _HOST.fullmatch(host)
    if match is None:
        return host if is_ip(host) else ""
    return match["v6"] or match["name"]


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


__all__ = ["LOOPBACK_HOSTS", "host_name", "is_ip"]
