"""Signing and verifying Harbor webhook deliveries.

Every delivery carries a ``Harbor-Signature`` header of the form ``t=<unix time>,v1=<hex>``
where ``v1`` is the HMAC-SHA256 of ``"{t}.{raw body}"`` keyed with the endpoint's
``whsec_`` secret. See ``docs/api/webhooks.md``.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Harbor-Signature"
EVENT_ID_HEADER = "Harbor-Event-Id"
DEFAULT_TOLERANCE_SECONDS = 300

EVENT_TYPES = (
    "order.created",
    "order.confirmed",
    "order.shipped",
    "order.delivered",
    "order.cancelled",
)

# Seconds to wait after a failed delivery before each retry (7 attempts in all).
DELIVERY_SCHEDULE_SECONDS = (60, 300, 1800, 7200, 21600, 43200)


class SignatureError(ValueError):
    """The delivery is not signed by Harbor with this secret (error HB-601)."""


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """Return the value of the ``Harbor-Signature`` header for ``body``."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256)
    return f"t={t},v1={mac.hexdigest()}"


def _parse(header: str) -> tuple[int, str]:
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        return int(parts["t"]), parts["v1"]
    except (KeyError, ValueError) as err:
        raise SignatureError(f"malformed {SIGNATURE_HEADER} header: {header!r}") from err


def verify_signature(
    secret: str,
    body: bytes,
    header: str,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: int | None = None,
) -> None:
    """Raise ``SignatureError`` unless ``header`` is a valid, fresh signature of ``body``.

    ``body`` must be the raw bytes as received: parsing and re-serialising the JSON changes
    whitespace and key order and breaks the signature.
    """
    t, received = _parse(header)
    current = int(time.time()) if now is None else now
    if abs(current - t) > tolerance:
        raise SignatureError(f"timestamp {t} is more than {tolerance} seconds from now")
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, received):
        raise SignatureError("signature does not match the body")


def next_attempt_delay(failed_attempts: int) -> int | None:
    """Seconds until the next delivery attempt, or None when all 7 attempts are used."""
    if failed_attempts < 1 or failed_attempts > len(DELIVERY_SCHEDULE_SECONDS):
        return None
    return DELIVERY_SCHEDULE_SECONDS[failed_attempts - 1]
