"""A verdict's size, as the judge gives it and as the board's evidence must bear it out.

``give_verdict`` (and ``refine``) take an optional ``contribution``: the role a factor
plays (major, minor or none), the effect with its 95% interval and, for a question about
a change, the share of the change it explains (as ``decompose`` computes it). The size is
not free text: :func:`read_contribution` refuses it unless the effect and both ends of
its interval are values of one row of the evidence named (to the precision a model
copies a number: :data:`MATCH_TOLERANCE`), or of one line of an analysis evidence's own
summary (a trend's slope and its interval are there, not in its per-period rows), and
the share (with its interval) values of one row of a cited evidence. The board then
checks that the size fits the verdict
(:func:`~d2_notebook.board.contributions.check_contribution`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from d2_notebook.board import Board, Contribution, ContributionRole, FactorClaim
from d2_notebook.board.records import MINOR_SHARE_LIMIT, NEGLIGIBLE_SHARE
from d2_notebook.data.analysis.decompose import MIX_OF_ALL
from d2_notebook.data.analysis.dimension_rest import EVEN_NOTE
from d2_notebook.detective.evidence_view import tool_summary

__all__ = ["CONTRIBUTION_PROPERTIES", "MATCH_TOLERANCE", "SIZE_RULE", "read_contribution",
           "row_scale"]

SIZE_RULE = ("A verdict on a factor states its size in contribution (effect and interval, "
             "and the share of a change it explains, copied from a cited evidence's row): "
             "a factor that is real but small is supported as a minor contributor with its "
             "size, not contradicted; contradicted means the data shows no effect or the "
             "opposite, or, for a hypothesis that the factor is the main cause "
             "(hypothesis_says), that it is a minor contributor (size kept), or, for one "
             "that it is the only cause, that other factors are real too (size kept).")
"""What the verdict tools' descriptions say about sizes."""

MATCH_TOLERANCE = 0.02
"""Largest relative difference between a number the judge gives and the stored value it
copies (models round to two or three significant digits)."""

