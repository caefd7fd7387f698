"""The board tools of each role (the SQL tools are in :mod:`.sql_tools`).

Every factory takes the shared :class:`TeamContext` and returns :class:`Tool`s whose
handlers write to the board with the calling agent's name. What each role may write
is decided here: the orchestrator and judge get no SQL, collectors cannot judge
(except in the ``no_judge`` variant), and evidence is recorded only from a query id
the agent actually ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from d2_notebook.board import ChartRequest, HypothesisStatus, Stance
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.coverage_view import board_coverage
from d2_notebook.detective.decisions import (
    CollectorDecision,
    HypothesizerDecision,
    OrchestratorDecision,
    ReactAnswer,
    ReportDecision,
    Steering,
)
from d2_notebook.detective.evidence_rows import aggregate_row_note
from d2_notebook.detective.reading_check import CheckedText, check_team_text
from d2_notebook.detective.sql_tools import first_line, record_query
from d2_notebook.detective.tools import Tool, ToolError, tool

STRING_SCHEMA = {"type": "string"}
"""The JSON schema of a plain string argument."""
IDS_SCHEMA = {"type": "array", "items": {"type": "string"}}
"""The JSON schema of a list of ids."""


def _stance_schema(weak_note: str) -> dict[str, Any]:
    """The schema of a stance; ``weak_note`` says what a weak one must add."""
    return {"type": "string", "enum": [s.value for s in Stance], "description": (
        "supports or contradicts when the result decides (a result showing the hypothesis "
        "failing one thing it requires contradicts it, even when the rest agrees); weak when "
        f"it points one way on thin grounds ({weak_note}one record of the entity's own value "
        "is not thin), and when an effect's interval holds 0 but still reaches, in the "
        "claimed direction, one that would matter (no decision against it, nor for a claim "
        "of no effect); neutral when it "
        "bears neither way (e.g. a record that is missing)")}


_STANCE = _stance_schema("say which way in the reading; ")
"""A link's stance, whose reading says which way a weak result points."""
_QUERY_STANCE = _stance_schema("")
"""A ``react_sql`` evidence item's stance: the item has no reading."""


# --- hypothesizer ------------------------------------------------------------------


