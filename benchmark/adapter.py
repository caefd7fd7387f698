"""Turn what the Data Detective produced into a :class:`~d2_notebook.teaching.answer.SystemAnswer`.

- Board variants (everything but ``react_sql``): read from the board by
  :func:`d2_notebook.teaching.board_answer.board_answer` (the same reading grades a
  student's board).
- ``react_sql``: the accused and considered people come from its structured answer;
  its queries become evidence nodes (``Q1``...), its answers hypotheses, and it has no
  edges (it keeps no board).
"""

from __future__ import annotations

from typing import Any

from d2_notebook.detective.variant import VARIANTS, Shape, Variant, parse_variant
from d2_notebook.errors import InvalidRecordError
from d2_notebook.teaching.answer import ConsideredSuspect, Edge, Evidence, Hypothesis, SystemAnswer
from d2_notebook.teaching.board_answer import PeopleIndex, board_answer, frame_rows


def react_answer(result: Any, people: PeopleIndex) -> SystemAnswer:
    """The answer of ``react_sql`` from its ``InvestigationResult`` (no board records)."""
    structured = result.answer or {}
    answers = [str(a) for a in structured.get("answers", [])]
    considered = [str(c) for c in structured.get("candidates_considered", [])]
    answer = SystemAnswer()
    answer.accused = {people.person(text) or text for text in answers}
    # Its answer names the hypotheses: one per candidate it names.
    hypothesis_of: dict[str, str] = {}
    for i, text in enumerate(dict.fromkeys([*answers, *considered]), start=1):
        person = people.person(text)
        hypothesis_of[text] = f"A{i}"
        answer.hypotheses.append(Hypothesis(f"A{i}", f"{text} is a murderer.", person))
        verdict = "accused" if (person or text) in answer.accused else "cleared"
        answer.suspects_considered.append(ConsideredSuspect(person or text, verdict, 0))
    for i, query in enumerate(result.queries, start=1):
        answer.evidence.append(Evidence(f"Q{i}", query.sql, frame_rows(query.frame), ""))
    # Links only where the agent stated them (its final answer's "evidence").
    for item in structured.get("evidence", []):
        target = hypothesis_of.get(item["candidate"])
        if target is not None:
            answer.edges.append(Edge(item["query_id"], target, item["stance"]))
    return answer


def parse_variants(spec: str) -> list[str]:
    """Variant names from a comma-separated list (the benchmarks' ``--variants``).

    Raises:
        ValueError: an unknown variant; the message lists the known ones.
    """
    names = [v.strip() for v in spec.split(",") if v.strip()]
    if not names:
        raise ValueError(f"no variants in {spec!r}; use some of: {', '.join(VARIANTS)}")
    try:
        return [parse_variant(name).name for name in names]
    except InvalidRecordError as exc:
        raise ValueError(str(exc)) from None


def variant_name(variant: Variant | str) -> str:
    """The name of a variant (a :class:`Variant` or a name, checked)."""
    return parse_variant(variant).name


def system_answer(result: Any, people: PeopleIndex) -> SystemAnswer:
    """The answer of any variant from its ``InvestigationResult``."""
    if result.settings.variant.shape is Shape.REACT:  # no board: its answer and queries
        return react_answer(result, people)
    return board_answer(result.board, result.investigation_id, people)
