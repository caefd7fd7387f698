"""Re-checks: evidence re-run against the data as it is now, and what that means for the
verdicts resting on it.

A re-check run (``R1``, ``R2`` …) belongs to one investigation and names the source it
ran on. It records one :class:`Recheck` per evidence — *same*, *changed* (with a compact
diff and the new result stored beside the old), *fails* (with the error) or *unchecked*
(why it could not be re-run) — and then, per hypothesis with a verdict, whether that
verdict still stands (*confirmed*: everything it cites came back the same) or is *stale*
(something it cites changed or failed). Nothing is overwritten: the evidence keeps its
original result and every run keeps its own.

Analysis-tool evidence is re-run from its call (tool name and arguments), stored beside
the evidence when it is recorded (:meth:`RecheckRecords.record_tool_call`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping

import pandas as pd

from d2_notebook.board import rows
from d2_notebook.board.frames import decode_frame, encode_frame, result_hash
from d2_notebook.board.records import (
    Recheck,
    RecheckedVerdict,
    RecheckOutcome,
    RecheckRun,
    ToolCall,
    VerdictCheck,
)
from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import InvalidRecordError

__all__ = ["RecheckRecords"]


class RecheckRecords(BoardStore):
    """Board methods for tool calls and re-checks."""

    def record_tool_call(self, evidence_id: str, call: ToolCall, *, actor: str) -> None:
        """Store the analysis-tool call behind evidence ``evidence_id`` (once; a second
        call for the same evidence keeps the first)."""
        stamp = now()
        with self._write() as conn:
            self._require(conn, "evidence", evidence_id)
            conn.execute("INSERT OR IGNORE INTO evidence_tool_calls (evidence_id, tool, args,"
                         " created_at) VALUES (?, ?, ?, ?)",
                         (evidence_id, call.tool, rows.to_json_text(call.args), stamp))

    def tool_call_of(self, evidence_id: str) -> ToolCall | None:
        """The analysis-tool call stored for ``evidence_id``, if any."""
        found = self._query("SELECT tool, args FROM evidence_tool_calls WHERE evidence_id = ?",
                            (evidence_id,))
        return ToolCall(found[0]["tool"], json.loads(found[0]["args"])) if found else None

    def tool_calls(self) -> dict[str, ToolCall]:
        """Every stored analysis-tool call, by the id of the evidence it produced."""
        found = self._query("SELECT evidence_id, tool, args FROM evidence_tool_calls")
        return {row["evidence_id"]: ToolCall(row["tool"], json.loads(row["args"]))
                for row in found}

    def start_recheck(self, investigation_id: str, source: str, *, actor: str) -> RecheckRun:
        """Open re-check run ``R<n>`` of ``investigation_id`` on ``source``."""
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            num, run_id = self._next_id(conn, "recheck_runs")
            conn.execute("INSERT INTO recheck_runs (num, id, investigation_id, source, "
                         "created_at) VALUES (?, ?, ?, ?, ?)",
                         (num, run_id, investigation_id, source, stamp))
            self._append_event(conn, "recheck.started", {"id": run_id, "source": source},
                               actor=actor, investigation_id=investigation_id, time=stamp)
        return self.get_recheck_run(run_id)

    def record_recheck(self, run_id: str, evidence_id: str, outcome: RecheckOutcome, detail: str,
                       result: pd.DataFrame | None = None, row_count: int | None = None, *,
                       actor: str) -> Recheck:
        """Record what re-running ``evidence_id`` found; ``result`` (its new rows, capped
        like evidence) is kept when given. Recording the same evidence twice in one run
        keeps the first record (a re-check interrupted and run again resumes)."""
        stamp = now()
        blob = columns_text = digest = None
        if result is not None:
            stored = result.iloc[: self.max_rows].reset_index(drop=True)
            blob, columns = encode_frame(stored)
            columns_text = rows.to_json_text([c.to_dict() for c in columns])
            digest = result_hash(blob, max(len(result), row_count or 0))
        with self._write() as conn:
            run = self._run_row(conn, run_id)
            self._require(conn, "evidence", evidence_id)
            cursor = conn.execute(
                "INSERT OR IGNORE INTO rechecks (run_id, evidence_id, outcome, detail, "
                "row_count, columns, result, result_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, evidence_id, outcome.value, detail, row_count, columns_text, blob,
                 digest, stamp))
            if cursor.rowcount:
                self._append_event(conn, "recheck.evidence",
                                   {"run": run_id, "evidence_id": evidence_id,
                                    "outcome": outcome.value, "detail": detail[:500]},
                                   actor=actor, investigation_id=run["investigation_id"],
                                   time=stamp)
        return next(r for r in self.list_rechecks(run_id) if r.evidence_id == evidence_id)

    def finish_recheck(self, run_id: str, verdicts: Mapping[str, tuple[VerdictCheck,
                                                                      Iterable[str]]],
                       *, actor: str) -> RecheckRun:
        """Record each hypothesis's :class:`VerdictCheck` (with the evidence it rests on)
        and close the run."""
        stamp = now()
        with self._write() as conn:
            run = self._run_row(conn, run_id)
            if run["finished_at"] is not None:
                raise InvalidRecordError(f"re-check {run_id} is already finished")
            for hypothesis_id, (check, evidence_ids) in verdicts.items():
                self._require(conn, "hypotheses", hypothesis_id)
                conn.execute("INSERT INTO recheck_verdicts (run_id, hypothesis_id, state, "
                             "evidence_ids, created_at) VALUES (?, ?, ?, ?, ?)",
                             (run_id, hypothesis_id, check.value,
                              rows.to_json_text(list(evidence_ids)), stamp))
            conn.execute("UPDATE recheck_runs SET finished_at = ? WHERE id = ?",
                         (stamp, run_id))
            counts = {c.value: sum(1 for v, _ in verdicts.values() if v is c)
                      for c in VerdictCheck}
            self._append_event(conn, "recheck.finished", {"id": run_id, **counts},
                               actor=actor, investigation_id=run["investigation_id"],
                               time=stamp)
        return self.get_recheck_run(run_id)

    def get_recheck_run(self, run_id: str) -> RecheckRun:
        """Re-check run ``run_id``."""
        return _run(self._one("SELECT * FROM recheck_runs WHERE id = ?", (run_id,),
                              f"re-check {run_id!r}"))

    def list_recheck_runs(self, *, investigation_id: str | None = None) -> list[RecheckRun]:
        """Re-check runs, oldest first (of one investigation, if given)."""
        return [_run(r) for r in self._select("recheck_runs", "num",
                                              investigation_id=investigation_id)]

    def list_rechecks(self, run_id: str) -> list[Recheck]:
        """The evidence re-checks of run ``run_id``, in the order they were recorded."""
        return [Recheck(r["run_id"], r["evidence_id"], RecheckOutcome(r["outcome"]),
                        r["detail"], r["row_count"], r["created_at"])
                for r in self._select("rechecks", "id", run_id=run_id)]

    def recheck_frame(self, run_id: str, evidence_id: str) -> pd.DataFrame | None:
        """The new result stored by run ``run_id`` for ``evidence_id`` (None if it did
        not run)."""
        row = self._one("SELECT columns, result FROM rechecks WHERE run_id = ? AND "
                        "evidence_id = ?", (run_id, evidence_id),
                        f"re-check of {evidence_id!r} in {run_id!r}")
        if row["result"] is None:
            return None
        return decode_frame(row["result"], rows.columns_from_text(row["columns"]))

    def rechecked_verdicts(self, run_id: str) -> list[RecheckedVerdict]:
        """What run ``run_id`` decided per hypothesis."""
        return [RecheckedVerdict(r["run_id"], r["hypothesis_id"], VerdictCheck(r["state"]),
                                 tuple(json.loads(r["evidence_ids"])), r["created_at"])
                for r in self._select("recheck_verdicts", "rowid", run_id=run_id)]

    def latest_verdict_checks(self, investigation_id: str) -> dict[str, RecheckedVerdict]:
        """Per hypothesis, what the investigation's latest finished re-check decided
        (empty when it was never re-checked). A hypothesis the judge has since re-judged
        (confirmed, revised or refined) is left out: its verdict is current again."""
        finished = [r for r in self.list_recheck_runs(investigation_id=investigation_id)
                    if r.finished_at is not None]
        if not finished:
            return {}
        run_id = finished[-1].id
        decided = {r["hypothesis_id"] for r in self._query(
            "SELECT hypothesis_id FROM rejudges WHERE run_id = ? AND outcome != 'undecided'",
            (run_id,))}
        return {v.hypothesis_id: v for v in self.rechecked_verdicts(run_id)
                if v.hypothesis_id not in decided}

    def _run_row(self, conn: sqlite3.Connection, run_id: str) -> sqlite3.Row:
        found = conn.execute("SELECT * FROM recheck_runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            raise InvalidRecordError(f"re-check {run_id!r} is not on this board")
        return found


def _run(row: sqlite3.Row) -> RecheckRun:
    return RecheckRun(row["id"], row["investigation_id"], row["source"], row["created_at"],
                      row["finished_at"])