def hypothesis_tools(ctx: TeamContext, log: QueryLog, agent: str, role: str,
                     decision: HypothesizerDecision | OrchestratorDecision, *,
                     may_add_none: bool = False) -> list[Tool]:
    """``add_hypothesis`` (with the exploration queries that motivated it) and ``done``.

    Each added hypothesis is announced to the loop at once (``ctx.on_new_hypothesis``),
    so its collection can start while the agent goes on. ``may_add_none``: ``done`` is
    accepted without a new hypothesis (a second, guided call may find that the board
    already covers everything).
    """

    async def add_hypothesis(args: dict[str, Any]) -> str:
        statement = args["statement"].strip()
        if not statement:
            raise ToolError("the statement is empty; state the hypothesis in one sentence")
        for existing in ctx.board.list_hypotheses(investigation_id=ctx.investigation_id):
            if _same_text(existing.statement, statement):
                raise ToolError(f"{existing.id} already states this; add a different hypothesis")
        query_ids = list(args.get("query_ids", []))
        for query_id in query_ids:  # validate every id before writing anything
            if query_id not in log.results:
                raise ToolError(f"unknown query id {query_id!r}; run it with run_sql or an "
                                "analysis tool first")
        # a result the rationale cites is motivating evidence too: recorded, its id
        # becomes an evidence id the other roles can open (a bare Q7 means nothing to them)
        rationale = args.get("rationale", "")
        query_ids = list(dict.fromkeys(query_ids + log.cited_queries(rationale)))
        cited = []
        with one_write(ctx, log):  # the motivating evidence and the hypothesis, or none
            for query_id in query_ids:  # recorded as evidence: the context it came from
                result = log.results[query_id]
                description = (log.purposes.get(query_id)
                               or f"Exploration: {first_line(result.sql)}")
                cited.append(record_query(ctx, log, query_id, description, role=role,
                                          agent=agent))
            checked = check_team_text(ctx, cited, None, log.with_board_ids(rationale),
                                      statement=statement)
            hyp = ctx.board.add_hypothesis(
                statement, rationale=checked.text,
                author_role=role,
                author=agent, round=ctx.round, investigation_id=ctx.investigation_id,
                motivated_by=cited,
            )
        decision.added.append(hyp.id)
        ctx.on_new_hypothesis(hyp.id)
        note = checked.note("cite the query whose result holds them, or leave them out")
        # each query with the evidence id it got: an agent that guessed the E numbers of
        # results it had cited cited the wrong ones
        motivating = ", ".join(f"{evidence_id} (your {query_id})"
                               for evidence_id, query_id in zip(cited, query_ids, strict=True))
        return (f"added {hyp.id}" + (f", motivated by {motivating}" if cited else "")
                + (f"\n{note}" if note else ""))

    async def done(args: dict[str, Any]) -> str:
        if not decision.added and not may_add_none:
            raise ToolError("you have not added any hypothesis yet; add every candidate first")
        return f"done: {len(decision.added)} hypotheses added"

    return [
        tool("add_hypothesis",
             "Add one competing, testable hypothesis to the board, citing the query ids "
             "whose results motivated it (they are recorded as evidence). Refused when the "
             "statement is empty or repeats a hypothesis already on the board, or when a "
             "query id is not one run_sql or an analysis tool returned to you.",
             {"statement": {"type": "string", "minLength": 1,
                            "description": "one sentence, not already on the board"},
              "rationale": {"type": "string", "description": "why the data suggests it, "
                            "citing query ids in brackets, e.g. [Q3]: a cited result is "
                            "recorded as motivating evidence too"},
              "query_ids": {**IDS_SCHEMA, "description": "ids run_sql or an analysis tool "
                            "returned to you, e.g. "
                            "[\"Q2\"]"}},
             add_hypothesis, required=["statement", "rationale"], writes_board=True),
        tool("done", "Finish once every candidate the data supports is on the board. Ends "
             "your turn. Refused until you have added at least one hypothesis, unless the "
             "orchestrator asked for more (the board may already cover everything).",
             {"summary": STRING_SCHEMA}, done, ends_turn=True),
    ]


# --- orchestrator --------------------------------------------------------------------


