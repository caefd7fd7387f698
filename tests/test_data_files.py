"""CSV and Parquet files as a source: one table per file, through DuckDB, the same guard;
every wrong path ends in one line that names the fix."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from cli_helpers import register_test_policy
from click.testing import CliRunner

from d2_notebook.cli import main
from d2_notebook.data import open_source
from d2_notebook.data.sources.files import path_source_problem, table_name_for
from d2_notebook.datasets import hospital
from d2_notebook.errors import QueryFailedError, UnsafeSQLError


@pytest.fixture
def hospital_files(tmp_path: Path) -> Path:
    """The hospital tables as files: admissions as CSV, the rest as Parquet."""
    folder = tmp_path / "hospital files"
    folder.mkdir()
    con = hospital.create()
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        kind = "CSV, HEADER" if table == "admissions" else "PARQUET"
        suffix = "csv" if table == "admissions" else "parquet"
        con.execute(f"COPY {table} TO '{folder / f'{table}.{suffix}'}' (FORMAT {kind})")
    con.close()
    (folder / "notes.md").write_text("not data")
    return folder


def test_a_csv_file_is_one_table_named_after_it(tmp_path: Path) -> None:
    path = tmp_path / "Sales 2024.csv"
    path.write_text("region,amount,day\nnorth,10.5,2024-01-02\nsouth,7,2024-01-03\n")
    with open_source(path) as source:
        assert [t.name for t in source.list_tables()] == ["sales_2024"]
        frame = source.run("SELECT region, amount, day FROM sales_2024 ORDER BY 1").frame
        assert frame["amount"].tolist() == [10.5, 7.0]
        assert str(frame["day"].dtype).startswith("datetime64")  # DuckDB sniffed the type
        assert source.info.url == str(path)
        with pytest.raises(UnsafeSQLError):  # the guard still refuses reading files
            source.run(f"SELECT * FROM read_csv('{path}')")


def test_a_folder_is_every_csv_and_parquet_file_in_it(hospital_files: Path) -> None:
    with open_source(hospital_files) as source:
        names = sorted(t.name for t in source.list_tables())
        assert names == ["admissions", "comorbidities", "outcomes", "patients", "treatments"]
        joined = source.run("SELECT count(*) AS n FROM admissions a JOIN patients p "
                            "USING (patient_id)").frame
        assert int(joined["n"].iloc[0]) > 0


def test_the_cli_investigates_a_folder_of_files(hospital_files: Path, tmp_path: Path) -> None:
    register_test_policy()
    board = tmp_path / "files.d2board"
    done = CliRunner().invoke(main, ["investigate", str(hospital_files), hospital.QUESTION,
                                     "--board", str(board), "--model", "testpolicy:x",
                                     "--quiet"])
    assert done.exit_code == 0, done.output
    assert "Pulmorex" in done.output


def test_table_names_are_plain_and_unique() -> None:
    taken: set[str] = set()
    for file, want in [("Sales 2024.csv", "sales_2024"), ("sales-2024.parquet", "sales_2024_2"),
                       ("2023.csv.gz", "t_2023"), ("événements.tsv", "v_nements")]:
        name = table_name_for(Path(file), taken)
        taken.add(name)
        assert name == want


@pytest.mark.parametrize("make, expected", [
    (lambda d: d / "missing.csv", "no file or folder"),
    (lambda d: (d / "notes.txt.md").write_text("hello") and d / "notes.txt.md",
     "is not a DuckDB, CSV or Parquet file"),
    (lambda d: (d / "blob.duckdb").write_bytes(b"\0" * 64) and d / "blob.duckdb",
     "is not a DuckDB, CSV or Parquet file"),
], ids=["missing", "text file", "not a database"])
def test_a_path_that_is_not_data_names_the_fix(tmp_path: Path, make, expected: str) -> None:
    path = make(tmp_path)
    problem = path_source_problem(path)
    assert problem is not None and expected in problem
    done = CliRunner().invoke(main, ["investigate", str(path), "q?", "--model", "nowhere:x"])
    assert done.exit_code == 2 and expected in done.output  # before the model is looked at
    assert "Traceback" not in done.output


def test_an_empty_folder_and_a_broken_file_name_the_fix(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(QueryFailedError, match="holds no CSV or Parquet file"):
        open_source(empty)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(QueryFailedError, match=r"cannot read .*broken\.parquet.* as PARQUET"):
        open_source(broken)


def test_a_duckdb_file_named_like_data_stays_a_database(tmp_path: Path) -> None:
    path = tmp_path / "really.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    with open_source(path) as source:
        assert [t.name for t in source.list_tables()] == ["t"]
