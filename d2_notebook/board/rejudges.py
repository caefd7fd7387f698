"""Re-judges and report versions: what the judge made of a stale verdict, and the report
written after it.

After a re-check (:mod:`d2_notebook.board.rechecks`) a re-judge sends each stale
hypothesis to its judge with the old and the new evidence. What the judge did is one
:class:`Rejudge` per hypothesis (confirmed, revised, refined or undecided), naming the
verdict that went stale and the one given now: verdicts are never overwritten, a
revision is a new verdict. The report written afterwards is a new
:class:`ReportVersion`, as is the report of a reopened investigation's later finish; the
earlier versions stay on the board (version 1 is the report the investigation first
finished with) and the investigation's ``report`` is the newest.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from d2_notebook.board import rows
from d2_notebook.board.records import Rejudge, RejudgeOutcome, ReportVersion
from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import InvalidRecordError

__all__ = ["RejudgeRecords"]


class RejudgeRecords(BoardStore):
    """Board methods for re-judges and report versions."""

    def record_rejudge(self, run_id: str, hypothesis_id: str, outcome: RejudgeOutcome, *,
                       previous_verdict_id: int | None, verdict_id: int | None,
                       rerun_evidence_ids: Iterable[str] = (), children: Iterable[str] = (),
                       actor: str) -> Rejudge:
        """Record what the judge made of ``hypothesis_id``'s stale verdict after re-check
        ``run_id``.

        Raises:
            InvalidRecordError: the run is unknown or unfinished, or the hypothesis was
                already re-judged after it.
        """
        stamp = now()
        reruns, kids = list(rerun_evidence_ids), list(children)
        with self._write() as conn:
            run = conn.execute("SELECT * FROM recheck_runs WHERE id = ?", (run_id,)).fetchone()
            if run is None or run["finished_at"] is None:
                raise InvalidRecordError(f"re-check {run_id!r} is not a finished re-check on "
                                         "this board; re-check before re-judging")
            self._require(conn, "hypotheses", hypothesis_id)
            try:
                conn.execute(
                    "INSERT INTO rejudges (run_id, hypothesis_id, outcome, previous_verdict_id,"
                    " verdict_id, rerun_evidence_ids, children, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, hypothesis_id, outcome.value, previous_verdict_id, verdict_id,
                     rows.to_json_text(reruns), rows.to_json_text(kids), stamp))
            except sqlite3.IntegrityError as exc:
                raise InvalidRecordError(f"{hypothesis_id} was already re-judged after "
                                         f"{run_id}; re-check again to re-judge anew") from exc
            self._append_event(conn, f"rejudge.{outcome.value}",
                               {"run": run_id, "hypothesis_id": hypothesis_id,
                                "previous_verdict_id": previous_verdict_id,
                                "verdict_id": verdict_id, "rerun_evidence_ids": reruns,
                                "children": kids},
                               actor=actor, investigation_id=run["investigation_id"],
                               time=stamp)
        return next(r for r in self.list_rejudges(run_id) if r.hypothesis_id == hypothesis_id)

    def list_rejudges(self, run_id: str | None = None) -> list[Rejudge]:
        """Re-judges in the order they were made (after one re-check run, if given)."""
        return [Rejudge(r["run_id"], r["hypothesis_id"], RejudgeOutcome(r["outcome"]),
                        r["previous_verdict_id"], r["verdict_id"],
                        tuple(json.loads(r["rerun_evidence_ids"])),
                        tuple(json.loads(r["children"])), r["created_at"])
                for r in self._select("rejudges", "rowid", run_id=run_id)]

    def add_report_version(self, investigation_id: str, report: str, *,
                           recheck_run_id: str | None, actor: str) -> ReportVersion:
        """Store ``report`` as the investigation's next report version and make it its
        current report. The report it replaces stays readable as the version before
        (the first time, the finished investigation's report becomes version 1).

        Raises:
            InvalidRecordError: the report is empty, or the investigation has no report
                yet (a report version follows a finished investigation).
        """
        if not report.strip():
            raise InvalidRecordError("a report version needs text; pass the report")
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            inv = conn.execute("SELECT report, updated_at FROM investigations WHERE id = ?",
                               (investigation_id,)).fetchone()
            last = conn.execute("SELECT MAX(version) FROM report_versions WHERE "
                                "investigation_id = ?", (investigation_id,)).fetchone()[0]
            if last is None:
                if not inv["report"]:
                    raise InvalidRecordError(f"{investigation_id} has no report yet; finish "
                                             "the investigation before writing a new version")
                conn.execute("INSERT INTO report_versions (investigation_id, version, report,"
                              " recheck_run_id, created_at) VALUES (?, 1, ?, NULL, ?)",
                              (investigation_id, inv["report"], _first_report_time(conn,
                               investigation_id) or inv["updated_at"]))
                last = 1
            conn.execute("INSERT INTO report_versions (investigation_id, version, report, "
                         "recheck_run_id, created_at) VALUES (?, ?, ?, ?, ?)",
                         (investigation_id, last + 1, report, recheck_run_id, stamp))
            conn.execute("UPDATE investigations SET report = ?, updated_at = ? WHERE id = ?",
                         (report, stamp, investigation_id))
            self._append_event(conn, "report.version",
                               {"id": investigation_id, "version": last + 1,
                                "recheck_run": recheck_run_id, "report_chars": len(report)},
                               actor=actor, investigation_id=investigation_id, time=stamp)
        return self.list_report_versions(investigation_id)[-1]

    def list_report_versions(self, investigation_id: str) -> list[ReportVersion]:
        """The investigation's report versions, oldest first. A finished investigation
        never re-judged has one: its report."""
        stored = [ReportVersion(r["investigation_id"], r["version"], r["report"],
                                r["recheck_run_id"], r["created_at"])
                  for r in self._select("report_versions", "version",
                                        investigation_id=investigation_id)]
        if stored:
            return stored
        investigation = self.get_investigation(investigation_id)  # type: ignore[attr-defined]
        if not investigation.report:
            return []
        with self._lock:
            when = _first_report_time(self._conn, investigation_id)
        return [ReportVersion(investigation_id, 1, investigation.report, None,
                              when or investigation.updated_at)]


def _first_report_time(conn: sqlite3.Connection, investigation_id: str) -> str | None:
    """When the investigation's report was first stored (its first state change that
    carried a report)."""
    found = conn.execute("SELECT time FROM events WHERE investigation_id = ? AND kind = "
                         "'investigation.state' AND payload LIKE '%report_chars%' ORDER BY seq "
                         "LIMIT 1", (investigation_id,)).fetchone()
    return found[0] if found else None
