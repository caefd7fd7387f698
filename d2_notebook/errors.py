"""One exception hierarchy for d2_notebook.

Every error a user can meet derives from :class:`D2Error`, and every message says
what went wrong *and* what to do about it ("... ; set ANTHROPIC_API_KEY or pass
--model openai:..."). Callers that want to handle a family of faults catch the
family (``BoardError``, ``SQLError``, ``ModelError``), not ``Exception``.
"""

from __future__ import annotations


class D2Error(Exception):
    """Base class of every error raised on purpose by d2_notebook."""


# --- the board -------------------------------------------------------------------


class BoardError(D2Error):
    """A fault reading or writing a Data Investigation Board.

    In IPython and Jupyter a board error shows as its one-line message, not a traceback
    (``_render_traceback_`` is IPython's hook for exactly that): the message already
    names the board and the fix.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class NotFoundError(BoardError, KeyError):
    """A record id (``H3``, ``E12``, an investigation id) is not on the board."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class InvalidRecordError(BoardError, ValueError):
    """A record handed to the board breaks a rule (bad status, confidence > 1, ...)."""


class BoardFormatError(BoardError):
    """A file or JSON document is not a board, or is from a newer, unknown version."""


class BoardDamagedError(BoardFormatError):
    """A board file is damaged: SQLite reports a corrupt page, or a stored record (a
    status, a result) cannot be decoded. Reading it again will fail the same way."""


class BoardReadOnlyError(BoardError):
    """A write was refused: the board, its folder or its medium is read-only, or the
    board was opened for reading only."""


class BoardFullError(BoardError):
    """A write failed because the disk (or the board's page limit) is full; nothing of
    the failed write was kept, so the run resumes once there is space."""


class BoardLockedError(BoardError):
    """Another connection held the board's write lock past the busy timeout."""


class RunLeaseHeldError(BoardError):
    """Another live process is running this investigation (it holds the run lease)."""


class RunLeaseLostError(BoardError):
    """This process could not keep its run lease (renewal failed for too long, or
    another process took it over), so its run stopped."""


# --- guarded SQL -----------------------------------------------------------------


class SQLError(D2Error):
    """A fault running SQL against the user's data."""


class UnsafeSQLError(SQLError):
    """A statement was refused before it ran: it could write, read files or do more
    than one thing. The message says which rule it broke."""


class QueryFailedError(SQLError):
    """DuckDB ran the statement and it failed (syntax, unknown column, ...)."""


class QueryTimeoutError(SQLError):
    """A statement ran past its time limit and was interrupted."""


# --- models ----------------------------------------------------------------------


class ModelError(D2Error):
    """A fault talking to a language model."""


class ModelConfigError(ModelError):
    """The model is unknown or not configured (no API key, bad name)."""


class ModelRequestsBlockedError(ModelError):
    """A real network model request was made while requests are blocked (tests)."""


class ModelAPIError(ModelError):
    """The provider answered with an error that retries did not cure."""


class BudgetExceededError(ModelError):
    """An investigation's budget (calls, tokens, dollars) is spent."""


class ScriptExhaustedError(ModelError):
    """An offline ScriptedModel was asked for more responses than it was given."""


class ReplayDivergenceError(ModelError):
    """A replayed run asked something the recording does not contain."""
