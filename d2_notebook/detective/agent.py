"""One agent's turn: ask the model, run the tools it calls, repeat until it finishes.

This is the tool loop every role shares. The model sees only what its role gives it
(system prompt, a first message, its tools) plus its own turn's history. The loop
ends when the model calls a turn-ending tool successfully, answers without a tool
call (after one reminder), repeats itself, or reaches its step limit; before its last
call the model is told it is the last, so it records its work and ends the turn.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.detective.tools import Toolset
from d2_notebook.llm import (
    STABLE_FIRST,
    CacheBreakpoint,
    Message,
    Model,
    ModelRequest,
    ToolResult,
    UserMessage,
)

MAX_SAME_CALL = 3
"""An agent making the same tool call this often is stopped (it is looping)."""

_PREFIX_ONLY = (CacheBreakpoint.TOOLS, CacheBreakpoint.SYSTEM)
"""Cache the role's stable prefix only, not the conversation."""


@dataclass
class AgentRun:
    """How an agent's turn went.

    Attributes:
        ended_by: the turn-ending tool that succeeded, or None.
        stopped: why the turn ended without one ("step limit", "repeating", ...).
        final_text: the model's last text.
        steps: model calls made.
    """

    agent: str
    role: str
    steps: int = 0
    ended_by: str | None = None
    stopped: str | None = None
    final_text: str = ""
    messages: list[Message] = field(default_factory=list)


async def run_agent(
    model: Model,
    *,
    role: str,
    agent: str,
    system: str,
    first_message: str,
    toolset: Toolset,
    sequencer: WriteSequencer,
    max_steps: int,
    stuck: Callable[[], str | None] = lambda: None,
    max_tokens: int = 4096,
    cache_first_message: bool = True,
) -> AgentRun:
    """Run one turn of ``agent`` and return how it went.

    Args:
        stuck: called after each step; a non-None reason stops the turn (used by the
            SQL tools' repeated-query detection).
        cache_first_message: whether the first call asks the provider to cache the
            conversation (the first message) as well as the stable prefix. A cache
            write costs more than plain input (1.25x on Anthropic) and pays only when a
            later call of the same turn reads it back, so roles whose turn is normally
            one call (a judge, the orchestrator) pass False; their later calls, if any,
            cache the conversation as usual.

    Model errors (API failures, budget exhausted) propagate to the caller.
    """
    run = AgentRun(agent=agent, role=role)
    messages: list[Message] = [UserMessage(first_message)]
    reminded = False
    turn_enders = [s.name for s in toolset.specs if (t := toolset.get(s.name)) and t.ends_turn]
    seen_calls: Counter[str] = Counter()
    while run.steps < max_steps:
        if run.steps and run.steps == max_steps - 1 and turn_enders:
            messages.append(UserMessage(last_call_notice(max_steps, turn_enders)))
        breakpoints = STABLE_FIRST if cache_first_message or run.steps else _PREFIX_ONLY
        request = ModelRequest(system=system, messages=list(messages), tools=toolset.specs,
                               max_tokens=max_tokens, role=role, agent=agent,
                               cache_breakpoints=breakpoints)
        try:
            response = await model.request(request)
        except BaseException:
            _release(sequencer, sequencer.held(agent))
            raise
        ticket = sequencer.held(agent)  # our turn to write, in arrival order
        run.steps += 1
        run.final_text = response.text or run.final_text
        messages.append(response.to_message())
        calls = response.tool_calls
        for call in calls:
            seen_calls[f"{call.name} {json.dumps(call.args, sort_keys=True)}"] += 1
        repeating = bool(calls) and max(seen_calls.values()) >= MAX_SAME_CALL
        # A step that may end the turn keeps its place in the write order to the end:
        # what the caller does next (start a judge, free a slot) happens at the same
        # point in every run. Other steps that write nothing let others go on.
        may_end = (not calls or repeating or run.steps >= max_steps
                   or any((t := toolset.get(c.name)) is not None and t.ends_turn
                          for c in calls))
        try:
            if not toolset.writes_board(calls) and not may_end:
                ticket = _release(sequencer, ticket)
            results: list[ToolResult] = await toolset.call_all(calls)
        finally:
            _release(sequencer, ticket)
        if not calls:
            if turn_enders and not reminded:
                reminded = True
                messages.append(UserMessage(
                    "Continue with your tools. When your work is done, finish by calling "
                    f"{' or '.join(turn_enders)}."
                ))
                continue
            run.stopped = "answered without calling a tool"
            break
        messages.extend(results)
        if response.stop_reason == "max_tokens":
            messages.append(UserMessage(
                f"Your last answer was cut off at the output limit ({max_tokens} tokens), so "
                "a tool call in it may be incomplete. Make it shorter, or split the work "
                "over several calls."))
        ended = [c.name for c, r in zip(calls, results, strict=True)
                 if not r.is_error and (t := toolset.get(c.name)) is not None and t.ends_turn]
        if ended:
            run.ended_by = ended[-1]
            break
        reason = stuck()
        if reason is None and repeating:
            reason = f"stopped: made the same tool call {MAX_SAME_CALL} times"
        if reason is not None:
            run.stopped = reason
            break
    else:
        run.stopped = f"step limit ({max_steps} model calls) reached"
    run.messages = messages
    return run


def last_call_notice(max_steps: int, turn_enders: list[str]) -> str:
    """What an agent reads before its last model call of a turn: without it, a model
    that plans one more step reaches the limit with its work unrecorded."""
    others = (f" (or {' or '.join(turn_enders[1:])}, where your first message allows it)"
              if len(turn_enders) > 1 else "")
    return (f"This is your last model call of this turn (at most {max_steps}). Finish now: "
            f"record what you have and call {turn_enders[0]}{others} in this answer.")


def _release(sequencer: WriteSequencer, ticket: int | None) -> None:
    """Release a held ticket (no-op for None); returns None so callers can clear it."""
    if ticket is not None:
        sequencer.release(ticket)