def orchestrator_tools(ctx: TeamContext, agent: str, decision: OrchestratorDecision, *,
                       can_ask_for_more: bool) -> list[Tool]:
    """``abandon``, ``request_hypotheses``, ``carry_on``, ``dismiss_dimension`` and
    ``finish`` — no SQL. ``finish`` is refused while a hypothesis is open or a candidate
    dimension is untouched by every evidence and not dismissed.

    The loop starts the collection of every hypothesis by itself; the orchestrator
    only steers: it abandons hypotheses not yet examined, asks for more, lets the
    work go on, or ends it. Each steering call tells the loop (``ctx.on_steered``) that
    the triage is done, so it may run more branches at once.
    """

    def open_hypotheses() -> list[str]:
        return [h.id for h in ctx.board.list_hypotheses(investigation_id=ctx.investigation_id)
                if not h.status.is_settled]

    async def abandon(args: dict[str, Any]) -> str:
        hyp = known_hypothesis(ctx, args["hypothesis_id"])
        if hyp.status.is_settled:
            raise ToolError(f"{hyp.id} is already {hyp.status.value}")
        if hyp.status is HypothesisStatus.INVESTIGATING:
            raise ToolError(f"{hyp.id} is already being examined; its judge will decide it. "
                            "Abandon only hypotheses that are still proposed")
        ctx.board.abandon(hyp.id, args["reason"], actor=agent)
        decision.abandoned.append(hyp.id)
        return f"abandoned {hyp.id}"

    async def request_hypotheses(args: dict[str, Any]) -> str:
        if not can_ask_for_more:
            raise ToolError("the hypothesizer has no calls left; carry on or finish instead")
        decision.steering, decision.guidance = Steering.MORE_HYPOTHESES, args["guidance"]
        ctx.on_steered()
        return "the hypothesizer will add more hypotheses"

    async def carry_on(args: dict[str, Any]) -> str:
        if not open_hypotheses():
            raise ToolError("no hypothesis is open, so there is nothing to carry on with; "
                            "finish, or request more hypotheses")
        decision.steering = Steering.CARRY_ON
        ctx.on_steered()
        return "collection goes on"

    def untouched() -> tuple[str, ...]:
        coverage = board_coverage(ctx.board, ctx.candidates, ctx.investigation_id)
        return () if coverage is None else coverage.untouched

    async def dismiss_dimension(args: dict[str, Any]) -> str:
        names = _dismissed_names(args)
        left = untouched()
        unknown = [n for n in names if n not in ctx.candidates.names]
        if unknown:
            raise ToolError(f"{', '.join(map(repr, unknown))} is not a candidate dimension; "
                            f"nothing was dismissed. Untouched ones: {', '.join(left) or 'none'}")
        taken = [n for n in names if n not in left]
        if taken:
            raise ToolError(f"{', '.join(taken)}: already touched by evidence or dismissed; "
                            "nothing was dismissed")
        ctx.board.dismiss_dimensions(names, args["reason"], actor=agent,
                                     investigation_id=ctx.investigation_id)
        return f"dismissed {', '.join(names)}"

    async def finish(args: dict[str, Any]) -> str:
        still_open = open_hypotheses()
        if still_open:
            raise ToolError(f"cannot finish: {', '.join(still_open)} have no verdict yet; "
                            "carry on (their collection runs by itself) or abandon them")
        left = untouched()
        if left:
            raise ToolError(f"cannot finish: no evidence has touched the candidate "
                            f"dimension(s) {', '.join(left)}. Ask for hypotheses that "
                            "examine them (a segment_scan or compare_within splits by every "
                            "dimension at once), or dismiss each with dismiss_dimension and "
                            "a reason")
        decision.steering, decision.reason = Steering.FINISH, args["reason"]
        ctx.on_steered()
        return "investigation finished"

    return [
        tool("abandon", "Abandon a proposed hypothesis that does not answer the objective or "
             "duplicates another (name which in the reason). Refused for a hypothesis that "
             "has a verdict or is already being examined.",
             {"hypothesis_id": STRING_SCHEMA, "reason": STRING_SCHEMA}, abandon, writes_board=True),
        tool("request_hypotheses", "Ask the hypothesizer for more hypotheses, with concrete "
             "guidance on what is missing. Ends your turn. Refused when the hypothesizer "
             "has no calls left (your first message says whether it has).",
             {"guidance": STRING_SCHEMA}, request_hypotheses, ends_turn=True),
        tool("carry_on", "Let the investigation go on with the open hypotheses (their "
             "collection starts by itself). Ends your turn. Refused when no hypothesis is "
             "open.",
             {"note": STRING_SCHEMA}, carry_on, ends_turn=True, required=[]),
        tool("dismiss_dimension", "Leave candidate dimensions that no evidence has "
             "touched unexamined, with the reason (they are listed under 'Not examined' in "
             "the report). Name every dimension that shares one reason in one call (e.g. "
             "all the date parts of one column). Refused, dismissing none, when a name is "
             "not an untouched candidate dimension (the message lists them).",
             {"dimensions": {"type": "array", "minItems": 1, "items": {
                 "type": "string", "minLength": 1},
                 "description": "the names exactly as the digest lists them"},
              "dimension": {"type": "string", "minLength": 1,
                            "description": "one name (instead of dimensions)"},
              "reason": {"type": "string", "minLength": 1,
                         "description": "why examining them cannot change the answer"}},
             dismiss_dimension, writes_board=True, required=["reason"]),
        tool("finish", "End the investigation. Refused while any hypothesis that is not "
             "abandoned has no verdict (the message names them): carry on or abandon those "
             "first; and refused while a candidate dimension is untouched by every evidence "
             "(the message names them): have them examined or dismiss each with "
             "dismiss_dimension.",
             {"reason": STRING_SCHEMA}, finish, ends_turn=True),
    ]


