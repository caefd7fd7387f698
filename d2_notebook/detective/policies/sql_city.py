"""Offline policies for SQL City murder cases: scripted "agents" that read the gold file.

Used by the benchmark harness and by the teaching notebook, whose offline detective
is :data:`CaseWalkthrough` (the oracle), labelled as scripted.

They drive the real team (every variant) through the real tools, and every query runs
as real SQL against the case database, so the harness, the adapter and the metrics are
tested end to end without a language model:

- :class:`OraclePolicy` follows the gold graph: one hypothesis per gold suspect, the
  gold evidence queries with the gold stances, verdicts by the gold murderers, and the
  reporter marks the exploratory crime-scene query redundant. It should score ~1/1/1.
- :class:`GreedyPolicy` accuses the first plausible suspect and stops: one hypothesis,
  one piece of evidence, supported, finished. Completeness is clearly lower.

Request handling is keyed on role, agent and step only (as in
:class:`~d2_notebook.detective.policies.hospital.HospitalWalkthrough`); the gold decides what to do.
"""

from __future__ import annotations

import re
from typing import Any

from d2_notebook.datasets.sql_city import Gold
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn

_PERSON = re.compile(r"\(person (\d+)\)")
_CLUE = re.compile(r"vs\. clue (C[\d.]+):")
_ROWS = re.compile(r"(\d+) rows x \d+ columns")
_READINGS = {
    "supports": "the data supports it",
    "contradicts": "the data contradicts it",
    "weak": "one unconfirmed source's statement bears on it: too thin to decide by",
    "neutral": "the record is missing: no evidence either way",
}
BY_ROWS = "by rows"
"""A planned stance read from the result: neutral when it has no rows (the record is
missing), supports otherwise."""


