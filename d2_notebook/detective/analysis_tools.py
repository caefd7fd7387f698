"""The analysis tools as team tools: ``segment_scan``, ``compare_within`` and ``trend``.

Each wraps one :class:`~d2_notebook.data.analysis.AnalysisToolSpec` (its description and
input schema are offered as they are, never re-described here). A call runs the tool's
generated SQL through the guarded connection and keeps the result under a query id in
the agent's :class:`QueryLog`, exactly like ``run_sql``: the model cites that id to
record it as evidence (``record_evidence``, ``add_hypothesis``), and the board then
stores the generated SQL, its rows and the tool's summary as the evidence's
description. Query ids are given in the order of the calls, whatever order a batch of
concurrent calls finishes in, so a replayed run writes the same board.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from d2_notebook.board import Evidence, ToolCall
from d2_notebook.data.analysis import TOOL_SPECS, AnalysisResult, AnalysisTool, AnalysisToolSpec
from d2_notebook.data.fencing import escape_text, fence
from d2_notebook.detective.context import QueryLog, TeamContext, normalize_sql
from d2_notebook.detective.follow_up import stored_analysis
from d2_notebook.detective.sql_tools import (
    PREVIEW_CELL_CHARS,
    PREVIEW_CHARS,
    reuse_note,
    run_once_in_order,
)
from d2_notebook.detective.tools import Tool, ToolError, tool

ANALYSIS_TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOL_SPECS)
"""The names the models call, in the order of :data:`TOOL_SPECS`."""

_HETEROGENEITY = re.compile(r"HETEROGENEITY: the effect of .+? differs across (.+?) beyond "
                            r"chance")
"""How a compare_within summary states a heterogeneity flag (read back from evidence)."""


def analysis_tools(ctx: TeamContext, log: QueryLog) -> list[Tool]:
    """One tool per analysis spec, over ``ctx.sql``, keeping results in ``log``."""
    return [_wrap(ctx, log, spec) for spec in TOOL_SPECS]


def _wrap(ctx: TeamContext, log: QueryLog, spec: AnalysisToolSpec) -> Tool:
    schema = spec.input_schema

    async def run(args: dict[str, Any]) -> str:
        key = f"{spec.name} {json.dumps(args, sort_keys=True)}"
        call = ToolCall(spec.name, dict(args))
        earlier = ctx.follow_up.reusable_call(call) if ctx.follow_up is not None else None

        def execute() -> AnalysisResult:
            if earlier is not None:  # the same call on unchanged data: not run again
                return stored_analysis(ctx.board, earlier, call)
            return _call(ctx, spec, args)

        def register(result: AnalysisResult) -> str:
            query_id = _registered(log, key, result, call)
            if earlier is not None:
                log.reused[query_id] = earlier.id
            return query_id

        result, query_id = await run_once_in_order(
            log, key, f"{spec.name} call", lambda: asyncio.to_thread(execute), register)
        preview = result.preview(max_rows=ctx.settings.preview_rows, max_chars=PREVIEW_CHARS,
                                 max_colwidth=PREVIEW_CELL_CHARS)
        return (f"{query_id}: {reuse_note(earlier)}"
                f"{fence(f'{spec.name} result {query_id}', preview)}")

    description = (f"{spec.description} Returns a query id (Q1, Q2, ...) to cite when you "
                   "record the result as evidence, the summary and the leading rows.")
    return tool(spec.name, description, schema["properties"], run,
                required=schema.get("required", []), concurrent=True)


def _registered(log: QueryLog, key: str, result: AnalysisResult, call: ToolCall) -> str:
    """Keep ``result`` in ``log`` under a new query id, known both by its generated SQL
    and by the call (``key``), remember the call (a re-check re-runs it), and return the
    id."""
    query_id = log.add(result.sql, result, result.summary.split("\n", 1)[0])
    log.by_sql[normalize_sql(key)] = query_id
    log.calls[query_id] = call
    return query_id


def _call(ctx: TeamContext, spec: AnalysisToolSpec, args: dict[str, Any]) -> AnalysisResult:
    """Run the tool; a bad input (a ValueError naming the fix) becomes a tool error,
    escaped into one line and fenced as data: the message may list the database's own
    values (the values of an exposure that holds none of the named one)."""
    try:
        return spec.function(ctx.sql, **args)
    except ValueError as exc:
        raise ToolError(fence(f"{spec.name} error", escape_text(f"{spec.name}: {exc}"))) \
            from None


def analysis_tool_of(evidence: Evidence) -> AnalysisTool | None:
    """Which analysis tool produced ``evidence`` (read from its description), if any."""
    for item in AnalysisTool:
        if evidence.description.startswith(item.value):
            return item
    return None


def is_heterogeneity_check(evidence: Evidence) -> bool:
    """True if ``evidence`` is a compare_within result (the heterogeneity check)."""
    return analysis_tool_of(evidence) is AnalysisTool.COMPARE_WITHIN


def heterogeneity_dimensions(evidence: Evidence) -> list[str]:
    """The dimensions a compare_within evidence flagged HETEROGENEITY across."""
    if not is_heterogeneity_check(evidence):
        return []
    return _HETEROGENEITY.findall(evidence.description)
