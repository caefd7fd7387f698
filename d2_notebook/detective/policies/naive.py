"""A deliberately naive offline team: it knows nothing of the domain, only the tools.

:class:`NaivePolicy` drives the whole team (a
:class:`~d2_notebook.llm.offline.FunctionModel`, no language model) and acts only on
what every agent is shown: the question, the schema summary in the system prompt, the
board digest and the analysis tools' results. It shows that the team's breadth rests
on the system (the analysis tools, their flags, the coverage map), not on a model
thinking of each dimension. Its rules, all generic:

- **Outcome**: the first BOOLEAN column of the schema, as the rate
  ``avg(CASE WHEN <column> THEN 1 ELSE 0 END)``.
- **Exposure**: the question's "which/what <word>" names a table (same stem); its first
  text column is the exposure, its most frequent value the reference.
- **Source**: the outcome's table joined to the exposure's table along the join keys
  the schema lists.
- **Hypothesizer**: one ``segment_scan`` of the outcome and the exposure's value counts;
  one hypothesis per other exposure value, and one for the scan's top flagged segment.
- **Collector**: one ``compare_within`` for the hypothesis (for a refined subgroup, split
  by the subgroup's dimension and read its stratum's row).
- **Judge**: a HETEROGENEITY flag → ``refine`` into the flagged strata; CONFOUNDING with a
  standardised effect whose interval holds zero → contradicted; otherwise the crude (or
  stratum) interval decides.
- **A change**: when the question asks about a rise, fall or change and the outcome's
  table has a date column, the period is that column's year. The hypothesizer adds one
  hypothesis per exposure value ("contributes to the change"); the collector runs one
  ``decompose`` split by the exposure and reads its value's row: the rate change with
  its interval and the share of the change; the judge supports a value whose rate moved
  with the change as a major (half the change or more) or minor contributor with that
  size, and contradicts one whose interval holds zero (no contributor).
- **Orchestrator**: the default one: once every hypothesis is settled it dismisses the
  candidate dimensions the digest lists as untouched (:attr:`dismissal` says why), then
  finishes.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn

NAIVE_LABEL = "naive offline policy (no language model, no domain knowledge)"

_TABLE = re.compile(r"^(\S+) \((?:table|view)[^)]*\)$")
_COLUMN = re.compile(r"^  (\S+) (\S+)")
_KEY = re.compile(r"^  (\S+)\.(\S+) -> (\S+)\.(\S+) \(")
_WHICH = re.compile(r"\b(?:which|what)\s+(\w+)", re.IGNORECASE)
_CI = r"(-?[\d.e+-]+) \(95% CI (-?[\d.e+-]+) to (-?[\d.e+-]+)(?:; [^)]*)?\)"
_CRUDE = re.compile(r"crude effect " + _CI)
_STANDARDISED = re.compile(r"standardised over (.+?) " + _CI)
_HETEROGENEITY = re.compile(r"HETEROGENEITY: the effect of .+? differs across (.+?) beyond "
                            r"chance \([^)]*\): (.+)")
_STRATUM = re.compile(r"(?:^|; )(.+?): -?[\d.e+-]+ vs")
_FLAGGED = re.compile(r"^- (\S+) = (.+?): -?[\d.]+(?:e[+-]?\d+)? \(n = ", re.MULTILINE)
"""A flagged segment's line in a segment_scan summary: "- t.col = value: 0.52 (n = 266) …"."""
_STATEMENT = re.compile(r"^(\S+) = '(.*?)' changes the rate of (\S+)(?: against \S+ = "
                        r"'(.*?)')?(?: within (.+): (.+))?$")
_PLAIN = re.compile(r"^\w+\.\w+$")
_LABEL = re.compile(r"[\[<>(]")
_VALUE_ROW = re.compile(r"^(.*?\S)\s{2,}(\d+)\s*$")
_CHANGE = re.compile(r"\b(?:rise|rose|risen|fall|fell|drop|dropped|increase[sd]?|"
                     r"decrease[sd]?|change[sd]?|grow|grew|growth|decline[sd]?)\b",
                     re.IGNORECASE)
_CONTRIBUTES = re.compile(r"^(\S+) = '(.*?)' contributes to the change in the rate of (\S+)$")
_SIZE = re.compile(r"size (\S+) \[(\S+), (\S+)\] share (\S+) \[(\S+), (\S+)\]")
MAJOR_SHARE = 0.5
"""A value explaining this share of the change or more is a major contributor."""