class GoldPolicy(TeamPolicy):
    """Base of the SQL City policies: what to hypothesise and query comes from ``gold``."""

    label = "SQL City gold policy (offline, no language model)"

    def __init__(self, gold: Gold) -> None:
        """Index the gold graph by suspect."""
        super().__init__()
        self.gold = gold
        evidence = {e["id"]: e for e in gold.graph["evidence"]}
        self.report_sql: str = gold.graph["evidence"][0]["sql"]
        self.edges: dict[int, list[tuple[dict[str, Any], str]]] = {}
        for edge in gold.graph["edges"]:
            pid = int(edge["hypothesis"].removeprefix("H"))
            self.edges.setdefault(pid, []).append((evidence[edge["evidence"]], edge["stance"]))
        self.murderers = {m["id"] for m in gold.murderers}

    # --- what to do (overridden by the greedy policy) ----------------------------------

    def suspects(self) -> list[dict[str, Any]]:
        """The suspects to hypothesise about."""
        return list(self.gold.suspects)

    def evidence_for(self, pid: int) -> list[tuple[dict[str, Any], str]]:
        """``(gold evidence node, stance)`` to collect for person ``pid`` (distinct SQL)."""
        seen: set[str] = set()
        out = []
        for node, stance in self.edges.get(pid, []):
            if node["sql"] not in seen:
                seen.add(node["sql"])
                out.append((node, stance))
        return out

    def status(self, pid: int) -> str:
        """The verdict on person ``pid``."""
        return "supported" if pid in self.murderers else "contradicted"

    def read_stance(self, turn: Turn, query_id: str, planned: str) -> str:
        """The stance to record for query ``query_id``'s result (the planned one)."""
        return planned

    # --- the team ------------------------------------------------------------------------

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        """Read the crime scene report, then add a hypothesis per suspect citing it."""
        if turn.step == 0:
            return [("run_sql", {"sql": self.report_sql, "purpose": "the murder report"})]
        return [*self._add_hypotheses(["Q1"]), ("done", {"summary": "suspects added"})]

    def collector(self, turn: Turn) -> list[Action] | str:
        """Run the suspect's gold queries, record them with the gold stances, submit."""
        pid = self._pid(turn, turn.hypothesis_id)
        plan = self.evidence_for(pid)
        judges_itself = "you also give the verdict" in turn.first_message
        if turn.step == 0:
            return [("run_sql", {"sql": node["sql"]}) for node, _ in plan]
        if turn.step == 1:
            actions: list[Action] = [self._record(q, node, self.read_stance(turn, q, stance))
                                     for q, (node, stance)
                                     in zip(turn.query_ids(), plan, strict=False)]
            if judges_itself:
                return actions
            return [*actions, ("submit_for_judgement", {"summary": "gold evidence recorded"})]
        if judges_itself:
            cited = turn.found(r"recorded (E\d+)")
            stances = turn.found(r"recorded E\d+ \((\w+)")
            return [("give_verdict", self._verdict(pid, list(zip(stances, cited, strict=False))))]
        return "done"

    def judge(self, turn: Turn) -> list[Action] | str:
        """Supported for murderers, contradicted for the others, citing linked evidence."""
        pid = self._pid(turn, turn.hypothesis_id)
        return [("give_verdict", self._verdict(pid, turn.linked_evidence()))]

    def reporter(self, turn: Turn) -> list[Action] | str:
        """Mark the exploratory evidence redundant, then write the report."""
        exploratory = turn.motivating_evidence()
        if turn.step == 0 and exploratory:
            return [("mark_redundant", {"evidence_id": e, "reason": "exploration that "
                                        "motivated every hypothesis; decides none"})
                    for e in exploratory]
        return super().reporter(turn)

    def planner(self, turn: Turn) -> list[Action] | str:
        """merged_planner: add the hypotheses (examined as they are added), then finish."""
        if not turn.hypotheses():
            if turn.step == 0:
                return self._add_hypotheses([])
            return [("carry_on", {})]
        return TeamPolicy.orchestrator(self, turn)

    def detective(self, turn: Turn) -> list[Action] | str:
        """single_agent_board: add, query, record, judge and report in five steps."""
        people = self.suspects()
        plans = [self.evidence_for(s["id"]) for s in people]
        if turn.step == 0:
            return self._add_hypotheses([])
        hyp_ids = turn.found(r"added (H\d+)")
        sqls = list(dict.fromkeys(node["sql"] for plan in plans for node, _ in plan))
        if turn.step == 1:
            return [("run_sql", {"sql": sql}) for sql in sqls]
        if turn.step == 2:
            query_of = dict(zip(sqls, turn.query_ids(), strict=False))
            return [("record_evidence", {"hypothesis_id": h, **self._record(
                query_of[node["sql"]], node,
                self.read_stance(turn, query_of[node["sql"]], stance))[1]})
                    for h, plan in zip(hyp_ids, plans, strict=False) for node, stance in plan]
        if turn.step == 3:
            recorded = re.findall(r"recorded (E\d+) \((\w+) (H\d+)\)",
                                  "\n".join(r.content for r in turn.results if not r.is_error))
            return [("give_verdict", {"hypothesis_id": h, **self._verdict(
                s["id"], [(st, e) for e, st, hh in recorded if hh == h])})
                for h, s in zip(hyp_ids, people, strict=False)]
        return [("write_report", {"markdown": self._report_text()})]

    def react(self, turn: Turn) -> list[Action] | str:
        """react_sql: run the gold queries, then answer the murderers."""
        if turn.step == 0:
            sqls = list(dict.fromkeys(n["sql"] for s in self.suspects()
                                      for n, _ in self.evidence_for(s["id"])))
            return [("run_sql", {"sql": sql}) for sql in sqls]
        accused = [s["name"] for s in self.suspects() if s["id"] in self.murderers]
        sqls = list(dict.fromkeys(n["sql"] for s in self.suspects()
                                  for n, _ in self.evidence_for(s["id"])))
        query_of = dict(zip(sqls, turn.query_ids(), strict=False))
        stated = [{"query_id": query_of[node["sql"]], "candidate": s["name"],
                   "stance": self.read_stance(turn, query_of[node["sql"]], stance)}
                  for s in self.suspects() for node, stance in self.evidence_for(s["id"])
                  if node["sql"] in query_of]
        return [("final_answer", {"answer_markdown": self._report_text(), "answers": accused,
                                  "candidates_considered": [s["name"] for s in self.suspects()],
                                  "evidence": stated})]

    # --- helpers ---------------------------------------------------------------------------

    def _add_hypotheses(self, query_ids: list[str]) -> list[Action]:
        return [("add_hypothesis", {"statement": f"{s['name']} (person {s['id']}) is a murderer.",
                                    "rationale": "fits the witnesses' clues",
                                    "query_ids": query_ids}) for s in self.suspects()]

    @staticmethod
    def _pid(turn: Turn, hypothesis_id: str | None) -> int:
        statement = next(h.statement for h in turn.hypotheses() if h.id == hypothesis_id)
        match = _PERSON.search(statement)
        if match is None:
            raise ValueError(f"no person id in hypothesis {statement!r}")
        return int(match.group(1))

    @staticmethod
    def _record(query_id: str, node: dict[str, Any], stance: str) -> Action:
        return ("record_evidence", {"query_id": query_id, "description": node["description"],
                                    "stance": stance, "reading": _READINGS[stance]})

    def _verdict(self, pid: int, linked: list[tuple[str, str]]) -> dict[str, Any]:
        status = self.status(pid)
        wanted = "supports" if status == "supported" else "contradicts"
        cited = [e for s, e in linked if s == wanted] or [e for _, e in linked]
        return {"status": status, "confidence": 0.9, "evidence_ids": cited,
                "rationale": f"{', '.join(cited) or 'no evidence'} decide it"}

    def _report_text(self) -> str:
        accused = [s["name"] for s in self.suspects() if s["id"] in self.murderers]
        return "## Answer\n\nMurderer(s): " + (", ".join(accused) or "none found")


