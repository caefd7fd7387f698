"""``d2 board recheck SOURCE BOARD``: re-run a board's evidence on the data as it is now."""

from __future__ import annotations

from pathlib import Path

import click

from d2_notebook.board import Board

__all__ = ["recheck_command"]


@click.command("recheck")
@click.argument("source", metavar="SOURCE")
@click.argument("board_path", metavar="BOARD", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--investigation", "investigation_id", metavar="ID",
              help="The investigation to re-check (default: the board's latest).")
@click.option("--force", is_flag=True,
              help="Re-check on a source other than the one the investigation ran on.")
def recheck_command(source: str, board_path: Path, investigation_id: str | None,
                    force: bool) -> None:
    """Re-run every evidence query of BOARD's investigation on SOURCE (no model) and
    mark the verdicts resting on changed or failing evidence stale."""
    from d2_notebook.cli.commands import friendly_errors, source_argument
    from d2_notebook.detective.recheck import recheck_sync

    @friendly_errors
    def run() -> None:
        database = source_argument(source)
        if not board_path.is_file():
            raise click.UsageError(f"no board at {str(board_path)!r}; pass the .d2board file "
                                   "of the investigation to re-check")
        with Board.open(board_path) as board:
            result = recheck_sync(database, board, investigation_id=investigation_id,
                                  force=force)
        click.echo(str(result))

    run()
