"""``%%investigate`` and ``%%evidence``: the notebook's entry points.

The magics parse, configure and hand off: ``%%investigate`` to
:func:`d2_notebook.detective.investigate` (with a live :class:`BoardView`),
``%%evidence`` to :class:`GuardedSQL` and the board. Defaults come from ``%config``
(``%config Investigate.model = "anthropic:..."``); state lives on the magics instance
of one shell, never in module globals.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets import Bool, Dict, Float, Int, Unicode

from d2_notebook.board import Board, Stance
from d2_notebook.data import (
    Relationship,
    RelationshipsFileError,
    open_source,
    read_relationships_file,
)
from d2_notebook.data.sources import RELATIONSHIPS_ON_A_MADE_SOURCE, is_made_source
from d2_notebook.detective import VARIANTS, investigate
from d2_notebook.detective.policies import OFFLINE_POLICIES, offline_policy
from d2_notebook.detective.preset import PRESETS
from d2_notebook.errors import D2Error, NotFoundError
from d2_notebook.notebook import human
from d2_notebook.notebook.arguments import (
    investigation_options,
    resolve_database,
    resolve_model,
)
from d2_notebook.notebook.paths import check_board_path, new_board_path, next_free_board_path
from d2_notebook.notebook.running import InvestigationRun, start_run, with_follower
from d2_notebook.notebook.views import BackgroundRunView, BoardView, InvestigationView


@magics_class
class Investigate(Magics):
    """The d2_notebook magics; their defaults are settable with ``%config``."""

    model = Unicode(None, allow_none=True, config=True,
                    help="Default model (provider:model-id); None uses $D2_MODEL.")
    collectors = Int(None, allow_none=True, config=True, help="Evidence collectors at once.")
    max_depth = Int(None, allow_none=True, config=True,
                    help="Generations of hypotheses at most (1: no refinement).")
    role_models = Dict(value_trait=Unicode(), config=True,
                       help="A model per role, e.g. {'collector': 'anthropic:claude-haiku-4-5'}; "
                       "other roles use `model`.")
    budget_usd = Float(None, allow_none=True, config=True,
                       help="Stop collecting before spending this many dollars.")
    board_dir = Unicode(".", config=True, help="Folder for boards made without --board.")
    widget = Bool(True, config=True,
                  help="Show the live graph widget while a run goes on (else the snapshot).")
    follow_interval = Float(0.5, config=True, help="Seconds between board polls while live.")

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        """Attach to ``shell``; remembers this session's last board and run."""
        super().__init__(shell=shell, **kwargs)
        self.last_board: Board | None = None
        self.last_view: BoardView | None = None
        self.last_run: InvestigationRun | None = None

    # --- %%investigate ----------------------------------------------------------------

    @magic_arguments()
    @argument("connection", nargs="?", help="Name of a DuckDB connection in the notebook.")
    @argument("--db", help="Path of a DuckDB file (opened read-only), a CSV or Parquet file, "
              "or a folder of them, instead of a connection.")
    @argument("--board", help="Board file (.d2board); default: a new one in board_dir.")
    @argument("--model", help="provider:model-id, or the name of a model object.")
    @argument("--collectors", type=int, help="Evidence collectors at once.")
    @argument("--max-depth", type=int, help="Generations of hypotheses at most.")
    @argument("--budget-usd", type=float, help="Stop before spending this many dollars.")
    @argument("--max-calls", type=int, help="Model calls at most.")
    @argument("--max-seconds", type=float, help="Wall-time budget.")
    @argument("--variant", choices=VARIANTS, help="Team configuration (ablations).")
    @argument("--preset", choices=PRESETS, help="Role-to-model mapping: economy puts "
              "collectors, judges and the orchestrator on the provider's smaller model.")
    @argument("--resume", action="store_true", help="Continue the board's unfinished run, "
              "or one stopped early on its budget (pass a larger one).")
    @argument("--force", action="store_true", help="With --resume: take over a run whose "
              "process is gone but whose lease is still fresh.")
    @argument("--replay", metavar="BOARD", help="Re-run a recorded board without the API.")
    @argument("--append", action="store_true", help="Add this investigation to a --board "
              "that already holds one (without it, a fresh board is used beside it).")
    @argument("--follow-up", nargs="?", const=True, default=False, metavar="INV_ID",
              help="Ask the cell's question as a follow-up of the --board's newest finished "
              "investigation (or of INV_ID) on the same board: it sees the earlier "
              "conclusions and reuses earlier evidence whose data is unchanged.")
    @argument("--recheck", action="store_true", help="Re-run the --board's evidence on the "
              "data as it is now (no model) and mark the verdicts resting on changed "
              "evidence stale.")
    @argument("--rejudge", action="store_true", help="With --recheck: send each stale "
              "verdict to its judge with the old and the new evidence (--model, or "
              "--policy offline) and write a new report version; it spends from the "
              "investigation's budget (--max-calls, --budget-usd raise it).")
    @argument("--policy", choices=OFFLINE_POLICIES, help="With --rejudge: re-judge offline "
              "with this policy instead of a model.")
    @argument("--relationships", metavar="FILE", help="Join edges to declare or veto where the "
              "inferred ones are wrong: one 'orders.customer_id -> customers.id' per line "
              "('!a.id -> b.id' vetoes), or JSON {\"declare\": [...], \"veto\": [...]}.")
    @argument("--background", action="store_true", help="Return at once; run in background.")
    @argument("--out", help="Bind the InvestigationResult to this name (with --background: "
              "the run handle, at once).")
    @line_cell_magic
    def investigate(self, line: str, cell: str | None = None) -> Any:
        """Investigate the question in the cell body over a DuckDB connection (the line
        form, ``%investigate con --resume --board B``, resumes or replays)."""
        args = _parse(self.investigate, line)
        question = (cell or "").strip() or None
        if args.recheck:
            return self._recheck(args)
        if args.rejudge or args.policy:
            raise UsageError("--rejudge and --policy go with --recheck: "
                             "%investigate con --board B --recheck --rejudge")
        if args.resume and args.replay:
            raise UsageError("use --resume or --replay, not both")
        if args.follow_up:
            _check_follow_up(args)
        if question is None and not (args.resume or args.replay):
            raise UsageError("write the question in the cell body, below the %%investigate line")
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"--out needs a Python name, got {args.out!r}")
        database = resolve_database(self._namespace(), args.connection, args.db)
        relationships = _relationships(args.relationships)
        if relationships and is_made_source(database):
            raise UsageError(f"--relationships: {RELATIONSHIPS_ON_A_MADE_SOURCE}")
        options = investigation_options(
            _pick(args.collectors, self.collectors), _pick(args.max_depth, self.max_depth),
            _pick(args.budget_usd, self.budget_usd), args.max_calls, args.max_seconds,
            args.variant)
        replay = _checked_replay(args.replay)
        model = None if replay else resolve_model(self._namespace(), args.model or self.model)
        board = (self._follow_up_board(args.board) if args.follow_up else
                 self._open_board(args.board, question or "investigation",
                                  args.resume or args.append))
        # The live view shows the investigation this cell runs: a new one (--append,
        # --follow-up) once it starts, the resumed one (--resume: the newest) at once.
        earlier = board.list_investigations()
        view = BoardView(board, live=self.widget, starting_after=(
            earlier[-1].id if earlier and not args.resume else None))
        handle = display(view, display_id=True)
        self.last_board, self.last_view = board, view
        role_models = None if replay else (dict(self.role_models) or None)
        coro = investigate(database, question, board=board, model=model, models=role_models,
                           preset=args.preset, resume=args.resume, replay=replay,
                           force=args.force, follow_up=args.follow_up,
                           relationships=relationships, **options)
        follow = view.widget.follow if self.widget else None
        # --out binds the result; in the background it binds the run handle at once
        # (its .wait() and .result give the result), so the next cell can use it.
        placeholder = None
        if args.background:
            status = BackgroundRunView(str(board.path), args.out)
            placeholder = (status, display(status, display_id=True))
        work = self._finish(with_follower(coro, follow), view, handle,
                            None if args.background else args.out, placeholder)
        run = self.last_run = start_run(work, background=args.background)
        if args.background:
            if args.out is not None:
                self.shell.user_ns[args.out] = run
            return None  # the placeholder above shows the run, then its report
        try:
            result = run.wait()
        except KeyboardInterrupt:
            print(f"Interrupted: {board.path} is left resumable; run the cell again with "
                  f"--resume --board {board.path}", file=sys.stderr)
            raise
        except D2Error as exc:
            raise UsageError(str(exc)) from None
        return InvestigationView(result, show_graph=False)

    async def _finish(self, work: Any, view: BoardView, handle: Any, out: str | None,
                      placeholder: tuple[BackgroundRunView, Any] | None = None) -> Any:
        """Run ``work``; then bind the result and redraw the static fallback. A
        background run (``placeholder``: its view and display handle) replaces its
        placeholder with the report, or with one line naming its error; a foreground run
        raises the error instead."""
        try:
            result = await work
        except BaseException as exc:
            if placeholder is not None:
                status, status_handle = placeholder
                status.failed(exc)
                if status_handle is not None:
                    status_handle.update(status)
            raise
        finally:
            view.refresh()
            # The finished board as a snapshot: a saved notebook reopens with the graph
            # (the extension draws it without a kernel), not a widget whose state is gone.
            view.live = False
            if handle is not None:
                handle.update(view)
        if out:
            self.shell.user_ns[out] = result
        if placeholder is not None:
            status, status_handle = placeholder
            status.finished(result)
            if status_handle is not None:
                status_handle.update(status)
        return result

    def _open_board(self, path: str | None, question: str, keep: bool) -> Board:
        """The board to run on. ``keep`` (``--resume``/``--append``): ``path`` as it is.
        Otherwise a board that already holds an investigation is left alone and a fresh
        one beside it is used (re-running a cell never mixes two runs on one board)."""
        if path is None and keep:
            if self.last_board is None:
                raise UsageError("--resume and --append need --board PATH: the board to "
                                 "continue or add to")
            return self.last_board
        try:
            location = check_board_path(path or new_board_path(self.board_dir, question))
            if not keep and _holds_investigation(location, self.last_board):
                fresh = next_free_board_path(location)
                print(f"{location} already holds an investigation; this one goes to {fresh} "
                      f"(pass --follow-up to ask it as a follow-up on {location.name}, or "
                      "--append to add it there as a separate question)", file=sys.stderr)
                location = fresh
            if self.last_board is not None and self.last_board.path == str(location):
                return self.last_board
            return Board.open(location)
        except D2Error as exc:
            raise UsageError(str(exc)) from None

    def _follow_up_board(self, path: str | None) -> Board:
        """The existing board a follow-up is asked on: ``path``, else this session's last
        board (a follow-up never creates a board)."""
        return self._existing_board(
            path, "--follow-up needs --board PATH: the board of the earlier investigation",
            " (--follow-up needs the board of the earlier investigation)")

    def _recheck(self, args: Any) -> Any:
        """``%investigate con --board B --recheck [--rejudge --model M | --policy P]``:
        re-run B's evidence on ``con`` (and re-judge what went stale) through
        :func:`~d2_notebook.detective.recheck.recheck`; the magic calls no model."""
        from d2_notebook.detective.recheck import recheck

        if args.board is None and self.last_board is None:
            raise UsageError("--recheck needs --board PATH: the board to re-check")
        if args.policy and not args.rejudge:
            raise UsageError("--policy is for the re-judge: add --rejudge")
        if args.policy and args.model:
            raise UsageError("pass --model or --policy for the re-judge, not both")
        budget = [name for name, given in (("--max-calls", args.max_calls),
                                           ("--budget-usd", args.budget_usd)) if given]
        if budget and not args.rejudge:
            raise UsageError(f"{budget[0]} is the re-judge's budget: add --rejudge")
        database = resolve_database(self._namespace(), args.connection, args.db)
        judge = None
        if args.rejudge and args.policy:
            judge = offline_policy(args.policy).model()
        elif args.rejudge and (args.model or self.model):
            judge = resolve_model(self._namespace(), args.model or self.model)
        board = (self.last_board if args.board is None
                 or (self.last_board is not None and self.last_board.path == args.board)
                 else None)
        try:
            if board is None:
                board = Board.open(check_board_path(args.board))
                self.last_board = board
            # start_run, not asyncio.run: in a kernel the cell runs on a running loop
            result = start_run(recheck(database, board, force=args.force,
                                       rejudge=args.rejudge, model=judge,
                                       max_calls=args.max_calls, max_usd=args.budget_usd),
                               background=False).wait()
        except D2Error as exc:
            raise UsageError(str(exc)) from None
        if self.last_view is not None and self.last_view.board is board:
            self.last_view.refresh()  # the graph above marks the stale verdicts now
        return result

    # --- %%evidence -------------------------------------------------------------------

    @magic_arguments()
    @argument("connection", nargs="?", help="Name of a DuckDB connection in the notebook.")
    @argument("--db", help="Path of a DuckDB file instead of a connection.")
    @argument("--for", dest="hypothesis", required=True, help="Hypothesis id, e.g. H2.")
    @argument("--supports", metavar="WHY", help="The result supports it, because WHY.")
    @argument("--contradicts", metavar="WHY", help="The result contradicts it, because WHY.")
    @argument("--weak", metavar="WHY", help="The result points one way on grounds too thin to "
              "decide by (one unconfirmed source, a handful of rows), because WHY.")
    @argument("--neutral", metavar="WHY", help="The result bears on it neither way (e.g. the "
              "record is missing), because WHY.")
    @argument("--description", help="One sentence on what the query shows.")
    @argument("--board", help="Board file (default: this session's last investigation).")
    @cell_magic
    def evidence(self, line: str, cell: str) -> Any:
        """Run the cell's SQL (guarded, read-only) and add it to the board as evidence."""
        args = _parse(self.evidence, line)
        given = {stance: why for stance in Stance
                 if (why := getattr(args, stance.value)) is not None}
        if len(given) != 1:
            raise UsageError('say how the result bears on the hypothesis: --supports "why", '
                             '--contradicts "why", --weak "why" or --neutral "why" (one of them)')
        if not cell.strip():
            raise UsageError("write the SQL query in the cell body")
        [(stance, why)] = given.items()
        database = resolve_database(self._namespace(), args.connection, args.db)
        board = self._evidence_board(args.board)
        try:
            board.get_hypothesis(args.hypothesis)
        except NotFoundError:
            known = ", ".join(h.id for h in board.list_hypotheses()) or "none yet"
            raise UsageError(f"no hypothesis {args.hypothesis!r} on {board.path} "
                             f"(hypotheses: {known})") from None
        guard = open_source(database)
        try:
            result = guard.run(cell)
            evidence, _link = human.add_evidence(
                board, result, hypothesis_id=args.hypothesis, stance=stance,
                rationale=why, description=args.description)
        except D2Error as exc:
            raise UsageError(str(exc)) from None
        finally:
            if guard is not database:
                guard.close()
        print(f"{evidence.id} {stance.value} {args.hypothesis} (added to {board.path})")
        if self.last_view is not None and self.last_view.board is board:
            self.last_view.refresh()
        return result.frame

    def _evidence_board(self, path: str | None) -> Board:
        return self._existing_board(
            path, "no investigation in this session yet: pass --board PATH", "")

    def _existing_board(self, path: str | None, without_path: str, hint: str) -> Board:
        """The board at ``path`` (never created), else this session's last board; a
        missing one is a :class:`UsageError` saying ``without_path`` (no path and no
        board yet) or the file's problem followed by ``hint``."""
        if path is None:
            if self.last_board is None:
                raise UsageError(without_path)
            return self.last_board
        if self.last_board is not None and self.last_board.path == path:
            return self.last_board
        from d2_notebook.notebook.paths import open_existing_board

        try:
            return open_existing_board(path)
        except D2Error as exc:
            raise UsageError(f"{exc}{hint}") from None

    def _namespace(self) -> dict[str, Any]:
        """The user's variables, without IPython's own (In, Out, exit, ...)."""
        hidden = getattr(self.shell, "user_ns_hidden", {})
        return {k: v for k, v in self.shell.user_ns.items() if k not in hidden}


