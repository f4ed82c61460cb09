"""Retry policy for calls from Harbor to downstream providers.

Harbor retries a provider call when it fails in a way that is likely to be temporary:
a connection error, a timeout, or one of the HTTP statuses in ``RetryPolicy.status_codes``.
Delays follow exponential backoff with "full jitter": the delay before retry ``n`` is
drawn uniformly from ``[0, min(cap, base * 2 ** n)]``.

The defaults match ``docs/configuration.md`` (section "Retry policy").
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

DEFAULT_STATUS_CODES = frozenset({408, 429, 500, 502, 503, 504})
MAX_ALLOWED_ATTEMPTS = 10


class RetryableError(Exception):
    """A provider call failed in a way that may succeed if repeated."""

    def __init__(self, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(f"retryable failure (status={status})")
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a downstream call.

    ``max_attempts`` counts the first call: 5 means one call and up to four retries.
    """

    max_attempts: int = 5
    backoff_base_ms: int = 200
    backoff_cap_ms: int = 30_000
    status_codes: frozenset[int] = field(default=DEFAULT_STATUS_CODES)

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= MAX_ALLOWED_ATTEMPTS:
            raise ValueError(
                f"HB-301: retry.max_attempts must be between 1 and {MAX_ALLOWED_ATTEMPTS}, "
                f"got {self.max_attempts}"
            )

    def should_retry(self, status: int | None) -> bool:
        """True for connection errors and timeouts (``status is None``) and listed codes."""
        return status is None or status in self.status_codes

    def delay_ms(self, retry: int, rng: random.Random | None = None) -> float:
        """Full-jitter delay before retry number ``retry`` (1-based), in milliseconds."""
        ceiling = min(self.backoff_cap_ms, self.backoff_base_ms * 2**retry)
        return (rng or random).uniform(0, ceiling)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RetryPolicy:
        """Build a policy from ``HARBOR_RETRY_*`` variables, falling back to defaults."""
        env = os.environ if env is None else env
        codes = env.get("HARBOR_RETRY_STATUS_CODES")
        return cls(
            max_attempts=int(env.get("HARBOR_RETRY_MAX_ATTEMPTS", cls.max_attempts)),
            backoff_base_ms=int(env.get("HARBOR_RETRY_BACKOFF_BASE_MS", cls.backoff_base_ms)),
            backoff_cap_ms=int(env.get("HARBOR_RETRY_BACKOFF_CAP_MS", cls.backoff_cap_ms)),
            status_codes=(
                frozenset(int(c) for c in codes.split(",") if c.strip())
                if codes
                else DEFAULT_STATUS_CODES
            ),
        )


def call_with_retry(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``call`` until it succeeds or the policy gives up.

    A ``Retry-After`` value sent by the provider replaces the computed delay but is never
    allowed to exceed ``backoff_cap_ms``.
    """
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return call()
        except RetryableError as err:
            if attempt == policy.max_attempts or not policy.should_retry(err.status):
                raise
            delay = policy.delay_ms(attempt)
            if err.retry_after is not None:
                delay = min(err.retry_after * 1000, policy.backoff_cap_ms)
            sleep(delay / 1000)
    raise AssertionError("unreachable: the loop either returns or raises")
