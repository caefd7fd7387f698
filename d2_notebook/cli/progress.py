"""The live progress view of ``d2 investigate`` and ``d2 demo``, fed by board events.

:class:`ProgressState` is pure: it folds board events into counts and turns the events
worth a line (a hypothesis added or abandoned, a dispatch, evidence with its stance, a
verdict, a round, a stop) into short text. :class:`ProgressView` prints those lines
and, on a terminal, keeps one refreshing status line at the bottom. The view only reads
the board's event log, like the notebook widget does; it never queries the user's data.
Every line passes through :func:`~d2_notebook.terminal_text.terminal_safe`: board text
cannot drive the terminal.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

import click

from d2_notebook.board import Board
from d2_notebook.board.records import Event
from d2_notebook.terminal_text import terminal_safe

_MARK = {"supported": "✔", "contradicted": "✘", "inconclusive": "?", "abandoned": "–"}
_STATUS_ORDER = ("proposed", "investigating", "supported", "contradicted", "inconclusive",
                 "abandoned")


def format_tokens(tokens: int) -> str:
    """``950`` → ``"950"``, ``72509`` → ``"72.5k"``, ``1_250_000`` → ``"1.25M"``."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.2f}M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.1f}k"
    return str(tokens)


def format_cost(usd: float) -> str:
    """Dollars with cents, or four decimals for a cost under a cent."""
    return f"${usd:.4f}" if 0 < usd < 0.01 else f"${usd:.2f}"


def format_elapsed(seconds: float) -> str:
    """``75.2`` → ``"1:15"``."""
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _role(actor: str) -> str:
    """``collector-H3`` → ``collector``."""
    return actor.split("-", 1)[0]


class ProgressState:
    """What the board's events say so far: hypotheses by status, evidence, model use.

    Args:
        width: lines from :meth:`render_event` are cut to this many characters.
    """

    def __init__(self, width: int = 100) -> None:
        """Start from an empty history."""
        self.width = width
        self.statuses: dict[str, str] = {}
        self.evidence: dict[str, dict[str, Any]] = {}
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.round = 0

    def apply(self, events: Iterable[Event]) -> list[str]:
        """Fold ``events`` (in board order) into the state.

        Returns:
            The line of each event worth one (see :meth:`render_event`), in order.
        """
        lines = []
        for event in events:
            self._fold(event)
            line = self.render_event(event)
            if line is not None:
                lines.append(line)
        return lines

    def _fold(self, event: Event) -> None:
        payload = event.payload
        if event.kind == "hypothesis.added":
            self.statuses[payload["id"]] = "proposed"
        elif event.kind == "hypothesis.status":
            self.statuses[payload["id"]] = payload["status"]
        elif event.kind == "verdict.added":
            self.statuses[payload["hypothesis_id"]] = payload["status"]
        elif event.kind == "evidence.added":
            self.evidence[payload["id"]] = dict(payload)
        elif event.kind == "model_call.recorded":
            self.calls += 1
            self.tokens += int(payload.get("input_tokens") or 0)
            self.tokens += int(payload.get("output_tokens") or 0)
            self.cost_usd += float(payload.get("cost_usd") or 0.0)
        elif event.kind == "round.started":
            self.round = int(payload.get("round") or 0)

    def render_event(self, event: Event) -> str | None:
        """One concise line for an event worth showing, else None.

        Evidence is shown when it is linked to a hypothesis (with the stance), except
        the hypothesizer's exploratory queries, which are shown once when recorded.
        Call :meth:`apply` with the event first, so its evidence is known.
        """
        payload = event.payload
        line: str | None = None
        if event.kind == "hypothesis.added":
            parent = payload.get("parent_id")
            refines = f" (refines {parent})" if parent else ""
            line = f"+ {payload['id']}{refines} {payload['statement']}"
        elif event.kind == "hypothesis.status":
            line = self._status_line(payload)
        elif event.kind == "evidence.added" and payload.get("author_role") == "hypothesizer":
            line = f"  {payload['id']} explored: {payload['description']} " \
                   f"({_rows(payload.get('row_count'))})"
        elif event.kind == "link.added" and _role(event.actor) != "hypothesizer":
            known = self.evidence.get(payload["evidence_id"], {})
            description = known.get("description", "")
            reading = f" — {payload['rationale']}" if payload.get("rationale") else ""
            line = (f"  {payload['evidence_id']} {payload['stance']} {payload['hypothesis_id']}:"
                    f" {description}{reading}")
        elif event.kind == "verdict.added":
            line = (f"{_MARK.get(payload['status'], '?')} {payload['hypothesis_id']} "
                    f"{payload['status']} ({float(payload['confidence']):.2f}): "
                    f"{payload.get('rationale', '')}")
        elif event.kind == "evidence.redundant":
            line = f"  {payload['id']} marked redundant: {payload.get('reason', '')}"
        elif event.kind == "round.started":
            line = f"── round {payload.get('round')} ──"
        elif event.kind == "collection.stopped":
            line = f"! collection stopped: {payload.get('reason')}"
        elif event.kind == "model_call.recorded" and payload.get("error"):
            line = f"! {event.actor}: model call failed: {payload['error']}"
        elif event.kind == "investigation.resumed":
            line = f"resuming investigation {event.investigation_id}"
        elif event.kind == "investigation.state" and payload.get("state") in {"failed",
                                                                               "interrupted"}:
            line = f"! investigation {payload['state']}"
        return None if line is None else _cut(line, self.width)

    @staticmethod
    def _status_line(payload: dict[str, Any]) -> str | None:
        status, hyp_id = payload["status"], payload["id"]
        if status == "investigating":
            return f"→ {hyp_id} dispatched to a collector"
        if status == "proposed":
            return None  # reset on resume; the resume line says so
        reason = f": {payload['reason']}" if payload.get("reason") else ""
        return f"{_MARK.get(status, '?')} {hyp_id} {status}{reason}"

    def render_line(self, elapsed_s: float) -> str:
        """The status line: hypotheses by status, evidence, calls, tokens, cost, time."""
        counted = {s: 0 for s in _STATUS_ORDER}
        for status in self.statuses.values():
            counted[status] = counted.get(status, 0) + 1
        hypotheses = ", ".join(f"{n} {s}" for s, n in counted.items() if n) or "none yet"
        return (f"hypotheses: {hypotheses} | {len(self.evidence)} evidence | "
                f"{self.calls} calls, {format_tokens(self.tokens)} tokens, "
                f"{format_cost(self.cost_usd)} | {format_elapsed(elapsed_s)}")


