"""Where a board's money went: its model calls by role and by turn (``d2 board show
--usage``).

A *turn* is one run of one agent: it starts with a request holding a single message
(the role's first message) and goes on while the same agent's requests carry on that
conversation. Input tokens count the whole prompt (uncached, cache reads and cache
writes); the cache-read share is the part of them read back from the provider's cache.
Calls the budget refused (never sent) are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from d2_notebook.board import Board, ModelCall
from d2_notebook.board.records import ModelCallStatus
from d2_notebook.cli.progress import format_cost

ROLE_ORDER = ("hypothesizer", "orchestrator", "planner", "collector", "judge", "reporter",
              "detective", "react")
"""Roles in the order the team works (unknown roles follow, by name)."""


@dataclass(frozen=True)
class UsageLine:
    """The calls of one group (a role, or one turn of one agent) added up."""

    label: tuple[str, ...]
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: float

    @property
    def cache_read_share(self) -> float:
        """Cache reads over all input tokens (0 when there were none)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    @classmethod
    def of(cls, label: tuple[str, ...], calls: Iterable[ModelCall]) -> UsageLine:
        """The sum over ``calls``."""
        chosen = list(calls)
        return cls(label, len(chosen),
                   sum(c.input_tokens + c.cache_read_tokens + c.cache_write_tokens
                       for c in chosen),
                   sum(c.output_tokens for c in chosen),
                   sum(c.cache_read_tokens for c in chosen),
                   sum(c.cost_usd for c in chosen))


@dataclass(frozen=True)
class UsageBreakdown:
    """One investigation's calls by role, by turn, and in total."""

    investigation_id: str | None
    by_role: list[UsageLine]
    by_turn: list[UsageLine]
    total: UsageLine


def usage_breakdown(board: Board) -> list[UsageBreakdown]:
    """Every investigation's breakdown, in the order they were started."""
    calls = [c for c in board.list_model_calls() if c.status is not ModelCallStatus.REFUSED]
    ids = list(dict.fromkeys(c.investigation_id for c in calls))
    return [_breakdown(i, [c for c in calls if c.investigation_id == i]) for i in ids]


def _breakdown(investigation_id: str | None, calls: list[ModelCall]) -> UsageBreakdown:
    roles = sorted({c.role for c in calls}, key=_role_key)
    turns: dict[tuple[str, str, int], list[ModelCall]] = {}
    count: dict[str, int] = {}
    for call in calls:  # in the order they were made
        if len(call.request.get("messages", [])) <= 1 or call.agent not in count:
            count[call.agent] = count.get(call.agent, 0) + 1
        turns.setdefault((call.role, call.agent, count[call.agent]), []).append(call)
    started = {key: n for n, key in enumerate(turns)}  # turns in the order they began
    ordered = sorted(turns, key=lambda k: (_role_key(k[0]), started[k]))
    return UsageBreakdown(
        investigation_id,
        [UsageLine.of((role,), (c for c in calls if c.role == role)) for role in roles],
        [UsageLine.of((role, agent, str(n)), turns[(role, agent, n)])
         for role, agent, n in ordered],
        UsageLine.of(("total",), calls))


def _role_key(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def render_usage(breakdowns: list[UsageBreakdown]) -> str:
    """The breakdowns as aligned text tables (a line saying so when there are none)."""
    if not breakdowns:
        return "no model calls on this board"
    blocks = []
    for item in breakdowns:
        title = f"usage of investigation {item.investigation_id or '(none)'}"
        blocks.append("\n".join([
            title, "by role:",
            *_table(("role",), [*item.by_role, item.total]),
            "by turn:",
            *_table(("role", "agent", "turn"), item.by_turn)]))
    return "\n\n".join(blocks)


def _table(heads: tuple[str, ...], lines: list[UsageLine]) -> list[str]:
    header = [*heads, "calls", "input tokens", "output tokens", "cache read", "cost"]
    rows = [[*line.label, f"{line.calls:,}", f"{line.input_tokens:,}",
             f"{line.output_tokens:,}", f"{line.cache_read_share:.0%}",
             format_cost(line.cost_usd)] for line in lines]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    texts = len(heads)
    return ["  " + "  ".join(str(cell).ljust(w) if i < texts else str(cell).rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
            for row in [header, *rows]]