@dataclass(frozen=True)
class Schema:
    """What the policy reads from the schema summary: columns by table, join keys."""

    columns: dict[str, list[tuple[str, str]]]
    keys: list[tuple[str, str, str, str]]

    @classmethod
    def read(cls, system_prompt: str) -> Schema:
        """Parse the schema summary the system prompt ends with."""
        text = system_prompt.split("DATABASE SCHEMA (DuckDB):", 1)[-1]
        columns: dict[str, list[tuple[str, str]]] = {}
        keys, table = [], None
        for line in text.splitlines():
            if (found := _TABLE.match(line)) is not None:
                table = found.group(1)
                columns[table] = []
            elif (key := _KEY.match(line)) is not None:
                keys.append(key.groups())
            elif table is not None and (column := _COLUMN.match(line)) is not None:
                columns[table].append((column.group(1), column.group(2)))
        return cls(columns, keys)

    def time_column(self, table: str) -> str | None:
        """``table.column`` of the table's first DATE or TIMESTAMP column, or None."""
        return next((f"{table}.{c}" for c, kind in self.columns.get(table, [])
                     if kind.startswith(("DATE", "TIMESTAMP"))), None)

    def outcome(self) -> str | None:
        """``table.column`` of the first BOOLEAN column, or None."""
        return next((f"{t}.{c}" for t, cols in self.columns.items() for c, kind in cols
                     if kind == "BOOLEAN"), None)

    def exposure(self, question: str) -> str | None:
        """``table.column``: the first text column of the table the question asks about."""
        for word in _WHICH.findall(question):
            stem = word.lower().rstrip("s")
            for table, cols in self.columns.items():
                if table.lower().rstrip("s") == stem:
                    text = [c for c, kind in cols if kind.startswith("VARCHAR")]
                    if text:
                        return f"{table}.{text[0]}"
        return None

    def source(self, start: str, goal: str) -> str:
        """A FROM clause joining table ``start`` to table ``goal`` along the keys."""
        paths: dict[str, list[tuple[str, str, str, str]]] = {start: []}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for child, c_col, parent, p_col in self.keys:
                for near, far in ((child, parent), (parent, child)):
                    if near == here and far not in paths:
                        paths[far] = [*paths[here], (child, c_col, parent, p_col)]
                        queue.append(far)
        clause, joined = start, {start}
        for child, c_col, parent, p_col in paths.get(goal, []):
            new = parent if child in joined else child
            clause += f" JOIN {new} ON {child}.{c_col} = {parent}.{p_col}"
            joined.add(new)
        return clause


@dataclass(frozen=True)
class Setup:
    """The outcome, exposure and source one investigation works with."""

    metric: str
    outcome: str
    exposure: str
    source: str
    period: str | None = None
    """The year of the outcome table's date column when the question asks about a change."""

    @classmethod
    def read(cls, turn: Turn) -> Setup | None:
        """Derive the setup from the schema and the question (None if they give none)."""
        schema = Schema.read(turn.request.system)
        question = _question(turn.request.system)
        outcome, exposure = schema.outcome(), schema.exposure(question)
        if outcome is None or exposure is None:
            return None
        source = schema.source(outcome.split(".")[0], exposure.split(".")[0])
        time = schema.time_column(outcome.split(".")[0]) if _CHANGE.search(question) else None
        return cls(f"avg(CASE WHEN {outcome} THEN 1 ELSE 0 END)", outcome, exposure, source,
                   f"year({time})" if time else None)


def _question(system: str) -> str:
    """The objective, as the shared instructions quote it (the whole text otherwise)."""
    found = re.search(r"OBJECTIVE[^:\n]*:\s*\n?(.+)", system)
    return found.group(1) if found else system