_NUMBER = {"type": "number"}
_NUM = r"([-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_SLOPE = re.compile(rf"slope:? {_NUM}(?: per \w+)?,? \(?95% CI {_NUM} to {_NUM}")
"""A slope with its 95% interval as ``trend``'s summary states it, signs kept."""
CONTRIBUTION_PROPERTIES: dict[str, Any] = {
    "contribution": {
        "type": "object", "additionalProperties": False,
        "required": ["role", "evidence_id", "measure", "effect", "ci_low", "ci_high"],
        "description": (
            "The factor's size. major: a main cause (when several causes share a change, "
            "each that explains a large part of it is major, though under half); minor: "
            "real (its effect's interval excludes 0) but small next to the main causes — "
            "supported as a minor contributor, never contradicted; "
            "none: the data shows no effect, its interval holding 0 and narrow next to an "
            "effect that would matter (one that holds 0 but still reaches such an effect in "
            "the claimed direction is data that cannot decide: when no further query can "
            "narrow it, the verdict is inconclusive, with no size; either way the rationale "
            "names the size taken to matter, e.g. 'a tenth of the 83-day mean'). The "
            "verdict follows "
            "the hypothesis: a factor that is real supports a hypothesis that it matters "
            "and contradicts one that says it does not; none does the opposite; a "
            "hypothesis that it is the main cause is supported by major only, contradicted "
            "by minor (its size kept) or none; one that it is the only cause (it alone, "
            "rather than something broader) is contradicted by minor or none, and by "
            "major too when the evidence shows other real factors (its size kept). Copy the "
            "numbers from one row of a cited evidence (an analysis tool's effect and "
            "ci_low/ci_high; a trend's slope per period with its interval, from the line "
            "of its summary that states them; decompose's contribution with contribution_low/"
            "contribution_high and share_of_change with share_low/share_high, a mix shift "
            "from its dimension's '(mix of all segments)' row; the share of an exposure's "
            "effect that holding a dimension fixed explains, compare_within's share_removed "
            "with share_removed_low/share_removed_high from that dimension's rows, in effect, "
            "ci_low and ci_high (never in share, which is a share of a change); an exact "
            "figure with no "
            "sampling in it, such as a what-if computed over every row, from a cell that "
            "holds it (a query's difference column, not two cells subtracted) with ci_low "
            "and ci_high equal to it; such a figure is no effect, role none, when its "
            f"share of the change is under {NEGLIGIBLE_SHARE:.0%}, or, given without a "
            f"share, when it is under {NEGLIGIBLE_SHARE:.0%} of the levels it compares "
            "in its row: the fractional means or rates beside it, not counts, years or "
            "ids). Numbers are copied as the row holds them, sign included (a positive "
            "'loss' stays positive: say what it is in measure). A "
            f"minor contributor explains less than {MINOR_SHARE_LIMIT:.0%} of a change."),
        "properties": {
            "role": {"type": "string", "enum": [r.value for r in ContributionRole]},
            "evidence_id": {"type": "string", "description": "the cited evidence whose row "
                            "holds the effect and its interval"},
            "measure": {"type": "string", "minLength": 1,
                        "description": "what the effect is, e.g. 'rate change of the segment'"},
            "effect": _NUMBER, "ci_low": _NUMBER, "ci_high": _NUMBER,
            "share": {**_NUMBER, "description": "share of the change explained, as a "
                      "fraction (0.08 for 8%), for a question about a change: only a share "
                      "of the change the question asks about (a decompose of its own "
                      "metric); a share of another metric's change (a rate that feeds it) "
                      "is no share here: name it in measure"},
            "share_low": _NUMBER, "share_high": _NUMBER,
            "opposite": {"type": "boolean", "description": (
                "true when the effect is real but goes the other way to the one the "
                "hypothesis claims (it says more, the rows show less beyond chance): the "
                "verdict is contradicted and the size, with its role, is kept")},
            "hypothesis_says": {"type": "string", "enum": [c.value for c in FactorClaim],
                                "description": (
                    "what the hypothesis says about the sized factor: 'it does not "
                    "matter' also for a claim that nothing is left beyond named causes "
                    "(then a size of none supports it); 'it is the main cause' for a claim "
                    "that it drives or explains the outcome (the main driver); 'it is the "
                    "only cause' for a claim that it alone does, nothing else ('a single "
                    "X, rather than a broad rise'). Default: "
                    "read from the hypothesis's wording ('it matters' or 'it does not "
                    "matter').")},
        },
    },
}


def read_contribution(board: Board, args: dict[str, Any], cited: list[str]) -> Contribution | None:
    """The verdict's contribution, checked against the cited evidence's rows.

    Returns:
        None when the verdict gives no size. Its ``claim`` is the judge's
        ``hypothesis_says``, or None when not said (the board then reads the statement's
        wording).

    Raises:
        ValueError: A number is not in the evidence's rows, or the evidence is not cited
            (the message names the values the rows hold, or what to cite).
    """
    given = args.get("contribution")
    if given is None:
        return None
    if not isinstance(given, dict):
        raise ValueError("contribution must be an object: role, evidence_id, measure, effect, "
                         "ci_low, ci_high (and share, share_low, share_high for a change)")
    said = given.get("hypothesis_says")
    try:
        contribution = Contribution(
            role=ContributionRole(given["role"]), evidence_id=str(given["evidence_id"]),
            measure=str(given["measure"]), effect=given["effect"], ci_low=given["ci_low"],
            ci_high=given["ci_high"], share=given.get("share"),
            share_low=given.get("share_low"), share_high=given.get("share_high"),
            claim=None if said is None else FactorClaim(said),
            opposite=given.get("opposite") is True)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"contribution is incomplete or has an unknown role or "
                         f"hypothesis_says ({exc}); give role (major, minor or none), "
                         "evidence_id, measure, effect, ci_low, ci_high, and hypothesis_says "
                         f"one of {[c.value for c in FactorClaim]} or nothing") from None
    if contribution.evidence_id not in cited:
        raise ValueError(f"the size is read from {contribution.evidence_id}, which the verdict "
                         f"does not cite; cite it or read the size from one of: "
                         f"{', '.join(cited) or 'no evidence'}")
    numbers = [contribution.effect, contribution.ci_low, contribution.ci_high]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        raise ValueError("contribution effect, ci_low and ci_high must be numbers")
    frame = board.evidence_frame(contribution.evidence_id)
    if (_row_holding(frame, numbers) is None
            and not _summary_line_holds(board, contribution.evidence_id, numbers)):
        raise ValueError(
            f"effect {contribution.effect:g} with interval {contribution.ci_low:g} to "
            f"{contribution.ci_high:g} is not one row of {contribution.evidence_id}: copy the "
            "effect and both ends of its interval from the same row of the evidence's table "
            "(or, for a trend's slope, from one line of the tool's summary)")
    shares = [s for s in (contribution.share, contribution.share_low, contribution.share_high)
              if s is not None]
    if shares and not all(isinstance(s, int | float) and not isinstance(s, bool)
                          for s in shares):
        raise ValueError("contribution share, share_low and share_high must be numbers")
    if shares and not any(_row_holding(_without_removed_shares(board.evidence_frame(e)),
                                       shares) is not None for e in cited):
        raise ValueError(
            f"share {contribution.share:g} (with its interval, if given) is not one row of "
            "the cited evidence: copy share_of_change, share_low and share_high (fractions) "
            "from one row of a decompose result the verdict cites")
    _refuse_spread_evenly(board, contribution)
    return contribution


