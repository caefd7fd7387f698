"""The ``d2`` command: a thin shell over the same public API a Python user calls.

Every error a user can cause ends in a one-line message that names the fix (exit
status 1), never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from d2_notebook import __version__
from d2_notebook.board import Board
from d2_notebook.board.records import Event
from d2_notebook.board.render import render_tree
from d2_notebook.cli.progress import ProgressView, format_cost, format_tokens
from d2_notebook.cli.recheck_command import recheck_command
from d2_notebook.data import Relationship, read_relationships_file
from d2_notebook.datasets import hospital
from d2_notebook.detective.investigate import InvestigationResult, investigate
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.preset import PRESETS, preset_models
from d2_notebook.detective.variant import VARIANTS, Role
from d2_notebook.errors import D2Error, InvalidRecordError, ModelConfigError
from d2_notebook.llm import Model, get_model
from d2_notebook.terminal_text import json_terminal_safe, terminal_safe

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(command: F) -> F:
    """Turn d2_notebook's own errors into one-line click errors, with terminal control
    sequences from board text or paths taken out of every error message."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except click.ClickException as exc:
            exc.message = terminal_safe(exc.message)
            raise
        except D2Error as exc:
            raise click.ClickException(terminal_safe(str(exc))) from exc
        except OSError as exc:  # a file the command reads or writes
            raise click.ClickException(
                terminal_safe(f"{exc}; check the path and its permissions")) from exc

    return wrapper  # type: ignore[return-value]


def _open_existing(path: Path) -> Board:
    """A board to read: opened read-only, so nothing is ever written to the file."""
    if not path.is_file():
        raise click.ClickException(
            f"no board at {str(path)!r}; pass the path of a .d2board file"
        )
    return Board.open(path, read_only=True)


def _writable_output(path: Path) -> None:
    """Refuse an output path that is a folder or in a missing folder, before any work."""
    if path.is_dir():
        raise click.ClickException(f"{str(path)!r} is a folder; pass a file path, e.g. "
                                   f"{str(path / 'board.json')!r}")
    if not path.expanduser().resolve().parent.is_dir():
        raise click.ClickException(f"folder {str(path.parent)!r} does not exist; create it "
                                   "or pass another output path")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="d2")
def main() -> None:
    """d2: data investigations over DuckDB, with a Data Investigation Board."""


@main.group()
def board() -> None:
    """Read, export and import Data Investigation Boards."""


@board.command("show")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--hide-redundant", is_flag=True, help="Leave out evidence marked redundant.")
@click.option("--width", type=click.IntRange(min=20), default=100, show_default=True,
              help="Wrap lines at this width (at least 20).")
@click.option("--charts", "charts_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each evidence's chart into this folder (E<n>.svg).")
@click.option("--chart-format", type=click.Choice(["svg", "png"]), default="svg",
              show_default=True, help="File format of --charts.")
@click.option("--usage", is_flag=True, help="Instead of the tree: the model calls by role "
              "and turn (calls, tokens, cache-read share, dollars).")
@click.option("--investigation", "investigation_id", metavar="ID",
              help="Which investigation to print when the board holds several (default: "
                   "the newest; a last line names the others).")
@friendly_errors
def board_show(path: Path, hide_redundant: bool, width: int, charts_dir: Path | None,
               chart_format: str, usage: bool, investigation_id: str | None) -> None:
    """Print a board's hypotheses, verdicts, evidence and links as a tree (one
    investigation at a time when it holds several)."""
    with _open_existing(path) as opened:
        if investigation_id is None and len(opened.list_investigations()) > 1:
            investigation_id = opened.list_investigations()[-1].id
        if usage:
            from d2_notebook.cli.board_usage import render_usage, usage_breakdown

            click.echo(terminal_safe(render_usage(usage_breakdown(opened))))
            return
        click.echo(render_tree(opened, width=width, include_redundant=not hide_redundant,
                               investigation_id=investigation_id))
        from d2_notebook.notebook.static import SCRIPTED_LABEL, board_is_scripted

        if board_is_scripted(opened):  # the run's label: no language model answered
            click.echo(f"*** {SCRIPTED_LABEL} ***")
        if charts_dir is not None:
            from d2_notebook.cli.chart_files import ChartFormat, write_chart_files

            written = write_chart_files(opened, charts_dir, ChartFormat(chart_format))
            click.echo(f"wrote {len(written)} chart(s) to {charts_dir}", err=True)


