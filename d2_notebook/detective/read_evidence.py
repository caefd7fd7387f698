"""``read_evidence``: the stored rows of evidence already on the board, for a collector
or judge that sees it listed by title only.

A digest lists the other hypotheses' evidence one line each (their rows would fill the
prompt); a real-model collector that needed one of them (a dose table recorded for
another hypothesis) could not read it, and ran a near-duplicate query instead of linking
it. This tool shows the rows as stored when the evidence was recorded (no query runs),
in the same view the prompts use, and what the reader's own hypothesis has said of it.
What parallel branches wrote meanwhile is left out, rows and readings alike (an id
recorded after the branch's digest is refused), so a replay answers the same.

``rows_matching`` shows instead the stored rows with a cell containing a text (as
stored or as shown), within the same budget: the rows of a long result that its
summarised view (the rows carrying the readings) leaves out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pandas as pd

from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.data.results import cell_text
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.digest import readable_evidence
from d2_notebook.detective.evidence_view import cut_at_word, evidence_details, tool_summary
from d2_notebook.detective.result_summary import render_rows
from d2_notebook.detective.team_tools import IDS_SCHEMA, check_reusable
from d2_notebook.detective.tools import Tool, ToolError, tool
from d2_notebook.errors import NotFoundError
from d2_notebook.llm import estimate_tokens

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
        text = str(args.get("rows_matching") or "").strip()
        if text:
            shown = await asyncio.to_thread(_matching_rows, ctx, wanted, text)
        else:
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
                {"evidence_ids": {**IDS_SCHEMA, "description": "evidence ids, e.g. [\"E4\"]"},
                 "rows_matching": {"type": "string", "description": (
                     "optional: show only the stored rows with a cell containing this text "
                     "(case ignored), e.g. \"amount\" for an analysis result's amount "
                     "segments; without it, the rows that carry the evidence's readings")}},
                read_evidence, required=["evidence_ids"], concurrent=True)


def _matching_rows(ctx: TeamContext, evidence_ids: list[str], text: str) -> str:
    """Each evidence's stored rows with a cell containing ``text`` (case ignored) as
    stored or as shown (``NULL``, floats to six decimals), in their stored order, within
    :data:`READ_EVIDENCE_TOKENS` shared by the evidence: the rows past it are counted,
    not shown, and a single row past it is cut."""
    wanted = text.casefold()
    budget = READ_EVIDENCE_TOKENS // len(evidence_ids)
    blocks = []
    for evidence_id in evidence_ids:
        item = ctx.board.get_evidence(evidence_id)
        frame = plain_frame(ctx.board.evidence_frame(evidence_id))
        hits = pd.Series(False, index=range(len(frame)))
        for column in frame.columns:
            values = frame[column].reset_index(drop=True)
            for cells in (values.astype(str), values.map(cell_text)):
                hits |= cells.str.casefold().str.contains(wanted, regex=False).to_numpy()
        positions = [int(i) for i in hits[hits].index]
        title = " ".join(tool_summary(item.description).split("\n", 1)[0].split())
        head = (f"[{item.id}] {title}\nStored rows with a cell containing {text!r}: "
                f"{len(positions):,} of {len(frame):,}")
        if not positions:
            blocks.append(f"{head} (columns: {', '.join(map(str, frame.columns))}).")
            continue
        shown = _rows_within(frame, positions, budget)
        rendered = render_rows(frame, shown)
        if (tokens := estimate_tokens(rendered)) > budget:  # one row with a long cell
            rendered = (cut_at_word(rendered, len(rendered) * budget // tokens)
                        + " (cut to this tool's budget)")
        more = (f"\n... {len(positions) - len(shown):,} more such rows: name a narrower "
                "text" if len(shown) < len(positions) else "")
        blocks.append(f"{head}:\n{rendered}{more}")
    return "\n\n".join(blocks)


def _rows_within(frame: pd.DataFrame, positions: list[int], budget: int) -> list[int]:
    """The longest prefix of ``positions`` (at least one) whose rows render within
    ``budget`` tokens (a binary search over the prefix's length)."""
    low, high = 1, len(positions)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(render_rows(frame, positions[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    return positions[:low]
