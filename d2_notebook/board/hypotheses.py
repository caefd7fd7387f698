"""Investigations, hypotheses and verdicts on the board."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from d2_notebook.board import rows
from d2_notebook.board.contributions import check_contribution, read_claim
from d2_notebook.board.records import (
    VERDICT_STATUSES,
    Contribution,
    Discount,
    DiscountReason,
    FactorClaim,
    Hypothesis,
    HypothesisStatus,
    Investigation,
    InvestigationState,
    Verdict,
)
from d2_notebook.board.store import BoardStore, check_confidence, investigation_of, now, parse_enum
from d2_notebook.errors import InvalidRecordError


class HypothesisRecords(BoardStore):
    """Board methods for investigations, hypotheses and the judge's verdicts."""

    # --- investigations ------------------------------------------------------

    def start_investigation(
        self, question: str, settings: Mapping[str, Any] | None = None, *, actor: str = "user"
    ) -> Investigation:
        """Record a new investigation of ``question`` in state ``running``."""
        if not question.strip():
            raise InvalidRecordError("an investigation needs a question; pass a non-empty one")
        stamp = now()
        with self._write() as conn:
            num, inv_id = self._next_id(conn, "investigations")
            conn.execute(
                "INSERT INTO investigations (num, id, question, state, settings, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (num, inv_id, question, "running", rows.to_json_text(dict(settings or {})),
                 stamp, stamp),
            )
            self._append_event(
                conn, "investigation.started",
                {"id": inv_id, "question": question, "settings": dict(settings or {})},
                actor=actor, investigation_id=inv_id, time=stamp,
            )
        return self.get_investigation(inv_id)

    def get_investigation(self, investigation_id: str) -> Investigation:
        """The investigation with this id. Raises NotFoundError."""
        row = self._one("SELECT * FROM investigations WHERE id = ?", (investigation_id,),
                        f"investigation {investigation_id!r}")
        return rows.investigation(row)

    def list_investigations(self) -> list[Investigation]:
        """Every investigation on the board, oldest first."""
        found = self._query("SELECT * FROM investigations ORDER BY num")
        return [rows.investigation(r) for r in found]

    def set_investigation_state(
        self,
        investigation_id: str,
        state: InvestigationState | str,
        *,
        actor: str,
        error: str | None = None,
        report: str | None = None,
    ) -> Investigation:
        """Move an investigation to ``state``; optionally store its error or report."""
        state = parse_enum(InvestigationState, state, "investigation state")
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            conn.execute(
                "UPDATE investigations SET state = ?, error = COALESCE(?, error),"
                " report = COALESCE(?, report), updated_at = ? WHERE id = ?",
                (state.value, error, report, stamp, investigation_id),
            )
            payload: dict[str, Any] = {"id": investigation_id, "state": state.value}
            if error is not None:
                payload["error"] = error
            if report is not None:
                payload["report_chars"] = len(report)
            self._append_event(conn, "investigation.state", payload, actor=actor,
                               investigation_id=investigation_id, time=stamp)
        return self.get_investigation(investigation_id)

    def set_investigation_settings(
        self, investigation_id: str, settings: Mapping[str, Any], *, actor: str
    ) -> Investigation:
        """Replace the investigation's stored settings with ``settings`` (a run that
        continues it with other settings); the ones before stay in the event log.

        Raises:
            NotFoundError: no investigation ``investigation_id``.
        """
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            conn.execute(
                "UPDATE investigations SET settings = ?, updated_at = ? WHERE id = ?",
                (rows.to_json_text(dict(settings)), stamp, investigation_id),
            )
            self._append_event(conn, "investigation.settings",
                               {"id": investigation_id, "settings": dict(settings)},
                               actor=actor, investigation_id=investigation_id, time=stamp)
        return self.get_investigation(investigation_id)

    # --- hypotheses ----------------------------------------------------------

    def add_hypothesis(
        self,
        statement: str,
        *,
        rationale: str = "",
        parent_id: str | None = None,
        author_role: str = "user",
        author: str = "user",
        round: int = 0,
        investigation_id: str | None = None,
        confidence: float | None = None,
        motivated_by: Iterable[str] = (),
    ) -> Hypothesis:
        """Add a hypothesis in status ``proposed``; returns it with its new id (``H<n>``).

        ``motivated_by`` names the exploration evidence that suggested it. A refinement
        (``parent_id``) without ``investigation_id`` belongs to its parent's investigation.

        Raises:
            InvalidRecordError: empty statement or a confidence outside 0–1.
            NotFoundError: ``parent_id``, ``investigation_id`` or a ``motivated_by``
                evidence id is not on the board.
        """
        motivating = list(dict.fromkeys(motivated_by))
        if not statement.strip():
            raise InvalidRecordError("a hypothesis needs a statement; pass a non-empty one")
        check_confidence(confidence)
        stamp = now()
        with self._write() as conn:
            if parent_id is not None:
                self._require(conn, "hypotheses", parent_id)
                if investigation_id is None:  # a refinement belongs where its parent does
                    investigation_id = investigation_of(conn, "hypotheses", parent_id)
            if investigation_id is not None:
                self._require(conn, "investigations", investigation_id)
            for evidence_id in motivating:
                self._require(conn, "evidence", evidence_id)
            num, hyp_id = self._next_id(conn, "hypotheses")
            conn.execute(
                "INSERT INTO hypotheses (num, id, statement, status, confidence, rationale,"
                " parent_id, author_role, author, round, investigation_id, motivated_by,"
                " created_at, updated_at)"
                " VALUES (?, ?, ?, 'proposed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (num, hyp_id, statement, confidence, rationale, parent_id, author_role, author,
                 round, investigation_id, rows.to_json_text(motivating), stamp, stamp),
            )
            self._append_event(
                conn, "hypothesis.added",
                {"id": hyp_id, "statement": statement, "parent_id": parent_id,
                 "rationale": rationale, "round": round, "author_role": author_role,
                 "motivated_by": motivating},
                actor=author, investigation_id=investigation_id, time=stamp,
            )
        return self.get_hypothesis(hyp_id)

    def get_hypothesis(self, hypothesis_id: str) -> Hypothesis:
        """The hypothesis with this id. Raises NotFoundError."""
        row = self._one("SELECT * FROM hypotheses WHERE id = ?", (hypothesis_id,),
                        f"hypothesis {hypothesis_id!r}")
        return rows.hypothesis(row)

    def list_hypotheses(
        self,
        *,
        status: HypothesisStatus | str | Iterable[HypothesisStatus | str] | None = None,
        investigation_id: str | None = None,
    ) -> list[Hypothesis]:
        """Hypotheses in id order, optionally only those with ``status`` (one or several)."""
        found = [rows.hypothesis(r) for r in
                 self._select("hypotheses", "num", investigation_id=investigation_id)]
        if status is None:
            return found
        wanted = [status] if isinstance(status, str) else list(status)
        statuses = {parse_enum(HypothesisStatus, s, "hypothesis status") for s in wanted}
        return [h for h in found if h.status in statuses]

    def set_status(
        self,
        hypothesis_id: str,
        status: HypothesisStatus | str,
        *,
        actor: str,
        reason: str | None = None,
        confidence: float | None = None,
    ) -> Hypothesis:
        """Change a hypothesis' status (and confidence), recording why."""
        status = parse_enum(HypothesisStatus, status, "hypothesis status")
        check_confidence(confidence)
        stamp = now()
        with self._write() as conn:
            self._require(conn, "hypotheses", hypothesis_id)
            conn.execute(
                "UPDATE hypotheses SET status = ?, status_reason = ?,"
                " confidence = COALESCE(?, confidence), updated_at = ? WHERE id = ?",
                (status.value, reason, confidence, stamp, hypothesis_id),
            )
            self._append_event(
                conn, "hypothesis.status",
                {"id": hypothesis_id, "status": status.value, "reason": reason,
                 "confidence": confidence},
                actor=actor, investigation_id=investigation_of(conn, "hypotheses", hypothesis_id),
                time=stamp,
            )
        return self.get_hypothesis(hypothesis_id)

    def add_motivating_evidence(self, hypothesis_id: str, evidence_id: str, *,
                                actor: str) -> Hypothesis:
        """Add ``evidence_id`` to the evidence that motivated ``hypothesis_id`` (the same
        exploration query run again on changed data stands where the old result did).

        Raises:
            NotFoundError: the hypothesis or the evidence is not on the board.
        """
        stamp = now()
        with self._write() as conn:
            self._require(conn, "hypotheses", hypothesis_id)
            self._require(conn, "evidence", evidence_id)
            before = rows.hypothesis(conn.execute("SELECT * FROM hypotheses WHERE id = ?",
                                                  (hypothesis_id,)).fetchone())
            motivating = list(dict.fromkeys([*before.motivated_by, evidence_id]))
            conn.execute("UPDATE hypotheses SET motivated_by = ?, updated_at = ? WHERE id = ?",
                         (rows.to_json_text(motivating), stamp, hypothesis_id))
            self._append_event(
                conn, "hypothesis.motivated",
                {"id": hypothesis_id, "evidence_id": evidence_id, "motivated_by": motivating},
                actor=actor, investigation_id=investigation_of(conn, "hypotheses", hypothesis_id),
                time=stamp,
            )
        return self.get_hypothesis(hypothesis_id)

    def abandon(self, hypothesis_id: str, reason: str, *, actor: str) -> Hypothesis:
        """Abandon a hypothesis (it stays on the board, with the reason)."""
        if not reason.strip():
            raise InvalidRecordError("say why the hypothesis is abandoned: pass a reason")
        return self.set_status(
            hypothesis_id, HypothesisStatus.ABANDONED, actor=actor, reason=reason
        )

    # --- verdicts ------------------------------------------------------------

    def add_verdict(
        self,
        hypothesis_id: str,
        status: HypothesisStatus | str,
        confidence: float,
        rationale: str,
        evidence_ids: Iterable[str],
        *,
        author: str,
        round: int = 0,
        discounted: Iterable[Discount] = (),
        contribution: Contribution | None = None,
        row_scale: float | None = None,
    ) -> Verdict:
        """Record a verdict and move the hypothesis to its status and confidence.

        ``discounted`` is the evidence the judge weighed and set aside, each with its
        reason; an evidence cannot both decide the verdict and be discounted by it.

        Args:
            contribution: The factor's size (see :func:`check_contribution`), or None.
                Its ``claim`` is what the hypothesis says about the factor, as the judge
                states it; None reads it from the statement's wording (:func:`read_claim`).
                The size is stored with the claim it was judged against.
            row_scale: The scale of the levels an exact figure compares, when the
                caller found one (:func:`~d2_notebook.detective.contribution_check.row_scale`:
                the smallest, over the evidence's rows holding the size, of the largest
                fractional cell besides the effect and its interval). Used only for an
                exact figure given without a share: under 1% of it is no effect; with a
                share, only the share decides (see :func:`check_contribution`).

        Raises:
            InvalidRecordError: status is not a verdict, confidence outside 0–1, an
                evidence both cited and discounted (or discounted twice), a discount
                without an explanation, or the contribution does not fit the verdict
                (the message says why).
            NotFoundError: the hypothesis or a cited or discounted evidence id is not
                on the board.
        """
        status = parse_enum(HypothesisStatus, status, "verdict")
        if status not in VERDICT_STATUSES:
            raise InvalidRecordError(
                f"a verdict is supported, contradicted or inconclusive, not {status.value!r}"
            )
        check_confidence(confidence)
        cited = list(dict.fromkeys(evidence_ids))
        discounts = _checked_discounts(discounted, cited)
        set_aside = [d.to_dict() for d in discounts]
        if contribution is not None:
            claim = contribution.claim
            if claim is None:
                claim = read_claim(self.get_hypothesis(hypothesis_id).statement)
            else:
                claim = parse_enum(FactorClaim, claim, "claim about the factor")
            check_contribution(contribution, status, cited, claim=claim, row_scale=row_scale)
            contribution = replace(contribution, claim=claim)
        stamp = now()
        with self._write() as conn:
            self._require(conn, "hypotheses", hypothesis_id)
            for ev_id in [*cited, *(d.evidence_id for d in discounts)]:
                self._require(conn, "evidence", ev_id)
            inv_id = investigation_of(conn, "hypotheses", hypothesis_id)
            cursor = conn.execute(
                "INSERT INTO verdicts (hypothesis_id, status, confidence, rationale, evidence_ids,"
                " author, round, investigation_id, created_at, discounted, contribution)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (hypothesis_id, status.value, confidence, rationale, rows.to_json_text(cited),
                 author, round, inv_id, stamp, rows.to_json_text(set_aside),
                 rows.contribution_to_text(contribution)),
            )
            conn.execute(
                "UPDATE hypotheses SET status = ?, confidence = ?, status_reason = ?,"
                " updated_at = ? WHERE id = ?",
                (status.value, confidence, rationale, stamp, hypothesis_id),
            )
            verdict_id = int(cursor.lastrowid or 0)
            self._append_event(
                conn, "verdict.added",
                {"id": verdict_id, "hypothesis_id": hypothesis_id, "status": status.value,
                 "confidence": confidence, "rationale": rationale, "evidence_ids": cited,
                 **({"discounted": set_aside} if set_aside else {}),
                 **({"contribution": contribution.to_dict()} if contribution else {})},
                actor=author, investigation_id=inv_id, time=stamp,
            )
            return rows.verdict(
                conn.execute("SELECT * FROM verdicts WHERE id = ?", (verdict_id,)).fetchone()
            )

    def list_verdicts(self, *, hypothesis_id: str | None = None) -> list[Verdict]:
        """Verdicts in the order they were given (a hypothesis may have several)."""
        found = self._select("verdicts", "id", hypothesis_id=hypothesis_id)
        return [rows.verdict(r) for r in found]

    def latest_verdict(self, hypothesis_id: str) -> Verdict | None:
        """The most recent verdict on a hypothesis, or None."""
        verdicts = self.list_verdicts(hypothesis_id=hypothesis_id)
        return verdicts[-1] if verdicts else None


def _checked_discounts(discounted: Iterable[Discount], cited: list[str]) -> list[Discount]:
    """The discounts as typed records, refusing one that is also cited, repeated or
    unexplained."""
    out: list[Discount] = []
    for item in discounted:
        reason = parse_enum(DiscountReason, item.reason, "discount reason")
        if not item.explanation.strip():
            raise InvalidRecordError(
                f"say why {item.evidence_id} is discounted: pass a non-empty explanation")
        if item.evidence_id in cited:
            raise InvalidRecordError(
                f"{item.evidence_id} is both cited as deciding the verdict and discounted; "
                "cite it or discount it, not both")
        if any(d.evidence_id == item.evidence_id for d in out):
            raise InvalidRecordError(f"{item.evidence_id} is discounted twice; discount it once")
        out.append(Discount(item.evidence_id, reason, item.explanation.strip()))
    return out
