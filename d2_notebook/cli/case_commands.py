"""``d2 case``: a murder case for a class, and the grades of the boards students hand back.

- ``d2 case new --tier medium --seed 7 --out handout/ --gold-out answers/case.json``
- ``d2 case grade student.d2board answers/case.json``
- ``d2 case grade --many boards/ answers/case.json --csv grades.csv``

Only parsing and printing: the work is :mod:`d2_notebook.teaching`'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from d2_notebook.cli.commands import friendly_errors
from d2_notebook.datasets.sql_city import TIERS
from d2_notebook.teaching import BoardRow, grade, grade_folder, new_case, read_gold, write_csv
from d2_notebook.teaching.class_grades import check_csv_path


@click.group("case")
def case() -> None:
    """Teaching: write a murder case for a class, grade the boards students hand back."""


@case.command("new")
@click.option("--tier", type=click.Choice(TIERS), default="medium", show_default=True,
              help="Difficulty: more suspects, clues and witnesses as it rises.")
@click.option("--seed", type=click.IntRange(min=0), required=True,
              help="Any number; the same seed, index and tier give the same case.")
@click.option("--index", type=click.IntRange(min=0), default=0, show_default=True,
              help="Case number within the seed (several cases per seed).")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the files students get: the database and the description.")
@click.option("--gold-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the gold file (the answer) here instead of into --out.")
@friendly_errors
def case_new(tier: str, seed: int, index: int, out: Path, gold_out: Path | None) -> None:
    """Generate a murder case for a class."""
    files = new_case(tier, seed, out, index=index, gold_out=gold_out)
    click.echo(f"Case {files.case_id} ({tier}) written.")
    click.echo(f"  hand out: {files.database}  {files.description}")
    click.echo(f"  keep:     {files.gold}  (the answer; grade with "
               f"`d2 case grade BOARD {files.gold}`)")
    if gold_out is None:
        click.echo(f"  The gold file is in {out}: hand out only the .duckdb and .txt files, "
                   "or pass --gold-out to keep it apart.")
    click.echo("")
    click.echo(read_gold(files.gold).description)


@case.command("grade")
@click.argument("board", type=click.Path(path_type=Path))
@click.argument("gold", type=click.Path(path_type=Path))
@click.option("--many", is_flag=True,
              help="BOARD is a folder: grade every .d2board in it (and its subfolders).")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path),
              help="Also write the grades as CSV, one row per board.")
@click.option("--db", "database", type=click.Path(dir_okay=False, path_type=Path),
              help="The case database (default: the .duckdb beside GOLD, else rebuilt "
                   "from the gold's seed).")
@friendly_errors
def case_grade(board: Path, gold: Path, many: bool, csv_path: Path | None,
               database: Path | None) -> None:
    """Grade a student's board (or, with --many, a folder of boards) against GOLD."""
    if csv_path is not None:
        check_csv_path(csv_path)
    if not many:
        if board.is_dir():
            raise click.ClickException(f"{str(board)!r} is a folder; pass --many to grade "
                                       "every board in it, or the path of one .d2board")
        result = grade(board, gold, database=database)
        click.echo(result.text())
        if csv_path is not None:
            write_csv([BoardRow.of(board.name, result)], csv_path)
            click.echo(f"\nGrade written to {csv_path}.")
        return
    rows = grade_folder(board, gold, database=database)
    click.echo(_table(rows))
    failed = [r for r in rows if r.error]
    if csv_path is not None:
        write_csv(rows, csv_path)
        click.echo(f"\n{len(rows)} board(s) graded into {csv_path}.")
    if failed:
        click.echo(f"{len(failed)} board(s) could not be graded (see the error column).",
                   err=True)
        sys.exit(1)


def _table(rows: list[BoardRow]) -> str:
    """The class's grades as an aligned text table."""
    header = ["board", "correct.", "complete.", "verif.", "analysed", "hints", "error"]
    lines = [header]
    for r in rows:
        if r.error:
            lines.append([r.board, "-", "-", "-", "-", "-", r.error])
            continue
        lines.append([r.board, f"{r.correctness:.2f}", f"{r.completeness:.2f}",
                      f"{r.verifiability:.2f}", f"{r.suspects_analysed}/{r.suspects}",
                      str(r.hints_used), ""])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)
