"""The one model protocol, and the registry that turns a name into a model.

A model is anything with a ``name`` and one async method, ``request``. Providers are
registered by name exactly as a plugin would register its own::

    register_provider("anthropic", AnthropicModel)   # factory(model_id, **options)
    get_model("anthropic:claude-sonnet-4-6")

Names are ``provider:model-id``. A bare ``claude-...`` id means the Anthropic
provider; a bare provider name (``scripted``) calls its factory with an empty id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from d2_notebook.errors import ModelConfigError
from d2_notebook.llm.messages import ModelRequest, ModelResponse
from d2_notebook.llm.settings import DEFAULT_PROVIDER, default_model_name


@runtime_checkable
class Model(Protocol):
    """A language model: one request in, one response out.

    Implementations raise :class:`~d2_notebook.errors.ModelError` subclasses only
    (config, blocked, API, budget, script, replay faults).
    """

    name: str

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` with typed parts and usage."""
        ...


ProviderFactory = Callable[..., Model]
"""``factory(model_id: str, **options) -> Model``."""

_providers: dict[str, ProviderFactory] = {}
_providers_lock = threading.Lock()


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``get_model("<name>:<model-id>")`` call ``factory(model_id, **options)``.

    Raises:
        ModelConfigError: ``name`` is taken (pass ``replace=True`` to override) or
            contains a colon.
    """
    if not name or ":" in name:
        raise ModelConfigError(f"provider name {name!r} must be non-empty and have no ':'")
    with _providers_lock:
        if name in _providers and not replace:
            raise ModelConfigError(
                f"provider {name!r} is already registered; pass replace=True to override it"
            )
        _providers[name] = factory


def known_providers() -> list[str]:
    """Registered provider names, sorted."""
    _register_builtins()
    with _providers_lock:
        return sorted(_providers)


def parse_model_name(name: str) -> tuple[str, str]:
    """Split a model name into ``(provider, model_id)`` without resolving it."""
    if ":" in name:
        provider, model_id = name.split(":", 1)
        return provider.strip(), model_id.strip()
    if name.startswith("claude"):
        return DEFAULT_PROVIDER, name
    return name.strip(), ""


def get_model(name: str | None = None, **options: Any) -> Model:
    """Resolve a model by name; ``None`` means :func:`~d2_notebook.llm.settings.default_model_name`.

    ``options`` go to the provider's factory (``base_url=``, ``api_key=``,
    ``max_retries=``, ``timeout=``, ``max_concurrency=`` for the real providers).

    Raises:
        ModelConfigError: the provider is unknown (the message lists the known ones),
            or the provider is not configured (e.g. no API key).
    """
    _register_builtins()
    provider, model_id = parse_model_name(name or default_model_name())
    with _providers_lock:
        factory = _providers.get(provider)
    if factory is None:
        raise ModelConfigError(
            f"unknown model {name!r}: no provider {provider!r}; known providers: "
            f"{', '.join(known_providers())} (write names as provider:model-id, e.g. "
            "anthropic:claude-sonnet-4-6 or openai:llama3.1)"
        )
    return factory(model_id, **options)


_builtins_registered = False


def _register_builtins() -> None:
    """Register the shipped providers once, lazily (keeps imports light and acyclic)."""
    global _builtins_registered
    if _builtins_registered:
        return
    with _providers_lock:
        if _builtins_registered:
            return
        _builtins_registered = True
    from d2_notebook.llm import anthropic_provider, offline, openai_provider

    for provider_name, factory in (
        ("anthropic", anthropic_provider.AnthropicModel),
        ("openai", openai_provider.OpenAIModel),
        ("scripted", offline.scripted_factory),
        ("function", offline.function_factory),
        ("replay", offline.replay_factory),
    ):
        with _providers_lock:
            _providers.setdefault(provider_name, factory)
