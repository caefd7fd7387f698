"""Defaults of the model layer and the switch that blocks real model requests.

The switch follows pydantic-ai: tests set ``d2_notebook.llm.ALLOW_MODEL_REQUESTS =
False`` (or run under :func:`block_model_requests`, or set the environment variable
``D2_BLOCK_MODEL_REQUESTS=1``) and every real provider then fails loudly with
:class:`~d2_notebook.errors.ModelRequestsBlockedError` *before* any network I/O.
Offline models (``ScriptedModel``, ``FunctionModel``, ``ReplayModel``) ignore it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from d2_notebook.errors import ModelRequestsBlockedError

DEFAULT_PROVIDER = "anthropic"
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_RETRIES = 4
"""Retries after the first attempt on 429, 5xx, 529 overloaded and connection errors."""
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_RETRY_BASE_DELAY_S = 1.0
DEFAULT_RETRY_MAX_DELAY_S = 60.0

BLOCK_ENV = "D2_BLOCK_MODEL_REQUESTS"
MODEL_ENV = "D2_MODEL"


def default_model_name() -> str:
    """The model used when none is named: ``$D2_MODEL``, else ``anthropic:claude-sonnet-4-6``."""
    return os.environ.get(MODEL_ENV) or f"{DEFAULT_PROVIDER}:{DEFAULT_ANTHROPIC_MODEL}"


def model_requests_allowed() -> bool:
    """True unless ``d2_notebook.llm.ALLOW_MODEL_REQUESTS`` is False or
    ``D2_BLOCK_MODEL_REQUESTS`` is set to a true value (``1``, ``true``, ``yes``)."""
    import d2_notebook.llm as llm  # the switch lives on the package, read at call time

    if not getattr(llm, "ALLOW_MODEL_REQUESTS", True):
        return False
    return os.environ.get(BLOCK_ENV, "").strip().lower() not in {"1", "true", "yes"}


def check_model_requests_allowed(model_name: str) -> None:
    """Raise if real model requests are blocked. Real providers call this first.

    Raises:
        ModelRequestsBlockedError: requests are blocked (tests, CI).
    """
    if not model_requests_allowed():
        raise ModelRequestsBlockedError(
            f"real model requests are blocked (tests); {model_name} was not called; "
            "use ScriptedModel/FunctionModel from d2_notebook.llm.offline, or unset "
            f"{BLOCK_ENV} / set d2_notebook.llm.ALLOW_MODEL_REQUESTS = True"
        )


@contextmanager
def block_model_requests(blocked: bool = True) -> Iterator[None]:
    """Within the block, set ``d2_notebook.llm.ALLOW_MODEL_REQUESTS = not blocked``;
    restore the previous value afterwards.

    This flips a process-wide flag: use it around whole tests, not around one of
    several concurrent tasks.
    """
    import d2_notebook.llm as llm

    previous = llm.ALLOW_MODEL_REQUESTS
    llm.ALLOW_MODEL_REQUESTS = not blocked
    try:
        yield
    finally:
        llm.ALLOW_MODEL_REQUESTS = previous


def allow_model_requests() -> AbstractContextManager[None]:
    """The opposite of :func:`block_model_requests` (the env variable still blocks)."""
    return block_model_requests(blocked=False)