def _dismissed_names(args: dict[str, Any]) -> list[str]:
    """The dimension names a ``dismiss_dimension`` call gives (``dimensions``, or the one
    ``dimension`` that recorded boards use), stripped, each once.

    Raises:
        ToolError: it names none.
    """
    given = args.get("dimensions") or []
    if isinstance(given, str):
        given = [given]
    if args.get("dimension"):
        given = [*given, args["dimension"]]
    names = list(dict.fromkeys(str(n).strip() for n in given if str(n).strip()))
    if not names:
        raise ToolError("name the dimensions to dismiss: dimensions=[...] as the digest "
                        "lists them")
    return names


def evidence_id_of(log: QueryLog, reference: str) -> str:
    """The evidence id ``reference`` stands for: itself, or for a query id of ``log``
    recorded as evidence, that evidence's id (an agent that records and cites in one
    answer cannot know the new id).

    Raises:
        ToolError: ``reference`` is a query of ``log`` never recorded as evidence.
    """
    if reference in log.evidence_ids:
        return log.evidence_ids[reference]
    if reference in log.results:
        raise ToolError(f"{reference} is a query of yours that is not evidence yet: record "
                        "it with record_evidence (before this call, in the same answer or "
                        "an earlier one), then cite it")
    return reference


# --- evidence collector ----------------------------------------------------------


def evidence_tools(ctx: TeamContext, log: QueryLog, agent: str, role: str,
                   hypothesis_id: str | None) -> list[Tool]:
    """``record_evidence`` for one hypothesis (or any, when ``hypothesis_id`` is None)."""
    properties: dict[str, Any] = {
        "query_id": {"type": "string", "description": "the id run_sql or an analysis "
                     "tool returned, e.g. Q3"},
        "description": {"type": "string", "description": "what the query computes"},
        "stance": _STANCE,
        "reading": {"type": "string", "description": "one sentence reading of the result"},
        "chart": _CHART,
    }
    if hypothesis_id is None:
        properties = {"hypothesis_id": STRING_SCHEMA, **properties}

    async def record_evidence(args: dict[str, Any]) -> str:
        target = hypothesis_id or args["hypothesis_id"]
        known_hypothesis(ctx, target)
        chart = _chart_request(log, args["query_id"], args.get("chart"))
        with one_write(ctx, log):  # the evidence, its link and its chart, or none
            evidence_id = record_query(ctx, log, args["query_id"],
                                       log.with_board_ids(args["description"]),
                                       role=role, agent=agent)
            reading = check_team_text(ctx, [evidence_id], target,
                                      log.with_board_ids(args["reading"]))
            ctx.board.link(evidence_id, target, args["stance"], reading.text, actor=agent)
            if chart is not None:
                ctx.board.request_chart(evidence_id, chart, actor=agent)
        return _with_notes(ctx, evidence_id, args["stance"], reading,
                           f"recorded {evidence_id} ({args['stance']} {target})")

    on_board = "an evidence already on the board (exploration included), e.g. E4"
    link_properties: dict[str, Any] = {
        "evidence_id": {"type": "string", "description": on_board if role == "judge" else
                        f"{on_board}, or a query id of yours recorded as evidence, e.g. Q7"},
        "stance": properties["stance"], "reading": properties["reading"]}
    if hypothesis_id is None:
        link_properties = {"hypothesis_id": STRING_SCHEMA, **link_properties}

    async def link_evidence(args: dict[str, Any]) -> str:
        target = hypothesis_id or args["hypothesis_id"]
        known_hypothesis(ctx, target)
        evidence = ctx.board.get_evidence(evidence_id_of(log, args["evidence_id"]))
        earlier = evidence.investigation_id not in (None, ctx.investigation_id)
        if earlier:
            check_reusable(ctx, evidence.id, evidence.investigation_id)
        reading = check_team_text(ctx, [evidence.id], target,
                                  log.with_board_ids(args["reading"]))
        with one_write(ctx, log):  # the reuse and the link, or neither
            if earlier:
                ctx.board.record_reuse(ctx.investigation_id, evidence.id, actor=agent)
            ctx.board.link(evidence.id, target, args["stance"], reading.text, actor=agent)
        return _with_notes(ctx, evidence.id, args["stance"], reading, f"linked {evidence.id} "
                           f"({args['stance']} {target}); its query was not run again")

    return [tool("record_evidence",
                 "Record the result of one of your queries as evidence for or against the "
                 "hypothesis. The board stores the real result of that query: for a "
                 "claim about particular entities, record a result with their own rows "
                 "and the columns that show the fact, not only a count of them. Refused "
                 "when the query id is not one run_sql or an analysis tool returned to you "
                 "in this conversation (any earlier message of it counts), or when "
                 "chart names a column the result lacks"
                 + (", or the hypothesis id is unknown." if hypothesis_id is None else "."),
                 properties, record_evidence, writes_board=True,
                 required=[name for name in properties if name != "chart"]),
            tool("link_evidence",
                 "Link evidence already on the board (an exploration result, or evidence "
                 "recorded for another hypothesis, or in a follow-up the earlier "
                 "investigation's evidence) to the hypothesis, with your reading, "
                 "instead of running its query again. Refused for an unknown evidence id, "
                 "evidence of another investigation (except the one a follow-up builds "
                 "on, while its data is unchanged), or a stance other than the one it "
                 "already has for this hypothesis (one reading per evidence and hypothesis: "
                 "a weak link is not upgraded; record new evidence that decides).",
                 link_properties, link_evidence, writes_board=True)]


