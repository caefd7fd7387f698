"""Hints that teach investigation rather than give answers.

``hint(board, gold)`` names the next thing a good investigator would look at — the first
of :func:`~d2_notebook.teaching.needs.needs` — and grows more specific each time it is
asked about the same thing: first the kind of source ("a witness has not been
interviewed yet"), then the table, then the columns and how the tables join. It never
names the person, an id from the case's data or a value of the gold rows; it may name
the board's own records (``H3``, ``E5``). Each hint is recorded on the board as a
``hint.given`` event (no schema change), so a teacher sees how many a student used.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from d2_notebook.board import Board
from d2_notebook.errors import BoardError
from d2_notebook.teaching.assessment import HINT_EVENT, BoardLike, assess, hints_used, opened
from d2_notebook.teaching.case_map import Source
from d2_notebook.teaching.cases import CaseDatabase, GoldLike
from d2_notebook.teaching.needs import Gap, Need, needs


class HintLevel(IntEnum):
    """How specific a hint is."""

    SOURCE = 1
    TABLE = 2
    HOW = 3


@dataclass(frozen=True)
class Hint:
    """One hint (see :func:`hint`).

    Attributes:
        text: what to look at next.
        gap: the kind of thing the board lacks (None: nothing left to hint).
        level: how specific the hint is (None: nothing left to hint).
        used: hints recorded on the board so far, this one included.
    """

    text: str
    gap: Gap | None
    level: HintLevel | None
    used: int

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        if self.level is None:
            return f"**No hint:** {self.text}"
        return f"**Hint {self.used}** (level {int(self.level)} of 3): {self.text}"


NOTHING_LEFT = ("Your board covers every suspect and every clue of the case, with a "
                "verdict on each: nothing left to hint.")


def hint(board: BoardLike, gold: GoldLike, *, database: CaseDatabase | None = None,
         investigation: str | None = None, record: bool = True,
         author: str = "student") -> Hint:
    """The next thing to look at, more specific each time it is asked about the same thing.

    Args:
        board: the student's board (a :class:`Board` or the path of its file).
        gold: the case's gold (object, JSON dict or file path).
        database: the case database (default: beside the gold file, else rebuilt).
        investigation: the investigation to help with (default: the board's latest).
        record: record the hint on the board (a ``hint.given`` event); without it the
            hint is only shown, and asking again gives the same hint.
        author: who asked, for the event log.

    Raises:
        BoardError: no board at the path, or a read-only board while ``record``.
        CaseFileError: a bad gold file or database path.
    """
    with opened(board, writable=record) as handle:
        found = assess(handle, gold, database=database, investigation=investigation)
        pending = needs(found)
        if not pending:
            return Hint(NOTHING_LEFT, None, None, found.hints_used)
        need = pending[0]
        level = _next_level(handle, need)
        text = hint_text(need, level)
        if record:
            _record(handle, need, level, text, found.investigation_id, author)
        return Hint(text, need.gap, level, hints_used(handle))


def _next_level(board: Board, need: Need) -> HintLevel:
    """One level more specific than the last hint recorded about the same need."""
    asked = sum(1 for e in board.events(kinds=[HINT_EVENT]) if e.payload.get("key") == need.key)
    return HintLevel(min(asked + 1, HintLevel.HOW))


def _record(board: Board, need: Need, level: HintLevel, text: str,
            investigation_id: str | None, author: str) -> None:
    try:
        board.log_event(HINT_EVENT, {"gap": need.gap.value, "key": need.key,
                                     "level": int(level), "text": text},
                        actor=author, investigation_id=investigation_id)
    except BoardError as exc:
        raise BoardError(f"cannot record the hint on this board ({exc}); open it writable, "
                         "or pass record=False to only show the hint") from exc


def _tables(sources: tuple[Source, ...]) -> str:
    names = list(dict.fromkeys(t for s in sources for t in s.guide.tables))
    if not names:
        return "the tables the interviews point to"
    if len(names) == 1:
        return f"the {names[0]} table"
    return f"the {', '.join(names[:-1])} and {names[-1]} tables"


def _kinds(sources: tuple[Source, ...]) -> str:
    return "; ".join(s.guide.kind for s in sources)


def _how(sources: tuple[Source, ...]) -> str:
    return "; ".join(s.guide.how for s in sources)


def hint_text(need: Need, level: HintLevel) -> str:
    """The words of a hint about ``need`` at ``level`` (each level repeats the lead)."""
    h, e, sources = need.hypothesis, need.evidence, need.sources
    lead, say = {
        Gap.REPORT: ("Your board has no evidence yet of where the case starts.",
                     (f"Look at {_kinds(sources)}.",
                      f"It is in {_tables(sources)}.",
                      f"To read it: {_how(sources)}.")),
        Gap.WITNESS: ("A witness has not been interviewed on your board yet.",
                      (f"Look at {_kinds(sources[:1])}, then at {_kinds(sources[1:])}.",
                       f"Find them in {_tables(sources[:1])}, then read "
                       f"{_tables(sources[1:])}.",
                       f"To find and read them: {_how(sources)}.")),
        Gap.SUSPECT: ("Someone who fits nearly every clue of a witness (all of them, or all "
                      "but one) has no hypothesis on your board yet.",
                      ("A careful investigator considers everyone that close, not only "
                       "whoever fits best.",
                       "Count, per person, how many of that witness's clues hold, using "
                       f"{_tables(sources)}.",
                       f"Check every clue at once ({_how(sources)}), add one per clue that "
                       "holds, and put a hypothesis on your board for everyone who fits all "
                       "clues or all but one.")),
        Gap.UNCHECKED_CLUE: (f"{h} has a clue that no evidence on your board checks yet.",
                             (f"Look at {_kinds(sources)}.",
                              f"It is in {_tables(sources)}.",
                              f"To check it: {_how(sources)}; record the query with "
                              f"%%evidence and link it to {h}.")),
        Gap.UNLINKED_EVIDENCE: (f"{e} on your board bears on {h}, but is not linked to it.",
                                ("Which clue does it check, and does that clue hold?",
                                 f"It shows {_kinds(sources)}: link {e} to {h} with the "
                                 "stance its rows show.",
                                 f"To read it: {_how(sources)}; then link it with "
                                 f"board.link('{e}', '{h}', stance, why).")),
        Gap.WRONG_STANCE: ("One of your links says the opposite of what its evidence shows.",
                           (f"Re-read the evidence on {_kinds(sources)} linked to {h}.",
                            f"Look again at the link from {e} to {h}: compare its rows "
                            "with the witness's clue.",
                            f"To compare: {_how(sources)}.")),
        Gap.BUNDLED_EVIDENCE: (f"{e} checks several clues of {h} in one query, so it can "
                               "stand for only one of them.",
                               ("Record each clue as its own evidence, so a reader can "
                                "check each on its own.",
                                f"Next: {_kinds(sources)}, from {_tables(sources)}, as its "
                                f"own query linked to {h}.",
                                f"To check it alone: {_how(sources)}.")),
        Gap.NO_VERDICT: (f"{h} has evidence but no verdict yet.",
                         ("Weigh what its evidence says, clue by clue.",
                          "A murderer fits every reliable clue; one clue that fails clears "
                          "a suspect.",
                          f"Record it with board.add_verdict('{h}', 'supported' or "
                          "'contradicted', confidence, why, [evidence ids]).")),
        Gap.WRONG_VERDICT: ("One of your conclusions does not follow from the case's "
                            "evidence.",
                            ("Does every reliable clue hold for each person you accuse, and "
                             "does one fail for each you clear?",
                             "A witness who was somewhere else that day cannot have seen "
                             f"the killer: check {_tables(sources)}.",
                             f"To check a witness: {_how(sources)}.")),
    }[need.gap]
    return f"{lead} {say[int(level) - 1]}"