@board.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Export everything, events included, as JSON.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Write a self-contained HTML report (answer, charts, graph, evidence) "
                   "to this file.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="With --json: write to this file instead of standard output.")
@friendly_errors
def board_export(path: Path, as_json: bool, html_path: Path | None,
                 output: Path | None) -> None:
    """Export a board: everything as JSON (--json), or a report to open in a browser
    (--html FILE)."""
    if as_json == (html_path is not None):
        raise click.UsageError("pass --json or --html FILE (one of them)")
    for target in (output, html_path):
        if target is not None:
            _writable_output(target)
    if html_path is not None:
        from d2_notebook.notebook.report_html import write_report

        with _open_existing(path) as opened:
            write_report(opened, html_path)
        click.echo(f"wrote {html_path}", err=True)
        return
    with _open_existing(path) as opened:
        document = opened.to_json(indent=2)
    if output is None:
        click.echo(json_terminal_safe(document))
    else:
        output.write_text(document + "\n", encoding="utf-8")
        click.echo(terminal_safe(f"wrote {output}"), err=True)


board.add_command(recheck_command)


@board.command("import")
@click.argument("json_path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("board_path", type=click.Path(path_type=Path))
@friendly_errors
def board_import(json_path: Path, board_path: Path) -> None:
    """Rebuild a board file from a JSON export (into a new path)."""
    _writable_output(board_path)
    try:
        text = json_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{json_path} is not UTF-8 text ({exc}); pass a file "
                                   "written by `d2 board export --json`") from exc
    Board.from_json(text, board_path).close()
    click.echo(terminal_safe(f"imported {json_path} into {board_path}"))


# --- investigate and demo ------------------------------------------------------------


FOLLOW_LATEST = "latest"
"""``--follow-up`` given without an investigation id: follow the newest finished one."""


@dataclass
class _Run:
    """One investigation the CLI starts: what to pass to ``investigate()`` and how to
    tell the user to resume it."""

    database: Path | str
    question: str | None
    board_path: Path
    model: Model | None
    options: dict[str, Any] = field(default_factory=dict)
    resume: bool = False
    replay: Path | None = None
    quiet: bool = False
    role_models: dict[str, str] = field(default_factory=dict)
    force: bool = False
    follow_up: bool | str = False
    relationships_file: Path | None = None
    relationships: tuple[Relationship, ...] = ()

    def resume_command(self) -> str:
        database, board = shlex.quote(str(self.database)), shlex.quote(str(self.board_path))
        keys = ("" if self.relationships_file is None
                else f" --relationships {shlex.quote(str(self.relationships_file))}")
        return f"d2 investigate {database} --board {board}{keys} --resume"


async def _investigate_live(run: _Run, board: Board, view: ProgressView | None,
                            since: int) -> InvestigationResult:
    """Run the investigation with the progress view following the board in the same loop."""
    stop = asyncio.Event()
    watcher = asyncio.create_task(view.watch(board, stop, since=since)) if view else None
    try:
        return await investigate(str(run.database), run.question, board=board, model=run.model,
                                 models=run.role_models or None, resume=run.resume,
                                 replay=run.replay, force=run.force,
                                 follow_up=run.follow_up, relationships=run.relationships,
                                 **run.options)
    finally:
        stop.set()
        if watcher is not None:
            await watcher


def _execute(run: _Run, board: Board) -> InvestigationResult:
    """Investigate on ``board``, showing progress; map faults to exits that name the fix.

    Raises:
        click.ClickException: a d2 error (with the resume hint when the run had started).
        SystemExit: 130 after Ctrl-C (the board is left ``interrupted``, resumable).
    """
    view = None
    if not run.quiet:
        view = ProgressView.for_terminal()
        if run.resume:
            view.state.apply(_events_of_unfinished(board))
    try:
        return asyncio.run(_investigate_live(run, board, view, board.last_seq()))
    except KeyboardInterrupt:
        click.echo(terminal_safe(f"\ninterrupted; the board is saved: resume with "
                                 f"`{run.resume_command()}`"), err=True)
        sys.exit(130)
    except D2Error as exc:
        states = [i.state.value for i in board.list_investigations()]
        if states and states[-1] in {"failed", "interrupted"}:
            if isinstance(exc, ModelConfigError):  # the same command would fail the same way
                raise click.ClickException(
                    f"{exc}\nthe board is saved: once the model is fixed, resume with "
                    f"`{run.resume_command()} --model PROVIDER:MODEL`") from exc
            raise click.ClickException(
                f"{exc}\nthe board is saved: resume with `{run.resume_command()}`") from exc
        raise click.ClickException(str(exc)) from exc