def _parse(magic: Any, line: str) -> Any:
    """Parse a magic line shell-style, so quoted text loses its quotes
    (``--contradicts "older patients died as often"``)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot read the magic line: {exc} (close the quotes)") from None
    return magic.parser.parse_args(words)


def _check_follow_up(args: Any) -> None:
    """Refuse ``--follow-up`` with the flags that contradict it, naming the fix."""
    for flag, given in (("--append", args.append), ("--resume", args.resume),
                        ("--replay", args.replay)):
        if given:
            extra = (" (a follow-up is always added to its --board)"
                     if flag == "--append" else "")
            raise UsageError(f"--follow-up starts a new investigation on the board; leave "
                             f"out {flag}{extra}")


def _relationships(path: str | None) -> tuple[Relationship, ...]:
    """The join edges the ``--relationships`` file declares and vetoes (none without)."""
    if path is None:
        return ()
    try:
        return read_relationships_file(path)
    except RelationshipsFileError as exc:
        raise UsageError(str(exc)) from None


def _pick(given: Any, default: Any) -> Any:
    return given if given is not None else default


def _checked_replay(path: str | None) -> str | None:
    from pathlib import Path

    if path is not None and not Path(path).expanduser().is_file():
        raise UsageError(f"no recorded board at {path!r}; --replay needs the .d2board file "
                         "of an earlier run")
    return path


def _holds_investigation(location: Any, open_board: Board | None) -> bool:
    """Whether the board file at ``location`` already records an investigation."""
    if open_board is not None and open_board.path == str(location):
        return bool(open_board.list_investigations())
    if not location.is_file() or location.stat().st_size == 0:
        return False
    with Board.open(location, read_only=True) as existing:
        return bool(existing.list_investigations())