_EVEN = re.compile(rf"^(.+?): the change is spread evenly over its segments \(.*\); "
                   rf"{re.escape(EVEN_NOTE)}\.$", re.MULTILINE)
_ALSO_EVEN = re.compile(r"^Also spread evenly over their segments \(.*?\): (.+)\.$",
                        re.MULTILINE)
"""decompose's lines naming the dimensions over whose segments a change is spread evenly
(:func:`~d2_notebook.data.analysis.dimension_rest.even_lines`)."""


def _refuse_spread_evenly(board: Board, contribution: Contribution) -> None:
    """Refuse a segment's contribution or share of a change sized as a contributor (major
    or minor) when decompose says the change is spread evenly over its dimension's
    segments: the share then follows the segment's row count (Network "explains 48%" of a
    caller's rise because it is half his tickets) and sizes no factor. A real-model judge
    sized such a segment as a major contributor, and the reporter called it a driver
    (flag-8). Its difference from the rest (``vs_rest``) and a dimension's mix row are not
    refused; a dimension the summary does not name one by one is not either."""
    if contribution.role is ContributionRole.NONE:
        return
    call = board.tool_call_of(contribution.evidence_id)
    if call is None or call.tool != "decompose":
        return
    frame = board.evidence_frame(contribution.evidence_id)
    if not {"dimension", "segment", "contribution", "share_of_change"} <= set(frame.columns):
        return
    summary = tool_summary(board.get_evidence(contribution.evidence_id).description)
    even = {m.group(1) for m in _EVEN.finditer(summary)}
    listed = [f", {m.group(1)}," for m in _ALSO_EVEN.finditer(summary)]
    for row in frame.itertuples(index=False):
        if row.segment == MIX_OF_ALL or not (
                row.dimension in even or any(f", {row.dimension}," in text for text in listed)):
            continue
        sized = ([contribution.effect, contribution.ci_low, contribution.ci_high],
                 [row.contribution, row.contribution_low, row.contribution_high])
        shared = contribution.share is not None and _same(contribution.share,
                                                         row.share_of_change)
        if shared or all(_same(given, stored) for given, stored in zip(*sized, strict=True)):
            raise ValueError(
                f"{contribution.evidence_id} says the change is spread evenly over the "
                f"segments of {row.dimension} (none differs from the rest's beyond chance): "
                "a segment's contribution or share of the change follows its row count and "
                "localises nothing, so it sizes no factor. Size the segment by its "
                "difference from the rest (vs_rest with vs_rest_low and vs_rest_high from "
                "its row: role none when that interval holds 0), or give the verdict "
                "without a size")


