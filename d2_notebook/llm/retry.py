"""Retries with exponential backoff, shared by the real providers.

The SDKs' own retries are switched off (``max_retries=0``) so that ours are the only
ones: one policy for every provider, visible in tests, bounded by our settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
"""Client-side statuses worth retrying; every 5xx (and 529 overloaded) is retried too."""


def is_retryable_status(status: int | None) -> bool:
    """True for 408, 409, 429 and every 5xx status."""
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's ``retry-after-ms`` / ``retry-after`` (seconds) hint, if simple."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return None  # an HTTP date: fall back to our own backoff
    return None


def backoff_delay(exc: BaseException, attempt: int, base_delay: float, max_delay: float) -> float:
    """Seconds to wait before retry number ``attempt + 1``: the server's hint if it
    gave one, else ``base_delay * 2**attempt``; never more than ``max_delay``."""
    hint = retry_after_seconds(exc)
    delay = hint if hint is not None else base_delay * (2**attempt)
    return min(delay, max_delay)


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retryable: Callable[[Exception], bool],
    max_retries: int,
    base_delay: float,
    max_delay: float,
) -> T:
    """Await ``call()``; on a retryable exception wait and try again, at most
    ``max_retries`` more times. The last exception propagates unchanged."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            if attempt >= max_retries or not retryable(exc):
                raise
            await asyncio.sleep(backoff_delay(exc, attempt, base_delay, max_delay))
            attempt += 1
