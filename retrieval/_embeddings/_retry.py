"""What to do about a failed embedding call: pure functions, no I/O.

``classify_error`` sorts an exception into ``transient`` (wait and retry the same request),
``rejected`` (the provider refused this input: retrying the same request cannot help, but a
smaller batch may, so the batch is bisected) or ``fatal`` (configuration or programming
errors: stop and say so)."""

from __future__ import annotations

import email.utils
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

ErrorKind = Literal["transient", "rejected", "fatal"]

# The statuses the OpenAI SDK itself retries (408, 409, 429, 5xx).
_TRANSIENT_STATUSES = frozenset({408, 409, 429})
# Statuses that blame the request body: a smaller batch without the culprit may succeed.
# 413 included: a batch can be too large as a whole.
_REJECTED_STATUSES = frozenset({400, 413, 422})
# Exception classes, by module, that mean "the network or the server did not answer".
# The openai SDK ≥ 3 runs on httpx2; other providers raise httpx's errors directly.
_TRANSIENT_NAMES = {
    "openai": ("APIConnectionError",),  # includes APITimeoutError
    "httpx": ("TimeoutException", "TransportError"),
    "httpx2": ("TimeoutException", "TransportError"),
}


def _transient_types() -> tuple[type[BaseException], ...]:
    """Looked up in ``sys.modules`` rather than imported: importing openai costs a second
    or more, and a module never imported cannot have raised."""
    types: list[type[BaseException]] = [TimeoutError, ConnectionError]
    for module_name, names in _TRANSIENT_NAMES.items():
        module = sys.modules.get(module_name)
        types += [getattr(module, name) for name in names if hasattr(module, name)]
    return tuple(types)


@dataclass(frozen=True, slots=True)
class ErrorVerdict:
    kind: ErrorKind
    status: int | None = None
    retry_after: float | None = None  # seconds the server asked us to wait
    timed_out: bool = False  # the request got no answer within the client's timeout


def status_of(exc: BaseException) -> int | None:
    """HTTP status of an error from openai, httpx or any client that exposes
    ``status_code`` on the error or on its ``response``."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    value = getter(name) if getter is not None else None
    if value is None and isinstance(headers, Mapping):
        # Plain dicts are case-sensitive; HTTP header names are not.
        value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    return None if value is None else str(value)


def parse_retry_after(headers: Any, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``Retry-After``, which is either
    delay-seconds or an HTTP-date (RFC 9110 §10.2.3). ``None`` when absent or unreadable."""
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def classify_error(exc: BaseException, now: datetime | None = None) -> ErrorVerdict:
    """Sort an exception from an ``Embeddings`` call (see the module docstring)."""
    status = status_of(exc)
    if status is not None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = parse_retry_after(headers, now)
        if status in _TRANSIENT_STATUSES or status >= 500:
            return ErrorVerdict("transient", status, retry_after)
        if status in _REJECTED_STATUSES:
            return ErrorVerdict("rejected", status)
        return ErrorVerdict("fatal", status)
    if isinstance(exc, _transient_types()):
        return ErrorVerdict("transient", timed_out=_is_timeout(exc))
    return ErrorVerdict("fatal")


def _is_timeout(exc: BaseException) -> bool:
    """A timeout of the socket, httpx (``TimeoutException``) or openai (``APITimeoutError``),
    also when it is the cause of another error."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, TimeoutError) or "Timeout" in type(seen).__name__:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def backoff_delay(
    attempt: int,
    retry_after: float | None,
    *,
    jitter: float,
    base: float = 1.0,
    cap: float = 30.0,
    max_retry_after: float = 120.0,
) -> float:
    """Seconds to sleep before retry number ``attempt`` (0-based). A server's Retry-After is
    obeyed as given (up to ``max_retry_after``); otherwise exponential backoff with "equal
    jitter" — half the capped exponential delay plus a random share of the other half — from
    M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015. ``jitter`` is
    a number in [0, 1) supplied by the caller, which keeps this function pure."""
    if retry_after is not None:
        return min(max(0.0, retry_after), max_retry_after)
    ceiling = min(cap, base * (2.0**attempt))
    return ceiling / 2.0 + jitter * ceiling / 2.0


__all__ = [
    "ErrorKind",
    "ErrorVerdict",
    "backoff_delay",
    "classify_error",
    "parse_retry_after",
    "status_of",
]