class NaivePolicy(TeamPolicy):
    """The naive team (see the module docstring)."""

    label = NAIVE_LABEL
    dismissal = ("left out by the analysis tools: recorded with the outcome, or not "
                 "reachable by key from the analysed source")

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        """Scan the outcome and count the exposure's values; then add one hypothesis per
        non-reference value and one for the top flagged segment."""
        setup = Setup.read(turn)
        if setup is None:
            return [("done", {"summary": "no BOOLEAN outcome or asked-about table found"})]
        table, column = setup.exposure.split(".")
        if turn.step == 0:
            return [("segment_scan", {"source": setup.source, "metric": setup.metric}),
                    ("run_sql", {"sql": f"SELECT {column} AS value, count(*) AS n FROM "
                                 f"{table} GROUP BY 1 ORDER BY n DESC, value",
                                 "purpose": f"values of {setup.exposure}"})]
        if "added H" in " ".join(r.content for r in turn.results):
            return [("done", {"summary": "one hypothesis per value and flagged segment"})]
        scan, counts = (r.content for r in turn.results[:2])
        values = [m.group(1) for line in counts.splitlines()[2:]
                  if (m := _VALUE_ROW.match(line))]
        if turn.results[0].is_error or not values:
            return [("done", {"summary": "the scan or the value counts did not run"})]
        if setup.period is not None:
            return [("add_hypothesis", {
                "statement": f"{setup.exposure} = '{v}' contributes to the change in the rate "
                             f"of {setup.outcome}",
                "rationale": "a value of the asked-about column", "query_ids": ["Q1", "Q2"]})
                for v in values]
        reference, others = values[0], values[1:]
        actions: list[Action] = [("add_hypothesis", {
            "statement": f"{setup.exposure} = '{v}' changes the rate of {setup.outcome} "
                         f"against {setup.exposure} = '{reference}'",
            "rationale": "a value of the asked-about column", "query_ids": ["Q1", "Q2"]})
            for v in others]
        in_source = set(re.findall(r"(?:^|JOIN )(\S+)", setup.source))
        top = next((m for m in _FLAGGED.finditer(scan)
                    if _PLAIN.match(m.group(1)) and m.group(1).split(".")[0] in in_source
                    and m.group(1).split(".")[0] != table and not _LABEL.search(m.group(2))),
                   None)
        if top is not None:
            actions.append(("add_hypothesis", {
                "statement": f"{top.group(1)} = '{top.group(2)}' changes the rate of "
                             f"{setup.outcome}",
                "rationale": "the segment scan's top flagged segment", "query_ids": ["Q1"]}))
        return actions

    def collector(self, turn: Turn) -> list[Action] | str:
        """One compare_within; record it with the stance its figures show; submit."""
        setup, claim = Setup.read(turn), _claim(turn)
        share_claim = _CONTRIBUTES.match(NaivePolicy._statement(turn))
        if setup is not None and setup.period is not None and share_claim is not None:
            return _collect_share(turn, setup, share_claim.group(1), share_claim.group(2))
        if setup is None or claim is None:
            return [("submit_for_judgement", {"summary": "nothing this policy can test"})]
        exposure, value, reference, dimension, stratum = claim
        if turn.step == 0:
            args = {"source": setup.source, "metric": setup.metric, "exposure": exposure,
                    "value": value}
            if reference is not None:
                args["reference"] = reference
            if dimension is not None:
                args["dimensions"] = [dimension.split(" = ")[0]]
            return [("compare_within", args)]
        result = turn.results[0].content
        if turn.results[0].is_error or turn.step > 1:
            return [("submit_for_judgement", {"summary": "the check could not run"})]
        effect = (_stratum_effect(result, dimension, stratum) if dimension is not None
                  else _reading(result))
        stance = "supports" if effect.holds else "contradicts"
        return [("record_evidence", {"query_id": "Q1", "description": "compare_within check",
                                     "stance": stance, "reading": effect.text}),
                ("submit_for_judgement", {"summary": effect.text})]

    def judge(self, turn: Turn) -> list[Action] | str:
        """Refine on heterogeneity; otherwise decide by the recorded stance."""
        evidence = turn.linked_evidence()
        ids = [e for _, e in evidence]
        if _CONTRIBUTES.match(self._statement(turn)):
            return _judge_share(turn, evidence)
        text = turn.first_message
        flag = _HETEROGENEITY.search(text)
        may_refine = "Refining it is possible." in turn.first_message
        claim = _claim(turn)
        base = {"confidence": 0.7, "evidence_ids": ids}
        if flag is not None and may_refine and claim is not None and claim[3] is None:
            dimension, strata = flag.group(1), _STRATUM.findall(flag.group(2))
            statement = self._statement(turn)
            children = [{"statement": f"{statement} within {dimension}: {s}",
                         "rationale": "the effect differs between these strata"}
                        for s in strata]
            return [("refine", {**base, "status": "inconclusive", "children": children,
                                "rationale": f"{', '.join(ids)}: the effect differs across "
                                             f"{dimension}; refined into its strata"})]
        supports = [e for s, e in evidence if s == "supports"]
        status = "supported" if supports else "contradicted"
        reason = "the effect holds" if supports else "no effect once strata are held fixed"
        return [("give_verdict", {**base, "status": status,
                                  "rationale": f"{', '.join(ids)}: {reason}"})]

    @staticmethod
    def _statement(turn: Turn) -> str:
        own = turn.hypothesis_id
        return next((h.statement for h in turn.hypotheses() if h.id == own), "")


@dataclass(frozen=True)
class _Effect:
    holds: bool
    text: str


def _claim(turn: Turn) -> tuple[str, str, str | None, str | None, str | None] | None:
    """(exposure, value, reference, dimension, stratum) of the turn's hypothesis."""
    found = _STATEMENT.match(NaivePolicy._statement(turn))
    if found is None:
        return None
    exposure, value, _, reference, dimension, stratum = found.groups()
    return exposure, value, reference, dimension, stratum


