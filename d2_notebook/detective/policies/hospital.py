"""The scripted walk-through of the demo: PAPER's question over the hospital database.

With a configured model the team investigates for real. Without one,
:class:`HospitalWalkthrough` — a scripted offline policy, clearly labelled as such —
drives the same team through a short investigation: every query still runs through
the guarded SQL against the generated database, every stance is read from the query
result, and a real board is filled. It shows each mechanism once: several competing
hypotheses, parallel collectors, a judge sending a confounded comparison back for
more evidence, a refinement (Virexa → asthma / diabetes), the orchestrator asking for
more hypotheses, and the reporter's redundancy marks and report.

Asked :data:`hospital.FOLLOW_UP_QUESTION` as a follow-up on the same board, it builds on
the earlier investigation: it runs the earlier overview and the earlier asthma comparison
again (which the follow-up answers from the stored evidence, unchanged data being
reused rather than re-run) and one new comparison, and asks for no dose hypotheses.
"""

from __future__ import annotations

import re

from d2_notebook.datasets import hospital
from d2_notebook.detective.follow_up import FOLLOW_UP_HEADER
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn

SCRIPTED_LABEL = "scripted walk-through (offline policy, no language model)"

_FROM = ("FROM admissions a JOIN patients p USING (patient_id) "
         "JOIN treatments t USING (admission_id) JOIN outcomes o USING (admission_id)")
_DRUGS = [d for d in hospital.DRUGS if d != "Standard care"]
FOLLOW_UP_DRUGS = ("Virexa", "Pulmorex")
"""The drugs the follow-up examines for asthma: Virexa's comparison is the earlier
investigation's (reused), Pulmorex's is new (run)."""


def comparison_sql(drug: str, condition: str | None = None, *, by_severity: bool = False) -> str:
    """Death rate of older patients on ``drug`` against standard care; the difference
    (drug minus standard care) is the last column."""
    where = "p.age >= 65"
    if condition:
        where += (" AND p.patient_id IN (SELECT patient_id FROM comorbidities "
                  f"WHERE condition = '{condition}')")

    def rate(name: str) -> str:
        return f"avg(o.died::INTEGER) FILTER (WHERE t.drug = '{name}')"

    group = "a.severity, " if by_severity else ""
    return (f"SELECT {group}count(*) FILTER (WHERE t.drug = '{drug}') AS n_drug, "
            "count(*) FILTER (WHERE t.drug = 'Standard care') AS n_care, "
            f"round({rate(drug)}, 3) AS rate_drug, round({rate('Standard care')}, 3) AS rate_care, "
            f"round({rate(drug)} - {rate('Standard care')}, 3) AS difference "
            f"{_FROM} WHERE {where}"
            + (" GROUP BY a.severity, a.severity_score ORDER BY a.severity_score"
               if by_severity else ""))


DOSE_SQL = ("SELECT t.dose_mg >= 500 AS high_dose, count(*) AS admissions, "
            "round(avg(o.died::INTEGER), 3) AS death_rate "
            f"{_FROM} WHERE p.age >= 65 AND t.drug = 'Solvanir' AND t.dose_mg IS NOT NULL "
            "GROUP BY ALL ORDER BY ALL")

DOSE_BANDS_SQL = ("SELECT round(t.dose_mg / 200) * 200 AS dose_band_mg, count(*) AS admissions, "
                  "round(avg(o.died::INTEGER), 3) AS death_rate "
                  f"{_FROM} WHERE p.age >= 65 AND t.drug = 'Solvanir' AND t.dose_mg IS NOT NULL "
                  "GROUP BY ALL ORDER BY ALL")

OVERVIEW_SQL = ("SELECT t.drug, count(*) AS admissions, "
                "round(avg(o.died::INTEGER), 3) AS death_rate "
                f"{_FROM} WHERE p.age >= 65 GROUP BY t.drug ORDER BY death_rate")


_HEADER = re.compile(r"^\S+(?: than \d+)? rows x \d+ columns$")


def last_numbers(preview: str) -> list[float]:
    """The last number of every data row of a result preview (a ``run_sql`` tool result:
    the query id, then the preview fenced as data)."""
    lines = preview.splitlines()
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), -1)
    numbers = []
    for line in lines[start + 2:]:
        if line.startswith("</data>"):
            break
        match = re.search(r"(-?\d+(?:\.\d+)?)\s*$", line)
        if match:
            numbers.append(float(match.group(1)))
    return numbers


