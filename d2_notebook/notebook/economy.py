"""What an investigation cost, in one phrase every surface shows the same way.

The CLI's final line (``d2 investigate``, ``d2 demo``) and the board header (widget,
snapshot, static HTML) both say the calls, the dollars and the share of input tokens
read back from the provider's prompt cache — the figure prompt caching is meant to raise
(issue 20). A run whose every call was answered by an offline script says so instead of
"$0.00": no language model ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2_notebook.board import Board
from d2_notebook.llm.usage import UsageTotals

SCRIPTED_LABEL = "scripted — no language model"
"""What every view of a board says when its model calls came from an offline script."""


@dataclass(frozen=True)
class Economy:
    """Calls, tokens and dollars of one or more investigations.

    Attributes:
        calls: model calls sent (refused requests are not calls).
        prompt_tokens: every input token: uncached, cache reads and cache writes.
        cache_read_tokens: input tokens read back from the provider's cache.
        output_tokens: tokens the model wrote.
        cost_usd: dollars, as priced when each call was made.
        scripted: every call came from an offline script (no language model).
        unpriced_calls: calls with no known price (their cost counts as 0).
    """

    calls: int
    prompt_tokens: int
    cache_read_tokens: int
    output_tokens: int
    cost_usd: float
    scripted: bool = False
    unpriced_calls: int = 0

    @property
    def cache_read_share(self) -> float:
        """Cache reads over all input tokens (0 when there were none)."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def phrase(self) -> str:
        """``"37 model calls · $0.91 · 72% of input tokens from cache"``; a scripted run:
        ``"39 model calls · scripted — no language model"``; no call: ``"0 model calls"``."""
        calls = f"{self.calls} model call{'s' if self.calls != 1 else ''}"
        if not self.calls:
            return calls
        if self.scripted:
            return f"{calls} · {SCRIPTED_LABEL}"
        unpriced = f" ({self.unpriced_calls} unpriced)" if self.unpriced_calls else ""
        return (f"{calls} · {format_cost(self.cost_usd)}{unpriced} · "
                f"{self.cache_read_share:.0%} of input tokens from cache")


def format_cost(usd: float) -> str:
    """Dollars with cents, or four decimals for a cost under a cent."""
    return f"${usd:.4f}" if 0 < usd < 0.01 else f"${usd:.2f}"


def board_economy(board: Board, scripted: bool,
                  investigation_id: str | None = None) -> Economy:
    """The calls of every investigation on ``board`` (of one, when ``investigation_id``
    is given), from its model-call counters (prompts are not read); ``scripted`` as
    found by the caller from the calls' models."""
    ids = ([investigation_id] if investigation_id is not None
           else [inv.id for inv in board.list_investigations()])
    spends = [spend for one in ids for spend in board.model_spend(one)]
    return Economy(
        calls=sum(s.calls for s in spends),
        prompt_tokens=sum(s.input_tokens + s.cache_read_tokens + s.cache_write_tokens
                          for s in spends),
        cache_read_tokens=sum(s.cache_read_tokens for s in spends),
        output_tokens=sum(s.output_tokens for s in spends),
        cost_usd=sum(s.cost_usd for s in spends), scripted=scripted)


def usage_economy(usage: UsageTotals, scripted: bool) -> Economy:
    """An investigation's :class:`~d2_notebook.llm.usage.Usage` (the CLI's result) as an
    :class:`Economy`."""
    return Economy(
        calls=usage.calls,
        prompt_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens, output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd, scripted=scripted, unpriced_calls=usage.unpriced_calls)