def _reading(result: str) -> _Effect:
    """Crude effect holds unless its interval holds zero or a confounder nulls it."""
    crude = _CRUDE.search(result)
    if crude is None:
        return _Effect(False, "no effect could be read")
    low, high = float(crude.group(2)), float(crude.group(3))
    for found in _STANDARDISED.finditer(result):
        s_low, s_high = float(found.group(3)), float(found.group(4))
        if s_low <= 0 <= s_high:
            return _Effect(False, f"crude effect {crude.group(1)}, but {found.group(2)} "
                                  f"once {found.group(1)} is held fixed (interval holds 0)")
    holds = not (low <= 0 <= high)
    return _Effect(holds, f"crude effect {crude.group(1)} (95% CI {low:g} to {high:g})")


def _stratum_effect(result: str, dimension: str, stratum: str | None) -> _Effect:
    """The effect in one stratum's row of a compare_within table."""
    for line in result.splitlines():
        if line.startswith(dimension) and line[len(dimension):].split()[:1] == [stratum]:
            cells = line[len(dimension):].split()
            effect, low, high = (float(x) for x in cells[5:8])
            holds = not (low <= 0 <= high)
            return _Effect(holds, f"within {dimension}: {stratum}, effect {effect:g} "
                                  f"(95% CI {low:g} to {high:g})")
    return _Effect(False, f"no row for {dimension}: {stratum}")


def _collect_share(turn: Turn, setup: Setup, exposure: str, value: str) -> list[Action]:
    """One decompose split by the exposure; record its value's row as the reading."""
    if turn.step == 0:
        return [("decompose", {"source": setup.source, "metric": setup.metric,
                               "period": setup.period, "dimensions": [exposure]})]
    result = turn.results[0].content
    if turn.results[0].is_error or turn.step > 1:
        return [("submit_for_judgement", {"summary": "the decomposition could not run"})]
    for line in result.splitlines():
        cells = line[len(exposure):].split() if line.startswith(exposure) else []
        if cells[:1] == [value] and len(cells) >= 19:
            effect, low, high = cells[7:10]  # rate_change, ci_low, ci_high
            share, share_low, share_high = cells[16:19]  # share_of_change and its interval
            change = _overall_change(result)
            moved = float(low) > 0 or float(high) < 0
            with_change = moved and float(effect) * change > 0
            stance = "supports" if with_change else "contradicts"
            reading = (f"rate change of the segment: size {effect} [{low}, {high}] share "
                       f"{share} [{share_low}, {share_high}]")
            return [("record_evidence", {"query_id": "Q1", "description": "decompose check",
                                         "stance": stance, "reading": reading}),
                    ("submit_for_judgement", {"summary": reading})]
    return [("submit_for_judgement", {"summary": f"no row for {exposure} = {value}"})]


def _overall_change(result: str) -> float:
    """The whole change (the table's first row) of a decompose result."""
    for line in result.splitlines():
        if line.startswith("(overall)"):
            return float(line.split()[7])
    return 0.0


def _judge_share(turn: Turn, evidence: list[tuple[str, str]]) -> list[Action]:
    """Size the value's part in the change: major or minor contributor when its rate moved
    with the change, no contributor when its interval holds zero."""
    ids = [e for _, e in evidence]
    base = {"confidence": 0.7, "evidence_ids": ids, "claim_kind": "other"}
    for stance, evidence_id in evidence:
        found = _SIZE.search(turn.evidence_line(evidence_id))
        if found is None:
            continue
        effect, low, high, share, share_low, share_high = (float(x) for x in found.groups())
        holds_zero = low <= 0 <= high
        if stance == "supports":
            role = "major" if share >= MAJOR_SHARE else "minor"
            status = "supported"
            reason = f"a {role} contributor: explains {share:.0%} of the change"
        elif holds_zero:
            role, status, reason = "none", "contradicted", "its rate did not change"
        else:
            return [("give_verdict", {**base, "status": "contradicted", "rationale": (
                f"{evidence_id}: its rate moved against the change")})]
        size = {"role": role, "evidence_id": evidence_id, "measure": "rate change of the segment",
                "effect": effect, "ci_low": low, "ci_high": high, "share": share,
                "share_low": share_low, "share_high": share_high}
        return [("give_verdict", {**base, "status": status, "contribution": size,
                                  "rationale": f"{evidence_id}: {reason}"})]
    return [("give_verdict", {**base, "status": "inconclusive", "evidence_ids": [],
                              "rationale": "no decomposition could be read"})]

