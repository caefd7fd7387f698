"""``--relationships FILE`` for ``d2 investigate`` and ``%%investigate``: the file
formats, every bad file refused with a one-line error naming the fix, and the declared and
vetoed join edges reaching the join graph every role reads (real DuckDB, real CLI, real
IPython shell)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from cli_helpers import hospital_database, register_test_policy
from click.testing import CliRunner
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import d2_notebook.notebook as nb
from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.data import (
    GuardedSQL,
    Relationship,
    RelationshipsFileError,
    open_source,
    read_relationships_file,
)
from d2_notebook.data.catalog_access import dialect_sql
from d2_notebook.data.dimensions import read_catalog
from d2_notebook.data.keys import KeyOrigin
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough

VETO = "treatments.admission_id -> admissions.admission_id"


def _write(tmp_path: Path, text: str | bytes, name: str = "keys.txt") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_the_plain_format_declares_and_vetoes(tmp_path: Path):
    path = _write(tmp_path, "\ufeff# keys the data does not show\n\n"
                            "orders.buyer -> customers.id   # no name hint\n"
                            "!shipments.order_id -> orders.id\n"
                            "invoices.id -/> orders.id\n"
                            "lines.(order_id, no) -> order_lines.(order_id, no)\n")
    assert read_relationships_file(path) == (
        Relationship("orders", ("buyer",), "customers", ("id",)),
        Relationship("shipments", ("order_id",), "orders", ("id",), veto=True),
        Relationship("invoices", ("id",), "orders", ("id",), veto=True),
        Relationship("lines", ("order_id", "no"), "order_lines", ("order_id", "no")),
    )


def test_the_json_formats(tmp_path: Path):
    listed = _write(tmp_path, json.dumps(["orders.buyer -> customers.id",
                                          "!shipments.order_id -> orders.id"]), "a.json")
    keyed = _write(tmp_path, json.dumps({"declare": ["orders.buyer -> customers.id"],
                                         "veto": ["shipments.order_id -> orders.id"]}),
                   "b.json")
    assert read_relationships_file(listed) == read_relationships_file(keyed)
    assert [r.veto for r in read_relationships_file(keyed)] == [False, True]


@pytest.mark.parametrize(("content", "message"), [
    ("orders.buyer -> customers.id\norders buyer customers\n",
     r"line 2: relationship 'orders buyer customers' is not understood: write "
     r"'child_table.column -> parent_table.column'"),
    ("a.(x, y) -> b.z", "line 1: .* pairs 2 column\\(s\\) with 1"),
    ("# only a comment\n\n", "holds no relationships; write one 'table.column"),
    ("", "holds no relationships"),
    ("[1, 2]", r"item 1: expected a text such as 'orders.customer_id -> customers.id'"),
    ('{"declare": ["a.x -/> b.y"]}', "is a veto listed under 'declare'; move it to 'veto'"),
    ('{"declares": []}', "unknown key\\(s\\) 'declares'; use \"declare\" and \"veto\""),
    ('{"veto": "a.x -> b.y"}', "'veto' must be a list"),
    ('{"declare": [', "is not valid JSON"),
    ("{}", "holds no relationships"),
    ("7", "is not understood"),
])
def test_a_bad_file_names_the_place_and_the_fix(tmp_path: Path, content: str, message: str):
    with pytest.raises(RelationshipsFileError, match=message):
        read_relationships_file(_write(tmp_path, content))


def test_unreadable_files_are_refused_with_the_fix(tmp_path: Path):
    with pytest.raises(RelationshipsFileError, match=r"no relationships file at .*; pass"):
        read_relationships_file(tmp_path / "missing.txt")
    with pytest.raises(RelationshipsFileError, match="is a folder"):
        read_relationships_file(tmp_path)
    with pytest.raises(RelationshipsFileError, match="is not UTF-8 text"):
        read_relationships_file(_write(tmp_path, b"\xff\xfe\x00a.x -> b.y"))


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """orders.buyer points at customers.id (no name says so: not inferred);
    shipments.order_id is inferred to point at orders.order_id (same name, contained)."""
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (id INTEGER, region VARCHAR)")
    con.execute("INSERT INTO customers SELECT i, ['north', 'south'][i % 2 + 1] "
                "FROM range(1, 41) t(i)")
    con.execute("CREATE TABLE orders (order_id INTEGER, buyer INTEGER, amount DOUBLE)")
    con.execute("INSERT INTO orders SELECT i, i % 40 + 1, i * 1.5 FROM range(1, 201) t(i)")
    con.execute("CREATE TABLE shipments (id INTEGER, order_id INTEGER)")
    con.execute("INSERT INTO shipments SELECT i, i % 200 + 1 FROM range(1, 401) t(i)")
    con.close()
    return path


def _edges(source) -> dict[str, KeyOrigin]:
    return {f"{e.child}.{e.child_columns[0]}->{e.parent}.{e.parent_columns[0]}": e.origin
            for e in read_catalog(source).graph.edges}


def test_the_file_reaches_the_join_graph(shop: Path, tmp_path: Path):
    plain = open_source(shop)
    assert "shipments.order_id->orders.order_id" in _edges(plain)
    assert "orders.buyer->customers.id" not in _edges(plain)
    keys = read_relationships_file(_write(tmp_path, "orders.buyer -> customers.id\n"
                                                    "!shipments.order_id -> orders.order_id\n"))
    declared = open_source(shop, relationships=keys)
    edges = _edges(declared)
    assert edges["orders.buyer->customers.id"] is KeyOrigin.USER
    assert "shipments.order_id->orders.order_id" not in edges
    assert "orders.buyer -> customers.id" in declared.schema_summary()


def test_a_sqlalchemy_source_keeps_the_relationships_for_its_catalog(tmp_path: Path):
    keys = read_relationships_file(_write(tmp_path, "!orders.buyer -> customers.id\n"))
    source = open_source(f"sqlite:///{tmp_path / 'shop.sqlite'}", relationships=keys)
    try:
        assert dialect_sql(source).relationships == keys
    finally:
        source.close()


def test_relationships_with_a_source_already_made_are_refused(shop: Path):
    with GuardedSQL(shop) as guarded, pytest.raises(ValueError, match="made already"):
        open_source(guarded, relationships=["orders.buyer -> customers.id"])


# --- d2 investigate --relationships -----------------------------------------------------


def _invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_refuses_a_bad_file_before_making_a_board(tmp_path: Path):
    database = hospital_database(tmp_path)
    board = tmp_path / "run.d2board"
    bad = _write(tmp_path, "treatments.admission_id => admissions.admission_id\n")
    result = _invoke("investigate", database, "Which drug works?", "--board", board,
                     "--model", "testpolicy:x", "--relationships", bad)
    assert result.exit_code == 1
    assert "line 1: relationship 'treatments.admission_id => admissions.admission_id' is " \
           "not understood" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not board.exists()
    missing = _invoke("investigate", database, "q", "--board", board, "--model",
                      "testpolicy:x", "--relationships", tmp_path / "nope.txt")
    assert missing.exit_code == 1 and "no relationships file at" in missing.output


def test_cli_investigates_with_the_declared_and_vetoed_edges(tmp_path: Path):
    register_test_policy()
    database = hospital_database(tmp_path)
    board = tmp_path / "run.d2board"
    keys = _write(tmp_path, f"!{VETO}\n")
    result = _invoke("investigate", database, "Which drug lowers deaths?", "--board", board,
                     "--model", "testpolicy:x", "--relationships", keys, "--quiet")
    assert result.exit_code == 0, result.output
    with Board.open(board) as opened:
        first = json.dumps(opened.list_model_calls()[0].request)
    assert "Join keys" in first and VETO not in first
    assert "admissions.patient_id -> patients.patient_id" in first


# --- %%investigate --relationships ---------------------------------------------------------


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("D2_MODEL", raising=False)
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "d2_notebook.notebook")
    nb.load_ipython_extension(sh)
    sh.user_ns.update(con=hospital.create(), team=HospitalWalkthrough().model())
    yield sh
    for name in ("con", "team", "guarded"):
        sh.user_ns.pop(name, None)


def _run(shell: InteractiveShell, cell: str):
    result = shell.run_cell(cell)
    for error in (result.error_before_exec, result.error_in_exec):
        if error is not None:
            raise error
    return result.result


def test_magic_investigates_with_the_vetoed_edge(shell, tmp_path: Path):
    keys = _write(tmp_path, f"!{VETO}\n")
    _run(shell, f"%%investigate con --board run.d2board --model team --relationships {keys}\n"
                "Which drug lowers deaths?")
    with Board.open(tmp_path / "run.d2board") as opened:
        first = json.dumps(opened.list_model_calls()[0].request)
    assert "Join keys" in first and VETO not in first


def test_magic_refuses_a_bad_file_and_a_made_source(shell, tmp_path: Path, shop: Path):
    bad = _write(tmp_path, '{"declare": [1]}', "bad.json")
    with pytest.raises(UsageError, match="declare item 1: expected a text"):
        _run(shell, f"%%investigate con --model team --relationships {bad}\nq")
    good = _write(tmp_path, "orders.buyer -> customers.id\n", "good.txt")
    shell.user_ns["guarded"] = GuardedSQL(shop)
    with pytest.raises(UsageError, match="--relationships: this source was made already"):
        _run(shell, f"%%investigate guarded --model team --relationships {good}\nq")
    shell.user_ns["guarded"].close()
    assert not list(tmp_path.glob("*.d2board"))
