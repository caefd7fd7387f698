"""The ``d2`` command: a thin shell over the same public API a Python user calls.

Every error a user can cause ends in a one-line message that names the fix (exit
status 1), never a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from d2_notebook import __version__
from d2_notebook.board import Board
from d2_notebook.board.render import render_tree
from d2_notebook.errors import D2Error

F = TypeVar("F", bound=Callable[..., Any])


def friendly_errors(command: F) -> F:
    """Turn d2_notebook's own errors into one-line click errors."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except D2Error as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def _open_existing(path: Path) -> Board:
    if not path.is_file():
        raise click.ClickException(
            f"no board at {str(path)!r}; pass the path of a .d2board file"
        )
    return Board.open(path)


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
@click.option("--width", type=int, default=100, show_default=True, help="Wrap lines at this width.")
@friendly_errors
def board_show(path: Path, hide_redundant: bool, width: int) -> None:
    """Print a board's hypotheses, verdicts, evidence and links as a tree."""
    with _open_existing(path) as opened:
        click.echo(render_tree(opened, width=width, include_redundant=not hide_redundant))


@board.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, required=True,
              help="Export as JSON (the only format for now).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Write to this file instead of standard output.")
@friendly_errors
def board_export(path: Path, as_json: bool, output: Path | None) -> None:
    """Export everything on a board, events included, as JSON."""
    with _open_existing(path) as opened:
        document = opened.to_json(indent=2)
    if output is None:
        click.echo(document)
    else:
        output.write_text(document + "\n", encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@board.command("import")
@click.argument("json_path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("board_path", type=click.Path(path_type=Path))
@friendly_errors
def board_import(json_path: Path, board_path: Path) -> None:
    """Rebuild a board file from a JSON export (into a new path)."""
    Board.from_json(json_path.read_text(encoding="utf-8"), board_path).close()
    click.echo(f"imported {json_path} into {board_path}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