class CarefulPolicy(GoldPolicy):
    """Weighs evidence by its quality, as the judge's rules ask.

    Besides the gold evidence it checks, for each suspect, the clue whose record is
    missing for the murderer (a query for the record: no rows is recorded ``neutral``,
    a record ``supports``) and the unreliable witness's clue (recorded ``weak``: one
    unconfirmed source, for or against). The judge then decides from the stances on the
    board alone: contradicted on any contradicting evidence, supported on supporting
    evidence, and every neutral or weak link discounted with its reason (a missing
    record, an unreliable source) — never counted against the suspect.
    """

    label = "SQL City careful policy (offline, no language model)"

    def evidence_for(self, pid: int) -> list[tuple[dict[str, Any], str]]:
        """The gold evidence (the unreliable clue's as weak), then the record of each
        missing-record clue and the unreliable clue the person was not linked to."""
        clues = {k["id"]: k for k in self.gold.clues}
        plan, seen = [], set()
        for node, stance in super().evidence_for(pid):
            match = _CLUE.search(node["description"])
            clue = clues.get(match.group(1)) if match else None
            if clue is not None:
                seen.add(clue["id"])
            unreliable = clue is not None and clue["status"] == "unreliable"
            plan.append((node, "weak" if unreliable else stance))
        groups = {clues[c]["group"] for c in seen}
        name = next(s["name"] for s in self.gold.suspects if s["id"] == pid)
        for clue in self.gold.clues:
            if clue["group"] not in groups or clue["id"] in seen or clue["status"] == "reliable":
                continue
            node = {"sql": f"SELECT p.id, p.name FROM person p WHERE p.id = {pid} AND "
                           f"({clue['predicate']})",
                    "description": f"{clue['kind']} record of {name} vs. clue {clue['id']}: "
                                   f"{clue['statement']}"}
            plan.append((node, BY_ROWS if clue["status"] == "missing" else "weak"))
        return plan

    def read_stance(self, turn: Turn, query_id: str, planned: str) -> str:
        """``neutral`` for a record query that found no record, ``supports`` when it found
        one; any other planned stance as it is."""
        if planned != BY_ROWS:
            return planned
        result = next(r.content for r in turn.results if r.content.startswith(f"{query_id}: "))
        found = _ROWS.search(result)
        return "neutral" if found is not None and found.group(1) == "0" else "supports"

    def judge(self, turn: Turn) -> list[Action] | str:
        """Decide from the board's stances; discount every neutral and weak link."""
        linked = turn.linked_evidence()
        against = [e for s, e in linked if s == "contradicts"]
        backing = [e for s, e in linked if s == "supports"]
        discounted = [
            {"evidence_id": e, "reason": "missing_record",
             "explanation": "the record is absent: no evidence either way, not against"}
            for s, e in linked if s == "neutral"] + [
            {"evidence_id": e, "reason": "unreliable_source",
             "explanation": "one unconfirmed source's statement; the data contradicts that "
                            "source elsewhere"}
            for s, e in linked if s == "weak"]
        if against:
            status, cited = "contradicted", against
        elif backing:
            status, cited = "supported", backing
        else:
            status, cited = "inconclusive", []
        return [("give_verdict", {
            "status": status, "confidence": 0.9, "evidence_ids": cited,
            "rationale": f"{', '.join(cited) or 'no decisive evidence'} decide it"
                         + (f"; discounted {', '.join(d['evidence_id'] for d in discounted)}"
                            if discounted else ""),
            "discounted": discounted})]


class OraclePolicy(GoldPolicy):
    """Follows the gold graph exactly (see the module docstring)."""

    label = "SQL City oracle policy (offline, no language model)"


class GreedyPolicy(GoldPolicy):
    """Accuses the first plausible suspect (the first murderer) on one piece of evidence."""

    label = "SQL City greedy policy (offline, no language model)"

    def suspects(self) -> list[dict[str, Any]]:
        """Only the first murderer."""
        first = self.gold.murderers[0]["id"]
        return [s for s in self.gold.suspects if s["id"] == first][:1]

    def evidence_for(self, pid: int) -> list[tuple[dict[str, Any], str]]:
        """One supporting gold evidence node."""
        return [next(p for p in super().evidence_for(pid) if p[1] == "supports")]

    def status(self, pid: int) -> str:
        """Always supported: it stops at the first plausible culprit."""
        return "supported"

    def reporter(self, turn: Turn) -> list[Action] | str:
        """Just the report."""
        return TeamPolicy.reporter(self, turn)


POLICIES = {"oracle": OraclePolicy, "greedy": GreedyPolicy, "careful": CarefulPolicy}
"""Offline policies by their ``--policy`` name."""


CaseWalkthrough = OraclePolicy
"""The scripted detective of the teaching notebook: it follows the case's gold file."""
