"""The list variables a server is started with (``KBGRAPH_ALLOWED_*``,
``KBGRAPH_ALLOW_HOSTS``, ``KBGRAPH_ALLOW_ORIGINS``, ``KBGRAPH_FOLDER`` ...): one rule to
read them, one to compare the URLs they list.

Reading (:func:`listed`): items are separated by commas, the folder lists by
``os.pathsep`` (``:``; ``;`` on Windows) as ``PATH`` is, and by line breaks; white space
around an item is ignored and empty items are dropped. An item holding the separator or
starting with a double quote is written in double quotes, a quote inside it doubled, as
in CSV: ``"postgresql://kb@primary,standby/kb", postgresql://kb@db/kb``. One rule for
every list: white space separated some lists, so a model spec holding a space (``gguf:``
of a path with a space) could not be listed, and commas others, so a URL of several hosts
could not be.

Comparing (:func:`url_key`): a URL's scheme and host are compared without case (a host
written with ``%`` escapes, a socket's folder, is kept as written), and a trailing ``/``
of an ``http(s)`` URL's path, or a lone ``/`` of any URL's, is ignored: a client joins
``v1`` and ``v1/`` to the same address, and ``db.example`` and ``DB.example`` name one
host. Anything else must be written as it is listed."""

from __future__ import annotations

import csv
import os
import re

_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<netloc>[^/?#\s]*)(?P<path>[^?#\s]*)")
# A host part that is names, IP addresses, ports and commas only (no escapes): case-free.
_PLAIN_HOSTS = re.compile(r"[A-Za-z0-9.,:\[\]-]*")


def listed(name: str, default: str = "", *, sep: str = ",") -> tuple[str, ...]:
    """The items of the environment variable ``name`` (``default`` when unset), read by
    the rule of the module docstring; ``sep``: ``os.pathsep`` for a list of folders."""
    raw = os.environ.get(name, default)
    items = csv.reader(raw.splitlines(), delimiter=sep, skipinitialspace=True)
    return tuple(item.strip() for row in items for item in row if item.strip())


def url_key(text: str) -> str:
    """``text`` with each URL it holds written as the module docstring compares it:
    what two spellings of one address share (``HTTP://Host:9/v1/`` → ``http://host:9/v1``)."""
    return _URL.sub(_url_form, text.strip())


def _url_form(match: re.Match[str]) -> str:
    scheme = match["scheme"].lower()
    user, at, host = match["netloc"].rpartition("@")
    if _PLAIN_HOSTS.fullmatch(host):
        host = host.lower()
    path = match["path"]
    if path == "/" or (scheme in ("http", "https") and path.endswith("/")):
        path = path[:-1]
    return f"{scheme}://{user}{at}{host}{path}"


__all__ = ["listed", "url_key"]
