"""What the network providers share: one request path for every remote model.

:class:`RemoteModel` checks the switch that blocks real requests (before any I/O),
holds the per-model concurrency cap, retries with our own backoff (the SDKs' retries
are off), and maps SDK errors to :mod:`d2_notebook.errors` whose messages name the
fix. Each send is a call for the budget: the wrapper counting calls hears of every
failed send and admits every retry (:class:`~d2_notebook.llm.usage.CountsSends`).
A provider subclass says how to build, send and read a request, and how to recognise
its SDK's errors.
"""

from __future__ import annotations

from typing import Any

from d2_notebook.errors import ModelAPIError, ModelConfigError
from d2_notebook.llm import settings
from d2_notebook.llm.messages import ModelRequest, ModelResponse
from d2_notebook.llm.retry import is_retryable_status, with_retries
from d2_notebook.llm.usage import ConcurrencyLimit, FailedSend, SendListener


class RemoteModel:
    """Base of the models behind a network API (see the module docstring).

    Subclasses set :attr:`key_env` and :attr:`url_env` (named in error messages) and
    implement :meth:`_params`, :meth:`_send`, :meth:`_parse`, :meth:`_is_api_error`,
    :meth:`_is_connection_error`; :meth:`_where` names the server.
    """

    key_env = "the API key"
    url_env = "the base URL"

    def __init__(
        self,
        name: str,
        *,
        max_retries: int,
        timeout: float,
        max_concurrency: int,
        retry_base_delay: float,
        retry_max_delay: float,
    ) -> None:
        """Keep the shared settings of a remote model called ``name``."""
        self.name = name
        self.max_retries = max_retries
        self.timeout = timeout
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self._limit = ConcurrencyLimit(max_concurrency)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and read the answer (retries uncounted: see
        :meth:`request_counting_sends`).

        Raises:
            ModelRequestsBlockedError: real requests are blocked (before any I/O).
            ModelConfigError: the key was refused, or the model is unknown.
            ModelAPIError: any other API error, after retries where they apply.
        """
        return await self.request_counting_sends(request, None)

    async def request_counting_sends(self, request: ModelRequest,
                                     sends: SendListener | None) -> ModelResponse:
        """Send ``request`` and read the answer, telling ``sends`` (when given) of each
        send that failed (at once, as a :class:`~d2_notebook.llm.usage.FailedSend`: its
        billing is unknown when no HTTP status came back) and of each retry, after the
        backoff and before it is sent (``sends.resending()``, which may refuse it).

        Raises:
            ModelRequestsBlockedError: real requests are blocked (before any I/O).
            ModelConfigError: the key was refused, or the model is unknown.
            ModelAPIError: any other API error, after retries where they apply.
            BudgetExceededError: (or whatever ``sends.resending()`` raises) a retry was
                refused; the send before it failed.
        """
        settings.check_model_requests_allowed(self.name)
        params = self._params(request)

        def failed(exc: Exception, retrying: bool) -> None:
            if sends is not None:
                sends.failed(FailedSend(exc, billing_unknown=_status(exc) is None,
                                        retrying=retrying))

        async with self._limit:
            try:
                raw = await with_retries(
                    lambda: self._send(params),
                    retryable=self._retryable,
                    max_retries=self.max_retries,
                    base_delay=self.retry_base_delay,
                    max_delay=self.retry_max_delay,
                    on_failure=failed,
                    before_retry=None if sends is None else sends.resending,
                )
            except Exception as exc:
                if not self._is_api_error(exc):
                    raise
                raise self._friendly_error(exc) from exc
        return self._parse(raw)

    # --- what a provider says ---------------------------------------------------------

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    async def _send(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _parse(self, raw: Any) -> ModelResponse:
        raise NotImplementedError

    def _is_api_error(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _is_connection_error(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _where(self) -> str:
        return self.name

    # --- shared ---------------------------------------------------------------------------

    def _retryable(self, exc: Exception) -> bool:
        return self._is_connection_error(exc) or is_retryable_status(_status(exc))

    def _friendly_error(self, exc: Exception) -> Exception:
        """Map an SDK error to a d2 error whose message says what to do."""
        where = self._where()
        detail = getattr(exc, "api_message", None) or getattr(exc, "message", None) or str(exc)
        if self._is_connection_error(exc):
            return ModelAPIError(
                f"cannot reach {where} after {self.max_retries + 1} attempts: {detail}; "
                f"is the server running? check your network or {self.url_env}"
            )
        status = _status(exc)
        if status == 401:
            return ModelConfigError(
                f"the API key was refused by {where}; check {self.key_env} ({detail})"
            )
        if status == 403:
            return ModelConfigError(
                f"the API key may not use {where}; check the key's permissions ({detail})"
            )
        if status == 404:
            return ModelConfigError(
                f"{where} does not serve this model; check --model ({detail})"
            )
        if is_retryable_status(status):
            return ModelAPIError(
                f"{where} failed with HTTP {status} after {self.max_retries + 1} attempts: "
                f"{detail}; try again later or lower the concurrency"
            )
        return ModelAPIError(f"{where} refused the request (HTTP {status}): {detail}")


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None
