"""``d2 board recheck SOURCE BOARD``: re-run a board's evidence on the data as it is now
(and, with ``--rejudge``, re-judge the verdicts that went stale)."""

from __future__ import annotations

from pathlib import Path

import click

from d2_notebook.board import Board
from d2_notebook.detective.policies import OFFLINE_POLICIES

__all__ = ["recheck_command"]


@click.command("recheck")
@click.argument("source", metavar="SOURCE")
@click.argument("board_path", metavar="BOARD", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--investigation", "investigation_id", metavar="ID",
              help="The investigation to re-check (default: the board's latest).")
@click.option("--force", is_flag=True,
              help="Re-check on a source other than the one the investigation ran on.")
@click.option("--rejudge", is_flag=True,
              help="Then send each stale verdict to its judge with the old and the new "
              "evidence, and write a new report version (needs --model or --policy).")
@click.option("--model", help="The re-judge's model, provider:model-id (default: $D2_MODEL).")
@click.option("--policy", type=click.Choice(OFFLINE_POLICIES),
              help="Re-judge offline with this policy instead of a model.")
@click.option("--replay", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Answer the re-judge from the calls recorded on this board (no API).")
@click.option("--max-calls", type=click.IntRange(min=1),
              help="With --rejudge: the investigation's model calls at most, from now on "
              "(budgets count every run of it, the re-judge included).")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True),
              help="With --rejudge: the investigation's dollar budget, from now on.")
def recheck_command(source: str, board_path: Path, investigation_id: str | None,
                    force: bool, rejudge: bool, model: str | None, policy: str | None,
                    replay: Path | None, max_calls: int | None,
                    budget_usd: float | None) -> None:
    """Re-run every evidence query of BOARD's investigation on SOURCE (no model) and
    mark the verdicts resting on changed or failing evidence stale."""
    from d2_notebook.cli.commands import friendly_errors, source_argument
    from d2_notebook.detective.policies import offline_policy
    from d2_notebook.detective.recheck import recheck_sync

    @friendly_errors
    def run() -> None:
        chosen = [name for name, given in (("--model", model), ("--policy", policy),
                                           ("--replay", replay)) if given]
        budget = [name for name, given in (("--max-calls", max_calls),
                                           ("--budget-usd", budget_usd)) if given]
        if budget and not rejudge:
            raise click.UsageError(f"{budget[0]} is the re-judge's budget: add --rejudge")
        if chosen and not rejudge:
            raise click.UsageError(f"{chosen[0]} is for the re-judge: add --rejudge")
        if len(chosen) > 1:
            raise click.UsageError(f"pass one of {', '.join(chosen)}, not several")
        database = source_argument(source)
        if not board_path.is_file():
            raise click.UsageError(f"no board at {str(board_path)!r}; pass the .d2board file "
                                   "of the investigation to re-check")
        with Board.open(board_path) as board:
            judge = offline_policy(policy).model() if policy else model
            result = recheck_sync(database, board, investigation_id=investigation_id,
                                  force=force, rejudge=rejudge, model=judge, replay=replay,
                                  max_calls=max_calls, max_usd=budget_usd)
            click.echo(str(result))
            version = result.rejudge.report_version if result.rejudge else None
            if version is not None:
                click.echo(f"\nreport version {version.version}:\n\n{version.report}")

    run()