def _with_notes(ctx: TeamContext, evidence_id: str, stance: str, reading: CheckedText,
                answer: str) -> str:
    """``answer``, with the reading check's note on numbers not in the rows, and
    :func:`aggregate_row_note`'s advice when a query's one row of totals was linked as
    deciding (an analysis tool's result is its own summary and gets none)."""
    notes = [reading.note()]
    if ctx.board.tool_call_of(evidence_id) is None:
        evidence = ctx.board.get_evidence(evidence_id)
        notes.append(aggregate_row_note(evidence_id, evidence.sql, evidence.row_count, stance))
    return "\n".join([answer, *(note for note in notes if note)])


def check_reusable(ctx: TeamContext, evidence_id: str, owner: str | None) -> None:
    """Refuse linking another investigation's evidence unless this investigation follows
    it up and the evidence's data is unchanged."""
    follow_up = ctx.follow_up
    if follow_up is None:
        raise ToolError(f"{evidence_id} belongs to investigation {owner}, which this one does "
                        "not follow up; run the query again and record its result")
    if any(e.id == evidence_id for e in follow_up.reusable.values()):
        return
    if owner != follow_up.earlier.id and evidence_id not in {
            r.evidence_id for r in ctx.board.list_reuses(follow_up.earlier.id)}:
        raise ToolError(f"{evidence_id} belongs to investigation {owner}; this follow-up "
                        f"builds on {follow_up.earlier.id} only: run the query again")
    changed = (f"its data changed since (tables {', '.join(follow_up.changed_tables)})"
               if follow_up.changed_tables else follow_up.why_not_reused
               or "its data cannot be confirmed unchanged")
    raise ToolError(f"{evidence_id} cannot be reused: {changed}; run its query again and "
                    "record the new result")


_CHART: dict[str, Any] = {
    "type": "object",
    "description": "optional: the columns the evidence's chart shows (x: the category or "
                   "time, y: the measure, split: a category whose values are drawn apart"
                   "); left out, the chart is chosen from the result's column types",
    "properties": {"x": STRING_SCHEMA, "y": STRING_SCHEMA, "split": STRING_SCHEMA},
}


def _chart_request(log: QueryLog, query_id: str, asked: Any) -> ChartRequest | None:
    """The chart asked for query ``query_id``'s result, checked against its columns."""
    if not asked:
        return None
    result = log.results.get(query_id)
    if result is None:
        return None  # record_query refuses the unknown id with the list of known ones
    columns = [str(c) for c in result.frame.columns]
    picked = {channel: asked.get(channel) for channel in ("x", "y", "split")}
    for channel, name in picked.items():
        if name is not None and name not in columns:
            raise ToolError(f"chart {channel}={name!r} is not a column of {query_id}; its "
                            f"columns: {', '.join(columns)}")
    return ChartRequest(picked["x"], picked["y"], color=picked["split"])


