"""``read_evidence``: the stored rows of evidence already on the board, for a collector
or judge that sees it listed by title only.

A digest lists the other hypotheses' evidence one line each (their rows would fill the
prompt); a real-model collector that needed one of them (a dose table recorded for
another hypothesis) could not read it, and ran a near-duplicate query instead of linking
it. This tool shows the rows as stored when the evidence was recorded (no query runs),
in the same view the prompts use, and what the reader's own hypothesis has said of it.
What parallel branches wrote meanwhile is left out, rows and readings alike (an id
recorded after the branch's digest is refused), so a replay answers the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.digest import readable_evidence
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.team_tools import IDS_SCHEMA, check_reusable
from d2_notebook.detective.tools import Tool, ToolError, tool
from d2_notebook.errors import NotFoundError

READ_EVIDENCE_TOKENS = 3_000
"""Tokens one answer of ``read_evidence`` may take (large results are summarised)."""
MOST_READ = 4
"""Most evidence one call reads."""


def read_evidence_tool(ctx: TeamContext, hypothesis_id: str | None) -> Tool:
    """``read_evidence`` for an agent working on ``hypothesis_id`` (None: any)."""

    async def read_evidence(args: dict[str, Any]) -> str:
        wanted = list(dict.fromkeys(str(e).strip() for e in args["evidence_ids"]))
        if not wanted:
            raise ToolError("evidence_ids is empty: name the evidence to read, e.g. [\"E4\"]")
        if len(wanted) > MOST_READ:
            raise ToolError(f"at most {MOST_READ} evidence per call (asked for "
                            f"{len(wanted)}): read the others in a second call")
        readable = (readable_evidence(ctx.board, ctx.investigation_id, hypothesis_id)
                    if hypothesis_id is not None else None)
        for evidence_id in wanted:
            try:
                evidence = ctx.board.get_evidence(evidence_id)
            except NotFoundError:
                raise ToolError(f"no evidence {evidence_id} on the board: use an id the "
                                "digest lists, e.g. E4") from None
            if evidence.investigation_id not in (None, ctx.investigation_id):
                check_reusable(ctx, evidence.id, evidence.investigation_id)
            elif readable is not None and evidence_id not in readable:
                raise ToolError(f"{evidence_id} was recorded after your digest was written "
                                "(by a hypothesis examined in parallel): read one the "
                                "digest lists")
        shown = await asyncio.to_thread(evidence_details, ctx.board, wanted,
                                        budget_tokens=READ_EVIDENCE_TOKENS,
                                        focus=hypothesis_id)
        return (f"{shown}\n\n(stored rows; no query was run. To use one for the hypothesis, "
                "link_evidence it with your reading.)")

    return tool("read_evidence",
                "Read the stored rows of evidence already on the board (listed by title "
                "in the digest: other hypotheses' evidence and exploration) without running "
                f"its query again; at most {MOST_READ} per call. Then link_evidence the one "
                "that tests your hypothesis, instead of running a near-duplicate query.",
                {"evidence_ids": {**IDS_SCHEMA, "description": "evidence ids, e.g. [\"E4\"]"}},
                read_evidence, concurrent=True)
