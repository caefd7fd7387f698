"""How many tokens of evidence a role's prompt may hold.

Budgets are counted in (estimated) tokens against the model's context window: the
setting ``context_window_tokens`` if given, else the window the model is known to
have (:func:`d2_notebook.llm.context_window`). What the rest of the request takes —
system prompt, tool specs, the first message so far, the answer's room and the
agent's own steps within its turn — is subtracted first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.tools import Tool
from d2_notebook.llm import context_window, estimate_tokens

TURN_RESERVE_TOKENS = 4_000
"""Room kept for the agent's own tool calls and their results within its turn."""
MIN_EVIDENCE_TOKENS = 2_000
"""The least an evidence budget is, however full the rest of the prompt."""


def window_tokens(ctx: TeamContext) -> int:
    """The context window prompts of this investigation are budgeted against."""
    return ctx.settings.context_window_tokens or context_window(ctx.model.name)


def evidence_budget(ctx: TeamContext, *, system: str, tools: Sequence[Tool],
                    first_message: str, max_output_tokens: int, share: float = 1.0,
                    turn_reserve: int = TURN_RESERVE_TOKENS) -> int:
    """Tokens left for evidence in a prompt, times ``share``.

    Args:
        ctx: the investigation (its settings and model name give the window).
        system, tools, first_message: the rest of the request as it will be sent.
        max_output_tokens: the room the request leaves for the model's answer.
        share: the part of what is left that evidence may take (less than 1 for roles
            whose turn grows with their own queries).
        turn_reserve: room kept for the agent's steps within its turn.
    """
    specs = json.dumps([t.spec.to_dict() for t in tools])
    used = (estimate_tokens(system) + estimate_tokens(specs) + estimate_tokens(first_message)
            + max_output_tokens + turn_reserve)
    return max(MIN_EVIDENCE_TOKENS, int((window_tokens(ctx) - used) * share))
