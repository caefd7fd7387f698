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
    on_failure: Callable[[Exception, bool], None] | None = None,
    before_retry: Callable[[], None] | None = None,
) -> T:
    """Await ``call()``; on a retryable exception wait and try again, at most
    ``max_retries`` more times. The last exception propagates unchanged.

    ``on_failure(exc, retrying)`` (optional) is called at once after every failed call;
    ``retrying`` says whether it will be retried. ``before_retry()`` (optional) is called
    after the backoff, just before each retry; an exception it raises stops the retries
    and propagates instead (a budget with no room left for another call).
    """
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            retrying = attempt < max_retries and retryable(exc)
            if on_failure is not None:
                on_failure(exc, retrying)
            if not retrying:
                raise
            await asyncio.sleep(backoff_delay(exc, attempt, base_delay, max_delay))
            if before_retry is not None:
                before_retry()
            attempt += 1