class HospitalWalkthrough(TeamPolicy):
    """A scripted team for :data:`hospital.QUESTION` (see the module docstring)."""

    label = SCRIPTED_LABEL

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        """First call: one overview query, then five competing hypotheses; when asked
        for more: a dose hypothesis. In a follow-up: the overview again, then one
        hypothesis per drug for older patients with asthma."""
        if FOLLOW_UP_HEADER in turn.first_message:
            return self._follow_up_hypotheses(turn)
        if "asks for more hypotheses" in turn.first_message:
            if turn.step == 0:
                return [("run_sql", {"sql": DOSE_SQL, "purpose": "Death rate of older "
                                     "patients on Solvanir, by dose above/below 500 mg"})]
            return [("add_hypothesis", {
                "statement": "Higher Solvanir doses (>= 500 mg) lower mortality for older "
                             "patients", "rationale": "doses vary widely", "query_ids": ["Q1"]}),
                    ("done", {"summary": "added a dose hypothesis"})]
        if turn.step == 0:
            return [("run_sql", {"sql": OVERVIEW_SQL, "purpose": "Death rate of older "
                                 "patients by treatment"})]
        statements = [f"{drug} lowers mortality for older COVID-19 patients" for drug in
                      ("Virexa", "Corvalin", "Pulmorex", "Hydrazol")]
        statements.insert(1, "The effect of Virexa on older patients depends on comorbidities")
        return [("add_hypothesis", {"statement": s, "rationale": "a treatment given to older "
                                    "patients in the overview", "query_ids": ["Q1"]})
                for s in statements] + [("done", {"summary": "five candidates"})]

    def orchestrator(self, turn: Turn) -> list[Action] | str:
        """Abandon the off-question Hydrazol claim while it is still proposed, ask once
        for dose hypotheses, then carry on until everything is settled, then finish."""
        off_question = tuple(h.id for h in turn.hypotheses() if h.status == "proposed"
                             and h.statement.startswith("Hydrazol"))
        reason = "Hydrazol is not used for older patients in this hospital's protocols"
        statements = " ".join(h.statement for h in turn.hypotheses())
        if "dose" not in statements and FOLLOW_UP_HEADER not in turn.first_message:
            return [*super().orchestrator(turn, abandon=off_question, reason=reason)[:-1],
                    ("request_hypotheses", {"guidance": "no hypothesis covers dose effects"})]
        return super().orchestrator(turn, abandon=off_question, reason=reason)

    def collector(self, turn: Turn) -> list[Action] | str:
        """Run the comparison the hypothesis calls for; record each result with the
        stance its numbers show; submit."""
        statement = self._statement(turn)
        if turn.step == 0:
            return [("run_sql", {"sql": sql}) for sql in self._queries(turn, statement)]
        judges_itself = "you also give the verdict" in turn.first_message
        if turn.step == 2 and judges_itself:  # the no_judge variant: decide from own stances
            return [("give_verdict", self._verdict(turn.found(r"recorded (E\d+)"),
                                                   turn.found(r"recorded E\d+ \((\w+)")))]
        actions: list[Action] = []
        for query_id, result in zip(turn.query_ids(), turn.results, strict=False):
            numbers = last_numbers(result.content)
            actions.append(("record_evidence", self._evidence(query_id, statement, numbers)))
        if judges_itself:
            return actions
        return [*actions, ("submit_for_judgement", {"summary": "evidence recorded"})]

    def judge(self, turn: Turn) -> list[Action] | str:
        """Send an unstratified drug comparison back once (severity may confound it);
        refine the comorbidity hypothesis; otherwise decide by the evidence's stances."""
        statement = self._statement(turn)
        evidence = turn.linked_evidence()
        plain_drug_claim = statement.endswith("lowers mortality for older COVID-19 patients")
        stratified = any("per severity" in turn.evidence_line(e) for _, e in evidence)
        if plain_drug_claim and not stratified and "is possible" in turn.first_message:
            return [("request_more_evidence", {"hints": "compare within severity strata: "
                                               "the drug may be given to milder cases"})]
        verdict = self._verdict([e for _, e in evidence], [s for s, _ in evidence])
        may_refine = "Refining it is possible." in turn.first_message
        if "depends on comorbidities" in statement and may_refine:
            return [("refine", {**verdict, "children": [
                {"statement": "Virexa helps older patients with asthma",
                 "rationale": "the effect differs by comorbidity"},
                {"statement": "Virexa helps older patients with diabetes",
                 "rationale": "the effect differs by comorbidity"}]})]
        return [("give_verdict", verdict)]

    def reporter(self, turn: Turn) -> list[Action] | str:
        """Mark the shared overview query redundant, then write the report."""
        if turn.step == 0:
            return [("mark_redundant", {"evidence_id": e, "reason": "exploration that "
                                        "motivated hypotheses; decides none"})
                    for e in turn.motivating_evidence()[:1]]
        return super().reporter(turn)

    def _follow_up_hypotheses(self, turn: Turn) -> list[Action]:
        if turn.step == 0:
            return [("run_sql", {"sql": OVERVIEW_SQL, "purpose": "Death rate of older "
                                 "patients by treatment"})]
        return [("add_hypothesis", {"statement": f"{drug} helps older patients with asthma",
                                    "rationale": "the earlier investigation found effects "
                                    "that differ by comorbidity", "query_ids": ["Q1"]})
                for drug in FOLLOW_UP_DRUGS] + [("done", {"summary": "asthma candidates"})]

    # --- the variants' merged roles ------------------------------------------------------

    def planner(self, turn: Turn) -> list[Action] | str:
        """merged_planner: explore and add hypotheses, then steer like the orchestrator."""
        if not turn.hypotheses():
            if turn.step == 0:
                return self.hypothesizer(turn)
            if turn.step == 1:
                return [a for a in self.hypothesizer(turn) if a[0] != "done"]
            return [("carry_on", {})]
        return TeamPolicy.orchestrator(self, turn)

    def detective(self, turn: Turn) -> list[Action] | str:
        """single_agent_board: one agent adds, tests, judges and reports."""
        drugs = ("Virexa", "Corvalin", "Pulmorex")
        if turn.step == 0:
            return [("add_hypothesis", {"statement": f"{d} lowers mortality for older COVID-19 "
                                        "patients", "rationale": "a treatment in the data"})
                    for d in drugs]
        if turn.step == 1:
            return [("run_sql", {"sql": comparison_sql(d, by_severity=True)}) for d in drugs]
        if turn.step == 2:
            hypotheses, queries = turn.found(r"added (H\d+)"), turn.query_ids()
            return [("record_evidence", {"hypothesis_id": h, **self._evidence(
                q, "per severity", last_numbers(r.content))})
                for h, q, r in zip(hypotheses, queries, turn.results[3:], strict=False)]
        if turn.step == 3:
            stances = turn.found(r"recorded E\d+ \((\w+)")
            return [("give_verdict", {"hypothesis_id": h, **self._verdict([e], [s])})
                    for h, e, s in zip(turn.found(r"added (H\d+)"),
                                       turn.found(r"recorded (E\d+)"), stances, strict=False)]
        return [("write_report", {"markdown": "## Answer\n\nSee the verdicts on the board."})]

    def react(self, turn: Turn) -> list[Action] | str:
        """react_sql: query per drug and severity, then answer."""
        if turn.step == 0:
            return [("run_sql", {"sql": comparison_sql(d, by_severity=True)}) for d in _DRUGS]
        better = [d for d, r in zip(_DRUGS, turn.results, strict=False)
                  if sum(n < -0.03 for n in last_numbers(r.content)) >= 3]
        return [("final_answer", {"answer_markdown": f"Most effective: {', '.join(better)}",
                                  "answers": better, "candidates_considered": list(_DRUGS)})]

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _verdict(cited: list[str], stances: list[str]) -> dict[str, object]:
        against = [e for e, s in zip(cited, stances, strict=False) if s == "contradicts"]
        backing = [e for e in cited if e not in against]

        def says(ids: list[str], verb: str) -> str:
            return f"{', '.join(ids)} {verb}{'s' if len(ids) == 1 else ''} it"

        if against:
            rationale = says(against, "contradict") + (
                f"; {says(backing, 'support')} only in a cruder comparison" if backing else "")
        else:
            rationale = says(cited, "support") + " within comparable patients"
        return {"status": "contradicted" if against else "supported",
                "confidence": 0.8 if against else 0.85, "evidence_ids": cited,
                "no_check_reason": "the scripted walk-through compares within severity "
                                   "strata and comorbidity subgroups in its own queries",
                "rationale": rationale}

    @staticmethod
    def _statement(turn: Turn) -> str:
        return next(h.statement for h in turn.hypotheses() if h.id == turn.hypothesis_id)

    @staticmethod
    def _queries(turn: Turn, statement: str) -> list[str]:
        drug = next((d for d in _DRUGS if d in statement), "Virexa")
        if "dose" in statement:
            return [DOSE_BANDS_SQL]
        if "depends on comorbidities" in statement:
            return [comparison_sql(drug, "asthma"), comparison_sql(drug, "diabetes")]
        condition = next((c for c in ("asthma", "diabetes") if c in statement), None)
        by_severity = "SENT IT BACK" in turn.first_message
        return [comparison_sql(drug, condition, by_severity=by_severity)]

    @staticmethod
    def _evidence(query_id: str, statement: str, numbers: list[float]) -> dict[str, object]:
        if "dose" in statement:
            lowest, highest = (numbers or [0.0])[0], (numbers or [0.0])[-1]
            helps = highest < lowest - 0.03
            description = "Death rate of older patients on Solvanir by 200 mg dose band"
            reading = (f"death rate falls from {lowest:.3f} in the lowest band to "
                       f"{highest:.3f} in the highest" if helps else "no fall with dose")
        elif "depends" in statement:
            helps = True
            description = "Virexa vs standard care within one comorbidity, age 65+"
            reading = f"difference in death rate: {numbers[0]:+.3f}" if numbers else "no rows"
        else:
            better = [n for n in numbers if n < -0.03]
            helps = bool(numbers) and len(better) > len(numbers) / 2
            strata = f" in {len(better)} of {len(numbers)} severity strata" if len(numbers) > 1 \
                else ""
            description = ("Death rate vs standard care, age 65+"
                           + (", per severity" if len(numbers) > 1 else ""))
            reading = (f"differences {', '.join(f'{n:+.3f}' for n in numbers)}"
                       f"; lower{strata}" if helps else
                       f"differences {', '.join(f'{n:+.3f}' for n in numbers)}; not lower")
        return {"query_id": query_id, "description": description,
                "stance": "supports" if helps else "contradicts", "reading": reading}
