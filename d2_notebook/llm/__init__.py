"""The model layer: one small async protocol, providers behind it, offline models.

``get_model("anthropic:claude-sonnet-4-6")`` or ``get_model("openai:llama3.1",
base_url=...)`` gives a :class:`Model`; ``await model.request(ModelRequest(...))``
gives a :class:`ModelResponse` of typed parts. Wrap a model in
:class:`RecordingModel` to log every call on the board and count it on an
investigation's :class:`Ledger` against a :class:`Budget` (:class:`BudgetedModel`
does the counting without a board). Offline models live in :mod:`d2_notebook.llm.offline`.

Set ``ALLOW_MODEL_REQUESTS = False`` on this module (tests do) to make every real
provider fail with ``ModelRequestsBlockedError`` before any network I/O.
"""

from d2_notebook.llm.context_window import (
    CONTEXT_WINDOWS,
    ContextWindowTable,
    context_window,
    estimate_tokens,
    set_context_window,
)
from d2_notebook.llm.messages import (
    STABLE_FIRST,
    AssistantMessage,
    CacheBreakpoint,
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    StopReason,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from d2_notebook.llm.model import (
    Model,
    ProviderFactory,
    get_model,
    known_providers,
    parse_model_name,
    register_provider,
)
from d2_notebook.llm.pricing import PRICES, Cost, Price, PriceTable, cost_of, price_for, set_price
from d2_notebook.llm.recording import RecordingModel
from d2_notebook.llm.settings import (
    allow_model_requests,
    block_model_requests,
    default_model_name,
    model_requests_allowed,
)
from d2_notebook.llm.usage import (
    Budget,
    BudgetedModel,
    ConcurrencyLimit,
    Ledger,
    Reservation,
    Usage,
    UsageTotals,
)

ALLOW_MODEL_REQUESTS: bool = True
"""False blocks every real provider request (see :mod:`d2_notebook.llm.settings`)."""

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "CONTEXT_WINDOWS",
    "PRICES",
    "STABLE_FIRST",
    "AssistantMessage",
    "Budget",
    "BudgetedModel",
    "CacheBreakpoint",
    "ConcurrencyLimit",
    "ContextWindowTable",
    "Cost",
    "Ledger",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "Part",
    "Price",
    "PriceTable",
    "ProviderFactory",
    "RecordingModel",
    "Reservation",
    "StopReason",
    "TextPart",
    "TokenUsage",
    "ToolCallPart",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UsageTotals",
    "UserMessage",
    "allow_model_requests",
    "block_model_requests",
    "context_window",
    "cost_of",
    "default_model_name",
    "estimate_tokens",
    "get_model",
    "known_providers",
    "model_requests_allowed",
    "parse_model_name",
    "price_for",
    "register_provider",
    "set_context_window",
    "set_price",
]