def _rows(count: Any) -> str:
    return f"{count} row" + ("" if count == 1 else "s")


def _cut(line: str, width: int) -> str:
    """``line`` on one terminal line: control sequences out, cut to ``width``."""
    line = terminal_safe(line, keep_newlines=False)
    return line if len(line) <= width else line[: width - 1] + "…"


class ProgressView:
    """Prints a :class:`ProgressState`'s lines, with a status line on a terminal.

    Args:
        state: the state to feed (may already hold earlier events, e.g. on resume).
        live_status: keep a refreshing status line (only on a terminal).
        echo: where text goes; ``click.echo`` by default.
    """

    def __init__(self, state: ProgressState, *, live_status: bool,
                 echo: Callable[..., None] = click.echo) -> None:
        """Prepare to print; nothing is printed until :meth:`show` or :meth:`refresh`."""
        self.state = state
        self.live_status = live_status
        self.echo = echo
        self.started = time.monotonic()
        self._status_shown = False

    @classmethod
    def for_terminal(cls, state: ProgressState | None = None) -> ProgressView:
        """A view sized to the terminal, with a status line when stdout is a TTY."""
        width = max(40, shutil.get_terminal_size((100, 24)).columns - 1)
        state = state or ProgressState(width=width)
        state.width = width
        return cls(state, live_status=sys.stdout.isatty())

    def show(self, events: Iterable[Event]) -> None:
        """Fold ``events`` in and print their lines above the status line."""
        lines = self.state.apply(events)
        if lines:
            self.clear()
            for line in lines:
                self.echo(line)

    def refresh(self) -> None:
        """Redraw the status line (a no-op when not on a terminal)."""
        if self.live_status:
            line = _cut(self.state.render_line(time.monotonic() - self.started), self.state.width)
            self.echo(f"\r\x1b[K{line}", nl=False)
            self._status_shown = True

    def clear(self) -> None:
        """Remove the status line, so ordinary output starts on a clean line."""
        if self._status_shown:
            self.echo("\r\x1b[K", nl=False)
            self._status_shown = False

    async def watch(self, board: Board, stop: asyncio.Event, *, since: int = 0,
                    interval: float = 0.2) -> None:
        """Show the board's new events until ``stop`` is set, then those left; clear.

        Polls ``board.events(since=...)`` like :meth:`Board.follow`, and also redraws
        the status line on every tick so the elapsed time moves during long calls.
        """
        seq = since
        while True:
            stopping = stop.is_set()
            batch = board.events(since=seq)
            if batch:
                seq = batch[-1].seq
                self.show(batch)
            self.refresh()
            if stopping:
                break
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
        self.clear()
