"""Shared helpers of the verdict-size tests: a decompose row as a verdict's size, and a
hypothesis with one analysis result linked to it."""

from __future__ import annotations

from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.sql_tools import analysis_description


def decompose_size(row: dict, cited: str, role: str = "minor", **more: object) -> dict:
    """The ``contribution`` argument of a verdict sized by one decompose row."""
    return {"role": role, "evidence_id": cited, "measure": "rate change of the segment",
            "effect": round(row["rate_change"], 4), "ci_low": round(row["ci_low"], 4),
            "ci_high": round(row["ci_high"], 4), "share": round(row["share_of_change"], 3),
            "share_low": round(row["share_low"], 3),
            "share_high": round(row["share_high"], 3), **more}


def hypothesis_with_evidence(ctx: TeamContext, result, statement: str) -> tuple[str, str]:
    """A new hypothesis with ``result`` (an analysis result) linked to it as supporting;
    returns their ids."""
    hyp = ctx.board.add_hypothesis(statement, investigation_id=ctx.investigation_id)
    evidence = ctx.board.add_evidence(result.sql, result.frame,
                                      description=analysis_description(result, ""),
                                      investigation_id=ctx.investigation_id)
    ctx.board.link(evidence.id, hyp.id, "supports", actor="collector")
    return hyp.id, evidence.id