def submit_tool(decision: CollectorDecision, ctx: TeamContext, hypothesis_id: str,
                log: QueryLog | None = None) -> Tool:
    """``submit_for_judgement``: the collector's turn-ending tool. The summary the judge
    reads cites evidence by board id (``log``'s query ids are replaced) and is checked
    like a reading against the hypothesis's linked evidence: a number none of their rows
    holds is stored marked *(unverified)* (a real-model summary told the judge a quarter
    held 133 of 134 rows, which no result showed)."""

    async def submit(args: dict[str, Any]) -> str:
        links = ctx.board.list_links(hypothesis_id=hypothesis_id)
        if not links:
            raise ToolError(f"no evidence is linked to {hypothesis_id} yet; record evidence "
                            "first (or record what shows it cannot be tested)")
        summary = log.with_board_ids(args["summary"]) if log is not None else args["summary"]
        summary = check_team_text(ctx, [link.evidence_id for link in links], hypothesis_id,
                                  summary).text
        decision.summary = summary
        ctx.board.log_event("collector.submitted",
                            {"hypothesis_id": hypothesis_id, "summary": summary},
                            actor=f"collector-{hypothesis_id}",
                            investigation_id=ctx.investigation_id)
        return "submitted to the judge"

    return tool("submit_for_judgement", "Hand the hypothesis to the judge with a short summary "
                "(what you tested, what you could not), citing evidence in brackets: [E4], "
                "or this turn's query ids, [Q7], which become their evidence ids. Ends your "
                "turn. Refused until at least one evidence is linked to the hypothesis.",
                {"summary": STRING_SCHEMA}, submit, ends_turn=True, writes_board=True)


# --- reporter ------------------------------------------------------------------------


def reporter_tools(ctx: TeamContext, agent: str, decision: ReportDecision,
                   log: QueryLog | None = None) -> list[Tool]:
    """``mark_redundant`` and ``write_report``. With ``log`` (the single agent, which
    records evidence and writes its report in one answer), the report may cite in square
    brackets a query id of that log that became evidence ("[Q7]"): it is saved with the
    evidence id."""

    async def mark_redundant(args: dict[str, Any]) -> str:
        evidence = ctx.board.get_evidence(args["evidence_id"])
        if evidence.investigation_id not in (None, ctx.investigation_id):
            raise ToolError(f"{evidence.id} is evidence of investigation "
                            f"{evidence.investigation_id}; mark only this investigation's "
                            "own evidence redundant")
        cited_by = [v.hypothesis_id for v in ctx.board.list_verdicts() if evidence.id in
                    v.evidence_ids]
        if cited_by:
            raise ToolError(f"{evidence.id} is cited by the verdict on {', '.join(cited_by)}; "
                            "keep it")
        ctx.board.mark_redundant(evidence.id, args["reason"], actor=agent)
        return f"{evidence.id} marked redundant"

    async def write_report(args: dict[str, Any]) -> str:
        report = args["markdown"].strip()
        if not report:
            raise ToolError("the report is empty")
        decision.report = log.with_board_ids_in_brackets(report) if log is not None else report
        return "report saved"

    return [
        tool("mark_redundant", "Mark evidence redundant (kept, but out of the audit graph). "
             "Refused for evidence a verdict cites, and for evidence of another "
             "investigation (what a follow-up reused).",
             {"evidence_id": STRING_SCHEMA, "reason": STRING_SCHEMA}, mark_redundant,
             writes_board=True),
        tool("write_report", "Save the final Markdown report. Ends your turn. Refused when "
             "empty. Every number in it is then looked up in the evidence its sentence "
             "cites (and the verdicts); numbers not found are marked unverified.",
             {"markdown": STRING_SCHEMA}, write_report, ends_turn=True),
    ]


