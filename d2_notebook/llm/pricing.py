"""What a model call costs, from a per-model price table.

Prices are USD per million tokens, looked up by the *longest matching prefix* of the
model id, so ``claude-sonnet-4-5-20250929`` finds the ``claude-sonnet-4`` row. An
unknown model costs 0 with ``priced=False`` — never a crash. Edit the table with
:func:`set_price` (e.g. for a local model you want to cost like a hosted one).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from d2_notebook.llm.messages import TokenUsage


@dataclass(frozen=True)
class Price:
    """USD per million tokens, by kind of token."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True)
class Cost:
    """The cost of one call. ``priced`` is False when the model has no price."""

    usd: float
    priced: bool


def _claude(input_usd: float, output_usd: float) -> Price:
    """Anthropic's rule: cache reads cost 0.1x input, 5-minute cache writes 1.25x."""
    return Price(input_usd, output_usd, round(input_usd * 0.1, 6), round(input_usd * 1.25, 6))


DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": _claude(5.0, 25.0),
    "claude-opus-4-1": _claude(15.0, 75.0),
    "claude-opus-4-0": _claude(15.0, 75.0),
    "claude-opus-4-2025": _claude(15.0, 75.0),
    "claude-3-opus": _claude(15.0, 75.0),
    "claude-sonnet-4": _claude(3.0, 15.0),
    "claude-3-7-sonnet": _claude(3.0, 15.0),
    "claude-3-5-sonnet": _claude(3.0, 15.0),
    "claude-haiku-4": _claude(1.0, 5.0),
    "claude-3-5-haiku": _claude(0.8, 4.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30),
}
"""List prices of Claude families known when this was written. Newer ids (other
``claude-opus-4-*``, 5.x families) are deliberately unpriced until added with
:func:`set_price`: a wrong price is worse than a visible ``priced=False``."""


class PriceTable:
    """A thread-safe, editable map of model-id prefixes to prices."""

    def __init__(self, prices: dict[str, Price] | None = None) -> None:
        """Start from ``prices`` (a copy of :data:`DEFAULT_PRICES` when None)."""
        self._prices = dict(DEFAULT_PRICES if prices is None else prices)
        self._lock = threading.Lock()

    def set_price(self, prefix: str, price: Price) -> None:
        """Add or override the price of every model id starting with ``prefix``."""
        with self._lock:
            self._prices[prefix] = price

    def price_for(self, model: str) -> Price | None:
        """The price of ``model`` by longest matching prefix, or None if unknown.

        A provider prefix (``anthropic:``) on ``model`` is ignored.
        """
        model_id = model.split(":", 1)[1] if ":" in model else model
        with self._lock:
            matches = [p for p in self._prices if model_id.startswith(p)]
            return self._prices[max(matches, key=len)] if matches else None

    def cost(self, model: str, usage: TokenUsage) -> Cost:
        """The USD cost of ``usage`` on ``model``; 0 and ``priced=False`` if unknown."""
        price = self.price_for(model)
        if price is None:
            return Cost(0.0, priced=False)
        usd = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_read_tokens * price.cache_read
            + usage.cache_write_tokens * price.cache_write
        ) / 1_000_000
        return Cost(usd, priced=True)


PRICES = PriceTable()
"""The table used when none is passed explicitly."""


def set_price(prefix: str, price: Price) -> None:
    """Add or override a price in the shared table :data:`PRICES`."""
    PRICES.set_price(prefix, price)


def price_for(model: str) -> Price | None:
    """The price of ``model`` in the shared table, or None."""
    return PRICES.price_for(model)


def cost_of(model: str, usage: TokenUsage, prices: PriceTable | None = None) -> Cost:
    """The cost of one call (shared table unless ``prices`` is given)."""
    return (prices or PRICES).cost(model, usage)