def _events_of_unfinished(board: Board) -> list[Event]:
    """The history of the investigation ``--resume`` will continue (for the counts)."""
    unfinished = [i.id for i in board.list_investigations() if i.state.value != "finished"]
    if not unfinished:
        return []
    return [e for e in board.events() if e.investigation_id == unfinished[-1]]


def _print_summary(result: InvestigationResult, board_path: Path) -> None:
    from d2_notebook.notebook.economy import usage_economy
    from d2_notebook.notebook.static import board_is_scripted

    usage = result.usage
    economy = usage_economy(usage, scripted=board_is_scripted(result.board))
    click.echo(f"investigation {result.investigation_id} {result.state}: {economy.phrase()} · "
               f"{format_tokens(usage.total_tokens)} tokens; board: {board_path}")
    if usage.by_role:
        click.echo("by role: " + ", ".join(
            f"{role} {t.calls} call{'s' if t.calls != 1 else ''} "
            f"{format_tokens(t.total_tokens)} tokens {format_cost(t.cost_usd)}"
            for role, t in usage.by_role.items()))
    if result.stop_reason:
        click.echo(terminal_safe(f"collection stopped early: {result.stop_reason}"))
    click.echo(f"see the board: d2 board show {board_path}")


def _role_models(pairs: tuple[str, ...]) -> dict[str, str]:
    """``("collector=anthropic:x", ...)`` as ``{"collector": "anthropic:x"}``."""
    roles = [r.value for r in Role]
    chosen: dict[str, str] = {}
    for pair in pairs:
        role, sep, name = pair.partition("=")
        role, name = role.strip(), name.strip()
        if not sep or not name:
            raise click.UsageError(f"--role-model {pair!r}: write ROLE=MODEL, e.g. "
                                   "collector=anthropic:claude-haiku-4-5")
        if role not in roles:
            raise click.UsageError(f"--role-model {pair!r}: unknown role {role!r}; roles are: "
                                   f"{', '.join(roles)}")
        chosen[role] = name
    return chosen


@contextlib.contextmanager
def _board_for_run(path: Path) -> Iterator[Board]:
    """Open (or create) the run's board and close it however the run ends (closing
    empties the write-ahead log into the file: the ``.d2board`` alone is the board); a
    board this run created is removed again when the run fails before an investigation
    was recorded on it."""
    created = not path.exists()
    opened = Board.open(path)
    try:
        yield opened
    except BaseException:
        try:
            empty = not opened.list_investigations()
        except D2Error:  # e.g. locked: keep the file, it may hold a run
            empty = False
        opened.close()
        if created and empty:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        raise
    opened.close()


def _same_file(first: Path, second: Path) -> bool:
    if second.exists():
        return first.samefile(second)
    return first.expanduser().resolve() == second.expanduser().resolve()


def _default_board_path() -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path, n = Path(f"investigation-{stamp}.d2board"), 1
    while path.exists():
        n += 1
        path = Path(f"investigation-{stamp}-{n}.d2board")
    return path


@main.command("investigate")
@click.argument("source", metavar="SOURCE")
@click.argument("question", required=False)
@click.option("--board", "board_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The board file (default: investigation-<time>.d2board here).")
@click.option("--model", help="provider:model-id, e.g. anthropic:claude-sonnet-4-6 "
              "(default: $D2_MODEL or Anthropic).")
@click.option("--collectors", type=click.IntRange(min=1), help="Evidence collectors at once.")
@click.option("--max-depth", type=click.IntRange(min=1),
              help="Generations of hypotheses at most (1: no refinement).")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True),
              help="Stop collecting before spending this many dollars.")
@click.option("--max-calls", type=click.IntRange(min=1), help="Model calls at most.")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True),
              help="Wall-time budget.")
@click.option("--variant", type=click.Choice(VARIANTS), help="Team configuration (ablations).")
@click.option("--role-model", "role_model", multiple=True, metavar="ROLE=MODEL",
              help="The model of one role, e.g. collector=anthropic:claude-haiku-4-5 "
              "(repeatable; other roles use --model).")
@click.option("--preset", type=click.Choice(PRESETS), help="A role-to-model mapping: economy "
              "puts collectors, judges and the orchestrator on the provider's smaller model "
              "(--role-model wins over it).")
