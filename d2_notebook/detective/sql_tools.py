"""The SQL tools of the roles that query (hypothesizer, collectors, single agents).

``run_sql`` runs one statement through the guarded SQL and keeps the result under a
query id (``Q3``) in the agent's :class:`QueryLog`; evidence is later recorded from
that id, so an evidence row is always what the guarded SQL returned. The analysis
tools (:mod:`.analysis_tools`) keep their results in the same log and are recorded by
:func:`record_query` too, with the tool's summary as the description.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from d2_notebook.board import Evidence
from d2_notebook.data import Dialect, QueryResult, schema
from d2_notebook.data.analysis import AnalysisResult
from d2_notebook.data.fencing import fence
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.evidence_view import RECORDED_AS
from d2_notebook.detective.follow_up import stored_result
from d2_notebook.detective.query_shape import limit_note
from d2_notebook.detective.tools import Tool, ToolError, tool

_STRING = {"type": "string"}
PREVIEW_CELL_CHARS = 4_000
"""Text cells up to this length (an interview, a note) reach the querying agent whole."""
PREVIEW_CHARS = 16_000
"""A preview longer than this keeps the rows that fit whole and says how to see more."""

_Result = TypeVar("_Result")


def sql_tools(ctx: TeamContext, log: QueryLog) -> list[Tool]:
    """``run_sql`` and ``describe_table`` over the guarded connection."""

    kinds = ("SELECT/WITH/DESCRIBE/SUMMARIZE ..." if ctx.sql.dialect is Dialect.DUCKDB
             else "SELECT/WITH ...")

    async def run_sql(args: dict[str, Any]) -> str:
        sql = args["sql"].strip()
        earlier = ctx.follow_up.reusable_sql(sql) if ctx.follow_up is not None else None

        async def execute() -> QueryResult:
            if earlier is not None:  # the same query on unchanged data: not run again
                return await _in_thread(stored_result, ctx.board, earlier)
            return await ctx.sql.arun(sql, timeout_s=ctx.settings.sql_timeout_s,
                                      max_rows=ctx.board.max_rows)

        def register(result: QueryResult) -> str:
            query_id = log.add(sql, result, args.get("purpose", ""))
            if earlier is not None:
                log.reused[query_id] = earlier.id
            return query_id

        result, query_id = await run_once_in_order(log, sql, "query", execute, register)
        preview = result.preview(max_rows=ctx.settings.preview_rows, max_chars=PREVIEW_CHARS,
                                 max_colwidth=PREVIEW_CELL_CHARS)
        cut = limit_note(sql, result.row_count)
        return (f"{query_id}: {reuse_note(earlier)}{f'({cut}.) ' if cut else ''}"
                f"{fence(f'query result {query_id}', preview)}")

    async def describe_table(args: dict[str, Any]) -> str:
        info = await _in_thread(ctx.sql.describe, args["table"])
        return schema.summarize([info], label=f"table {info.name}")

    return [
        tool("run_sql",
             f"Run ONE read-only {ctx.sql.dialect.title} SQL statement ({kinds}). "
             "Returns a query id (Q1, Q2, ...) and a preview of the result. Writes, file "
             "access and multiple statements are refused.",
             {"sql": {"type": "string", "description": "one read-only statement"},
              "purpose": {"type": "string", "description": "one line: what it computes"}},
             run_sql, required=["sql"], concurrent=True),
        tool("describe_table", "Columns, types, row count and sample values of one table.",
             {"table": _STRING}, describe_table, concurrent=True),
    ]


async def run_once_in_order(log: QueryLog, key: str, what: str,
                            execute: Callable[[], Awaitable[_Result]],
                            register: Callable[[_Result], str]) -> tuple[_Result, str]:
    """Run one call of a batch run at the same time, keeping its result under a query id
    given in the order of the calls, whatever order the batch finishes in.

    Args:
        log: The agent's query log (repeats are looked up and counted there).
        key: What makes two calls the same (the SQL; a tool's name and arguments).
        what: The call's name in the refusal (``query``, ``segment_scan call``).
        execute: Runs the call.
        register: Keeps the result in ``log`` and returns its query id; called only
            once every earlier call of the batch has registered or failed.

    Returns:
        The result and its query id.

    Raises:
        ToolError: The same call already ran this turn, or earlier in the same batch.
        Exception: Whatever ``execute`` raised (the calls after it still go on).
    """

    def check_new() -> None:
        earlier = log.previous(key)
        if earlier is not None:
            log.repeats += 1
            raise ToolError(f"you already ran this {what} as {earlier}; use that result "
                            "instead of running it again")

    check_new()
    previous, mine = log.next_in_order()
    try:
        try:
            result = await execute()
        finally:
            if previous is not None:  # register (or fail) in the order of the calls
                await previous
        check_new()  # a twin earlier in the same batch
        return result, register(result)
    finally:
        if not mine.done():
            mine.set_result(None)


async def _in_thread(fn: Any, *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


def reuse_note(earlier: Evidence | None) -> str:
    """What a tool result says first when it is an earlier evidence's stored result."""
    if earlier is None:
        return ""
    return (f"the stored result of {earlier.id} (investigation {earlier.investigation_id}): "
            "the same call on unchanged data, not run again; recording it links "
            f"{earlier.id}.\n")


def record_query(ctx: TeamContext, log: QueryLog, query_id: str, description: str, *,
            role: str, agent: str) -> str:
    """Evidence id for query ``query_id`` of this agent, recording it on first use (a
    query answered from an earlier investigation's evidence records that evidence's
    reuse and returns its id)."""
    if query_id in log.evidence_ids:
        return log.evidence_ids[query_id]
    if query_id in log.reused:
        evidence_id = log.reused[query_id]
        ctx.board.record_reuse(ctx.investigation_id, evidence_id, actor=agent)
        log.evidence_ids[query_id] = evidence_id
        return evidence_id
    result = log.results.get(query_id)
    if result is None:
        known = ", ".join(log.results) or "none yet"
        raise ToolError(f"unknown query id {query_id!r}; your queries so far: {known}. "
                        "Run the query with run_sql (or an analysis tool) first.")
    if isinstance(result, AnalysisResult):
        description = analysis_description(result, description)
    row_count = result.row_count if result.row_count is not None else len(result.frame)
    existing = ctx.board.find_evidence(result.sql, result.frame, row_count=row_count,
                                       investigation_id=ctx.investigation_id)
    if existing is not None:  # e.g. redone after an interruption: reuse, never duplicate
        log.evidence_ids[query_id] = existing.id
        return existing.id
    evidence = ctx.board.add_evidence(
        result.sql, result.frame, description=description,
        row_count=row_count, truncated=result.truncated, author_role=role, author=agent,
        duration_s=result.duration_s, round=ctx.round, investigation_id=ctx.investigation_id,
    )
    log.evidence_ids[query_id] = evidence.id
    if query_id in log.calls:
        ctx.board.record_tool_call(evidence.id, log.calls[query_id], actor=agent)
    return evidence.id


def analysis_description(result: AnalysisResult, description: str) -> str:
    """An analysis evidence's description: the tool's summary first (what the digest
    and the judges read, starting with the tool's name), then the recording agent's
    own words."""
    own = " ".join(description.split())
    if not own or own in result.summary:
        return result.summary
    return f"{result.summary}{RECORDED_AS} {own}"


def first_line(sql: str, limit: int = 120) -> str:
    flat = " ".join(sql.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