def abandon_tool(ctx: TeamContext, agent: str) -> Tool:
    """``abandon`` for the single-agent variant."""

    async def abandon(args: dict[str, Any]) -> str:
        hyp = known_hypothesis(ctx, args["hypothesis_id"])
        if hyp.status.is_settled:
            raise ToolError(f"{hyp.id} is already {hyp.status.value}")
        ctx.board.abandon(hyp.id, args["reason"], actor=agent)
        return f"abandoned {hyp.id}"

    return tool("abandon", "Abandon a hypothesis of this investigation that does not "
                "answer the objective. Refused for a hypothesis that has a verdict or is "
                "abandoned, and for another investigation's.",
                {"hypothesis_id": STRING_SCHEMA, "reason": STRING_SCHEMA}, abandon,
                writes_board=True)


def final_answer_tool(decision: ReactAnswer, log: QueryLog) -> Tool:
    """``final_answer`` for the ``react_sql`` baseline: text plus the structured answer,
    and (optionally) which of its queries support or contradict which candidate."""

    async def final_answer(args: dict[str, Any]) -> str:
        links = list(args.get("evidence", []))
        unknown = [item["query_id"] for item in links if item["query_id"] not in log.results]
        if unknown:
            raise ToolError(f"unknown query id(s) {', '.join(unknown)}; your queries: "
                            f"{', '.join(log.results) or 'none'}")
        decision.answer = {"answers": list(args["answers"]),
                          "candidates_considered": list(args["candidates_considered"]),
                          "evidence": [{**item, "sql": log.results[item["query_id"]].sql}
                                       for item in links]}
        decision.report = args["answer_markdown"]
        return "answer recorded"

    link = {"type": "object", "required": ["query_id", "candidate", "stance"],
            "properties": {"query_id": STRING_SCHEMA, "candidate": STRING_SCHEMA,
                           "stance": _QUERY_STANCE}}
    return tool(
        "final_answer", "Give your final answer. Ends the investigation. Refused when an "
        "evidence item names a query id run_sql did not return to you.",
        {"answer_markdown": STRING_SCHEMA,
         "answers": {**IDS_SCHEMA, "description": "every answer you conclude (each candidate "
                     "the evidence bears out), one per item"},
         "candidates_considered": {**IDS_SCHEMA, "description": "every candidate you examined"},
         "evidence": {"type": "array", "items": link,
                      "description": "optional: which of your queries (ids from run_sql) "
                      "support or contradict which candidate"}},
        final_answer, required=["answer_markdown", "answers", "candidates_considered"],
        ends_turn=True)


# --- helpers ---------------------------------------------------------------------------


@contextmanager
def one_write(ctx: TeamContext, log: QueryLog | None = None) -> Iterator[None]:
    """One board transaction for a tool's writes (:meth:`Board.atomic`); when it is
    undone, ``log`` forgets the evidence ids recorded inside it too."""
    recorded = dict(log.evidence_ids) if log is not None else {}
    try:
        with ctx.board.atomic():
            yield
    except BaseException:
        if log is not None:
            log.evidence_ids.clear()
            log.evidence_ids.update(recorded)
        raise


def known_hypothesis(ctx: TeamContext, hypothesis_id: str) -> Any:
    """The hypothesis of this investigation that a tool is about to change.

    A run changes only its own investigation's hypotheses: a follow-up sees the earlier
    investigation's hypotheses in its digest (and may link or cite its evidence), but
    abandoning them, judging them or linking evidence to them would rewrite that
    investigation's conclusions.

    Raises:
        ToolError: the id is unknown, or belongs to another investigation; the message
            lists this investigation's hypotheses.
    """
    from d2_notebook.errors import NotFoundError

    def own() -> str:
        return ", ".join(h.id for h in ctx.board.list_hypotheses(
            investigation_id=ctx.investigation_id)) or "none"

    try:
        hyp = ctx.board.get_hypothesis(hypothesis_id)
    except NotFoundError:
        raise ToolError(f"unknown hypothesis {hypothesis_id!r}; hypotheses: {own()}") from None
    if hyp.investigation_id not in (None, ctx.investigation_id):
        raise ToolError(f"{hyp.id} is a hypothesis of investigation {hyp.investigation_id}, "
                        "whose conclusions stay as they are (you may cite or link its "
                        "evidence); work on this investigation's hypotheses: "
                        f"{own()}, or add a new one")
    return hyp


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".") == " ".join(b.lower().split()).rstrip(".")