def _without_removed_shares(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without compare_within's share of an effect that standardising removes
    (``share_removed*``): that is a share of an effect, never of a change."""
    return frame.drop(columns=[c for c in frame.columns if str(c).startswith("share_removed")])


def row_scale(board: Board, contribution: Contribution) -> float | None:
    """The scale of the levels an exact figure compares, read from the size's evidence.

    Every row whose numeric cells hold the effect and both ends of its interval (to
    :data:`MATCH_TOLERANCE`) is read, and in it only the finite cells that are not the
    effect or interval numbers themselves. When two of those, in columns of no integer
    type, differ by the effect, they are the levels it compares, whole numbers or not (a
    query that rounded its means to whole numbers), and the row's scale is the larger of
    them. Otherwise only the cells that are not integer-valued count (counts, years and
    ids are whole numbers; the levels an exact what-if compares are fractional means or
    rates), and the row's scale is the largest magnitude among them. The result is the
    *smallest* row scale (a factor is kept as real when in doubt), or
    None when no row holding the figure has such a cell. A row with no such cell sets no
    scale: the other rows holding the figure decide. A whole-numbered level (a rate of
    exactly 1, a mean of exactly 15) is left out too, like a count.

    The board uses the scale only for an exact figure given without a share of a change
    (see :func:`~d2_notebook.board.contributions.check_contribution`).
    """
    frame = board.evidence_frame(contribution.evidence_id)
    numbers = [contribution.effect, contribution.ci_low, contribution.ci_high]
    numeric = frame.select_dtypes(include="number")
    measured = ~np.array([pd.api.types.is_integer_dtype(t) for t in numeric.dtypes], bool)
    scales = []
    for row in _rows_holding(frame, numbers):
        others = [(cell, of_measure) for cell, of_measure in zip(row, measured, strict=True)
                  if math.isfinite(cell) and not any(_same(n, cell) for n in numbers)]
        compared = _compared_levels([cell for cell, of_measure in others if of_measure],
                                    contribution.effect)
        if compared is not None:
            scales.append(compared)
            continue
        levels = [abs(cell) for cell, _ in others if not cell.is_integer()]
        if levels:
            scales.append(max(levels))
    return min(scales, default=None)


def _compared_levels(cells: list[float], effect: float) -> float | None:
    """The scale of the two cells of a row whose difference is ``effect`` (a what-if's
    crude and adjusted means beside their difference), rounded or not; ``cells`` are
    those of columns that are not of an integer type (counts, years and ids are, and a
    pair of them differing by the effect by chance is no pair of levels): the smallest
    such pair's larger magnitude, or None when no two cells differ by it."""
    pairs = [max(abs(a), abs(b)) for i, a in enumerate(cells) for b in cells[i + 1:]
             if _same(effect, a - b) or _same(effect, b - a)]
    return min(pairs, default=None)


def _summary_line_holds(board: Board, evidence_id: str, numbers: list[float]) -> bool:
    """Whether an analysis evidence's own summary (the tool's words, not the recording
    agent's) states the effect and both ends of its interval as one slope with its
    interval, in that order and with their signs (``slope -0.84, 95% CI -0.87 to -0.81``):
    a trend's slope is in its summary, not in its per-period rows. Other numbers of the
    line (a p-value, the 95 of "95% CI") are no part of a size."""
    if board.tool_call_of(evidence_id) is None:
        return False
    summary = tool_summary(board.get_evidence(evidence_id).description)
    return any(all(_same(given, float(stated.replace("−", "-")))
                   for given, stated in zip(numbers, match.groups(), strict=True))
               for match in _SLOPE.finditer(summary))


def _row_holding(frame: pd.DataFrame, numbers: list[float]) -> int | None:
    """The position of the first row whose numeric cells hold every number (to
    :data:`MATCH_TOLERANCE`), or None."""
    numeric = frame.select_dtypes(include="number")
    if numeric.empty:
        return None
    values = numeric.to_numpy(dtype=float, na_value=np.nan)
    for position, row in enumerate(values):
        if _holds(row, numbers):
            return position
    return None


def _rows_holding(frame: pd.DataFrame, numbers: list[float]) -> list[np.ndarray]:
    """The numeric cells (as floats, NaN for missing) of every row that holds every
    number (to :data:`MATCH_TOLERANCE`)."""
    numeric = frame.select_dtypes(include="number")
    if numeric.empty:
        return []
    values = numeric.to_numpy(dtype=float, na_value=np.nan)
    return [row for row in values if _holds(row, numbers)]


def _holds(row: np.ndarray, numbers: list[float]) -> bool:
    return all(any(_same(n, cell) for cell in row) for n in numbers)


def _same(given: float, stored: float) -> bool:
    if math.isnan(stored):
        return False
    return math.isclose(given, stored, rel_tol=MATCH_TOLERANCE, abs_tol=1e-12) or (
        abs(stored) < 1e-9 and abs(given) < 1e-9)