@click.option("--resume", is_flag=True, help="Continue the board's interrupted investigation, or "
              "one stopped early on its budget (pass a larger one).")
@click.option("--force", is_flag=True, help="With --resume: take the run over from another "
              "process whose lease is still fresh (only when that process is gone).")
@click.option("--replay", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Re-run a recorded board's investigation with its recorded model answers.")
@click.option("--follow-up", "follow_up", is_flag=False, flag_value=FOLLOW_LATEST,
              default=None, metavar="[INV_ID]",
              help="Ask QUESTION as a follow-up of the --board's newest finished "
              "investigation (or of INV_ID): it sees the earlier conclusions and reuses "
              "earlier evidence whose data is unchanged instead of re-running it.")
@click.option("--relationships", "relationships_file", metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Join edges to declare or veto where the inferred ones are wrong: one "
              "'orders.customer_id -> customers.id' per line ('!a.id -> b.id' vetoes), or "
              "JSON {\"declare\": [...], \"veto\": [...]}.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the report.")
@friendly_errors
def investigate_command(source: str, question: str | None, board_path: Path | None,
                        model: str | None, collectors: int | None, max_depth: int | None,
                        budget_usd: float | None, max_calls: int | None,
                        max_seconds: float | None, variant: str | None,
                        role_model: tuple[str, ...], preset: str | None, resume: bool,
                        force: bool, replay: Path | None, follow_up: str | None,
                        quiet: bool, relationships_file: Path | None) -> None:
    """Investigate QUESTION over SOURCE with the agent team.

    SOURCE is a DuckDB file (opened read-only) or a SQLAlchemy URL such as
    postgresql+psycopg://analyst@db.example.com/shop (queries run in read-only
    transactions; keep the password in ~/.pgpass or PGPASSWORD, the board never records
    it). The team's progress is shown as it happens, then the report and where the
    board is.
    """
    database = source_argument(source)
    if resume and replay:
        raise click.UsageError("use --resume or --replay, not both")
    if force and not resume:
        raise click.UsageError("--force only applies with --resume (it takes a run over)")
    if follow_up is not None:
        _check_follow_up_options(board_path, resume=resume, replay=replay)
        if follow_up != FOLLOW_LATEST and not (question and question.strip()):
            raise click.UsageError(f"--follow-up took {follow_up!r} as the investigation to "
                                   "follow and found no QUESTION; put the QUESTION before "
                                   "--follow-up, or name the investigation: --follow-up I1")
    if not (question and question.strip()) and not (resume or replay):
        raise click.UsageError("pass the QUESTION to investigate (it may be left out only "
                               "with --resume or --replay)")
    if resume and board_path is None:
        raise click.UsageError("--resume needs --board PATH: the board of the run to resume")
    if resume and board_path is not None and not board_path.is_file():
        raise click.UsageError(f"no board at {str(board_path)!r} to resume; pass the board "
                               "of the interrupted run")
    if replay and board_path is not None and _same_file(replay, board_path):
        raise click.UsageError("--replay and --board name the same file; a replay never "
                               "writes into its own recording: pass a new --board path")
    relationships = (() if relationships_file is None  # a bad file is refused before anything
                     else read_relationships_file(relationships_file))
    options = {name: value for name, value in (
        ("collectors", collectors), ("max_depth", max_depth), ("max_usd", budget_usd),
        ("max_calls", max_calls), ("max_seconds", max_seconds), ("variant", variant))
        if value is not None}
    role_models = _role_models(role_model)
    if replay and (role_models or preset):
        raise click.UsageError("--replay answers every role from the recording; leave out "
                               "--role-model and --preset")
    resolved = None if replay else get_model(model)
    if preset is not None and resolved is not None:
        try:
            role_models = {**preset_models(preset, resolved.name), **role_models}
        except InvalidRecordError as exc:
            raise click.UsageError(f"--preset {preset}: {exc}") from None
    run = _Run(database, question, board_path or _default_board_path(), resolved, options,
               resume=resume, replay=replay, quiet=quiet, role_models=role_models, force=force,
               follow_up=False if follow_up is None else (
                   True if follow_up == FOLLOW_LATEST else follow_up),
               relationships_file=relationships_file, relationships=relationships)
    if not quiet:
        click.echo(f"board: {run.board_path}")
        if replay is not None:
            click.echo(terminal_safe(_replay_line(replay)))
    with _board_for_run(run.board_path) as opened:
        result = _execute(run, opened)
        if quiet:
            click.echo(terminal_safe(result.report))
            return
        click.echo("")
        click.echo(terminal_safe(result.report.rstrip()))
        click.echo("")
        _print_summary(result, run.board_path)


def _check_follow_up_options(board_path: Path | None, *, resume: bool,
                             replay: Path | None) -> None:
    """Refuse ``--follow-up`` where it cannot apply, naming the fix."""
    if resume or replay:
        raise click.UsageError("--follow-up starts a new investigation; leave out "
                               f"{'--resume' if resume else '--replay'}")
    if board_path is None:
        raise click.UsageError("--follow-up needs --board PATH: the board of the earlier "
                               "investigation")
    if not board_path.is_file():
        raise click.UsageError(f"no board at {str(board_path)!r} to follow up; pass the board "
                               "of the earlier investigation, or leave out --follow-up to "
                               "start one")


def _replay_line(recording: Path) -> str:
    """Which investigation of ``recording`` a replay re-runs, said when it holds several."""
    from d2_notebook.detective.investigate import replayed_investigation

    with _open_existing(recording) as opened:
        chosen = replayed_investigation(opened)
        total = len(opened.list_investigations())
    held = f" (the board holds {total} investigations)" if total > 1 else ""
    return f"replaying {chosen.id} [{chosen.state.value}]: {chosen.question}{held}"


def source_argument(source: str) -> Path | str:
    """A SQLAlchemy URL as given, or the path of a DuckDB file, a CSV/Parquet file or a
    folder of them."""
    if "://" in source:
        return source
    from d2_notebook.data.sources.files import path_source_problem

    problem = path_source_problem(source)
    if problem is not None:
        raise click.UsageError(problem)
    return Path(source)


@main.command("demo")
@click.option("--model", help="Investigate for real with this model (provider:model-id).")
@click.option("--board", "board_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A new board file (default: demo.d2board here, replaced each run).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Keep the generated hospital database at this path (default: a temp dir).")
@click.option("--collectors", type=click.IntRange(min=1), help="Evidence collectors at once.")
@friendly_errors
def demo_command(model: str | None, board_path: Path | None, db_path: Path | None,
                 collectors: int | None) -> None:
    """Investigate a generated COVID-19 hospital (offline without a model).

    With --model or a configured default model the team investigates for real; without
    one a scripted walk-through, labelled as such, drives the same team: every query
    still runs and a real board is filled.
    """
    chosen, scripted = _demo_model(model)
    board_path = _fresh_demo_board(board_path)
    with tempfile.TemporaryDirectory(prefix="d2-demo-") as scratch:
        database = db_path or Path(scratch) / "hospital.duckdb"
        hospital.create(database).close()
        click.echo("\n".join(hospital.describe().splitlines()[:3]))
        click.echo(f"database: {database if db_path else 'temporary (pass --db PATH to keep it)'}")
        if scripted:
            click.echo(f"\n*** {SCRIPTED_NOTICE} ***\n")
        click.echo(f"board: {board_path}")
        options = {"collectors": collectors} if collectors else {}
        run = _Run(database, hospital.QUESTION, board_path, chosen, options)
        with Board.open(board_path) as opened:
            result = _execute(run, opened)
            click.echo("")
            click.echo(terminal_safe(result.report.rstrip()))
            click.echo("")
            click.echo(render_tree(opened))
            click.echo("")
            _print_summary(result, board_path)
    if scripted:
        click.echo(f"\n*** {SCRIPTED_NOTICE} ***")


SCRIPTED_NOTICE = ("scripted walk-through — no language model was used; set ANTHROPIC_API_KEY "
                   "or pass --model to investigate for real")


def _demo_model(name: str | None) -> tuple[Model, bool]:
    """The model the demo uses and whether it is the scripted walk-through."""
    if name is not None:
        return get_model(name), False
    try:
        return get_model(None), False
    except ModelConfigError:
        return HospitalWalkthrough().model(), True


def _fresh_demo_board(path: Path | None) -> Path:
    """The demo writes a new board: it replaces its own default file, never the user's."""
    if path is not None:
        if path.exists():
            raise click.ClickException(
                f"board {str(path)!r} already exists; pass a new --board path (the demo "
                "writes a fresh board)")
        return path
    default = Path("demo.d2board")
    for stale in (default, Path("demo.d2board-wal"), Path("demo.d2board-shm")):
        stale.unlink(missing_ok=True)
    return default


from d2_notebook.cli.case_commands import case  # noqa: E402  (it uses friendly_errors above)

main.add_command(case)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
