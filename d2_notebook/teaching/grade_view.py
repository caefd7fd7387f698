"""Grades as text and as a small HTML table, alone or side by side (:func:`compare`).

Rendering only: every figure comes from the :class:`~d2_notebook.teaching.grading.Grade`.
All text from a board or a gold file is HTML-escaped.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from d2_notebook.teaching.grading import FactGrade, Grade, LinkOutcome, SuspectGrade

_STYLE = ("border-collapse:collapse;margin:4px 0;font-size:13px",
          "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left")


def _pct(value: float) -> str:
    return f"{value:.2f}"


def _board_name(grade: Grade) -> str:
    return Path(grade.board).name if grade.board not in ("", ":memory:") else "board"


def _facts_summary(suspect: SuspectGrade) -> str:
    return (f"{suspect.facts_earned} linked, {suspect.facts_established} established "
            f"of {len(suspect.facts)}")


def _fact_line(fact: FactGrade) -> str:
    label = f"{fact.source.label}, {fact.stance}" if fact.stance else fact.source.label
    if fact.earned_by is not None and fact.earned >= 0.5:
        evidence, hypothesis = fact.earned_by
        return f"  ✓ {label}: {evidence} → {hypothesis} ({_pct(fact.earned)})"
    if fact.is_established:
        why = ("no link earns it" if fact.stance else "on the board")
        mark = "~" if fact.stance else "✓"
        return f"  {mark} {label}: shown by {fact.established_by}, {why}"
    return f"  ✗ {label}: not on the board"


def grade_text(grade: Grade) -> str:
    """The grade as plain text."""
    s = grade.score
    analysed = sum(x.analysed for x in grade.suspects)
    lines = [
        f"Grade of {_board_name(grade)} (case {s.case_id}, {s.tier})",
        f"  correctness    {_pct(s.correctness)}  precision {_pct(s.precision)}, "
        f"recall {_pct(s.recall)}",
        f"  completeness   {_pct(s.completeness)}  {analysed} of {len(grade.suspects)} "
        f"suspects analysed",
        f"  verifiability  {_pct(s.verifiability)}  links: precision "
        f"{_pct(s.edge_precision)}, recall {_pct(s.edge_recall)}",
        f"  hints used     {grade.hints_used}",
        "",
        "Suspects",
    ]
    width = max((len(f"{x.name} ({x.id})") for x in grade.suspects), default=10)
    for x in grade.suspects:
        who = f"{x.name} ({x.id})".ljust(width)
        on_board = ", ".join(x.hypotheses) or "-"
        lines.append(f"  {who}  {x.role:<9}  {x.outcome.value:<15}  facts: "
                     f"{_facts_summary(x)}  [{on_board}]")
    lines.append(f"Wrong accusations: {', '.join(grade.wrong_accusations()) or 'none'}")
    lines.append(f"Missed murderers: {', '.join(grade.missed_murderers()) or 'none'}")
    lines += ["", "Facts"]
    for x in grade.suspects:
        lines.append(f"  {x.name} ({x.id})")
        lines += ["  " + _fact_line(f) for f in x.facts]
    lines.append("  context (report, witnesses, interviews)")
    lines += ["  " + _fact_line(f) for f in grade.context]
    lines += ["", "Links"]
    for link in grade.links:
        credit = f" ({_pct(link.credit)})" if link.outcome is LinkOutcome.RIGHT else ""
        lines.append(f"  {link.evidence_id} {link.stance} {link.hypothesis_id}: "
                     f"{link.outcome.value}{credit}")
    if not grade.links:
        lines.append("  none")
    return "\n".join(lines)


def _table(header: list[str], rows: list[list[str]]) -> str:
    table, cell = _STYLE
    head = "".join(f'<th style="{cell}">{html.escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{cell}">{html.escape(c)}</td>' for c in row)
                   + "</tr>" for row in rows)
    return f'<table style="{table}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def grade_html(grade: Grade) -> str:
    """The grade as a small HTML block: metrics, suspects, and the details folded."""
    s = grade.score
    analysed = sum(x.analysed for x in grade.suspects)
    metrics = _table(["", "score", "detail"], [
        ["correctness", _pct(s.correctness),
         f"precision {_pct(s.precision)}, recall {_pct(s.recall)}"],
        ["completeness", _pct(s.completeness),
         f"{analysed} of {len(grade.suspects)} suspects analysed"],
        ["verifiability", _pct(s.verifiability),
         f"links: precision {_pct(s.edge_precision)}, recall {_pct(s.edge_recall)}"],
        ["hints used", str(grade.hints_used), ""],
    ])
    suspects = _table(["suspect", "role", "on the board", "outcome", "facts"], [
        [f"{x.name} ({x.id})", x.role, ", ".join(x.hypotheses) or "-", x.outcome.value,
         _facts_summary(x)] for x in grade.suspects])
    wrong = html.escape(", ".join(grade.wrong_accusations()) or "none")
    missed = html.escape(", ".join(grade.missed_murderers()) or "none")
    facts = html.escape("\n".join(
        [line for x in grade.suspects for line in
         [f"{x.name} ({x.id})", *(_fact_line(f) for f in x.facts)]]
        + ["context (report, witnesses, interviews)", *(_fact_line(f) for f in grade.context)]))
    links = _table(["evidence", "stance", "hypothesis", "outcome", "credit"], [
        [g.evidence_id, g.stance, g.hypothesis_id, g.outcome.value, _pct(g.credit)]
        for g in grade.links])
    title = html.escape(f"Grade of {_board_name(grade)} (case {s.case_id}, {s.tier})")
    return (f'<div class="d2-grade"><b>{title}</b>{metrics}{suspects}'
            f"<p>Wrong accusations: {wrong}<br>Missed murderers: {missed}</p>"
            f"<details><summary>Facts</summary><pre>{facts}</pre></details>"
            f"<details><summary>Links ({len(grade.links)})</summary>{links}</details></div>")


@dataclass(frozen=True, repr=False)
class GradeComparison:
    """Grades of several boards of one case, side by side (built by :func:`compare`)."""

    grades: Mapping[str, Grade]

    def rows(self) -> list[list[str]]:
        """One row per figure, then one per gold suspect; one column per board."""
        grades = list(self.grades.values())
        rows = [
            ["correctness", *(_pct(g.correctness) for g in grades)],
            ["completeness", *(_pct(g.completeness) for g in grades)],
            ["verifiability", *(_pct(g.verifiability) for g in grades)],
            ["suspects analysed", *(f"{sum(x.analysed for x in g.suspects)} of "
                                    f"{len(g.suspects)}" for g in grades)],
            ["wrong accusations", *(str(len(g.wrong_accusations())) for g in grades)],
            ["murderers missed", *(str(len(g.missed_murderers())) for g in grades)],
            ["facts linked", *(f"{sum(x.facts_earned for x in g.suspects)} of "
                               f"{sum(len(x.facts) for x in g.suspects)}" for g in grades)],
            ["hints used", *(str(g.hints_used) for g in grades)],
        ]
        for index, suspect in enumerate(grades[0].suspects if grades else ()):
            rows.append([f"{suspect.name} ({suspect.role})",
                         *(g.suspects[index].outcome.value for g in grades)])
        return rows

    def __str__(self) -> str:
        header = ["", *self.grades]
        rows = self.rows()
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                         for r in [header, *rows])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return _table(["", *self.grades], self.rows())


def compare(grades: Mapping[str, Grade]) -> GradeComparison:
    """Grades of one case's boards side by side, e.g. ``compare({"you": g1, "detective": g2})``.

    Raises:
        ValueError: no grades, or grades of different cases.
    """
    cases = {g.case_id for g in grades.values()}
    if len(cases) != 1:
        raise ValueError("compare() needs grades of one case; got "
                         + (", ".join(sorted(cases)) or "none"))
    return GradeComparison(dict(grades))
