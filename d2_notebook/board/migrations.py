"""Numbered schema migrations of the board file.

Each migration is a number, a name and a SQL script. Applied migrations are recorded
in the ``_migrations`` table of the file (and mirrored in ``PRAGMA user_version``), so
a board written by an older version opens in a newer one: the missing migrations run
in order, inside one transaction each. A board from a *newer* version is refused
rather than guessed at.

To change the schema, append a migration; never edit one that has shipped.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime

from d2_notebook.errors import BoardFormatError


@dataclass(frozen=True)
class Migration:
    """One step of the schema: ``version`` is its number, from 1 without gaps."""

    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "investigation tables, model calls and the event log",
        """
        CREATE TABLE investigations (
            num INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            question TEXT NOT NULL,
            state TEXT NOT NULL,
            settings TEXT NOT NULL,
            report TEXT,
            error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE hypotheses (
            num INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            statement TEXT NOT NULL,
            status TEXT NOT NULL,
            confidence REAL,
            rationale TEXT NOT NULL,
            parent_id TEXT REFERENCES hypotheses(id),
            author_role TEXT NOT NULL,
            author TEXT NOT NULL,
            round INTEGER NOT NULL,
            investigation_id TEXT REFERENCES investigations(id),
            status_reason TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE evidence (
            num INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            sql TEXT NOT NULL,
            description TEXT NOT NULL,
            columns TEXT NOT NULL,
            result BLOB NOT NULL,
            row_count INTEGER NOT NULL,
            stored_rows INTEGER NOT NULL,
            truncated INTEGER NOT NULL,
            result_hash TEXT NOT NULL,
            author_role TEXT NOT NULL,
            author TEXT NOT NULL,
            duration_s REAL,
            round INTEGER NOT NULL,
            investigation_id TEXT REFERENCES investigations(id),
            redundant INTEGER NOT NULL DEFAULT 0,
            redundant_reason TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE links (
            id INTEGER PRIMARY KEY,
            evidence_id TEXT NOT NULL REFERENCES evidence(id),
            hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id),
            stance TEXT NOT NULL,
            rationale TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (evidence_id, hypothesis_id)
        );
        CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY,
            hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id),
            status TEXT NOT NULL,
            confidence REAL NOT NULL,
            rationale TEXT NOT NULL,
            evidence_ids TEXT NOT NULL,
            author TEXT NOT NULL,
            round INTEGER NOT NULL,
            investigation_id TEXT REFERENCES investigations(id),
            created_at TEXT NOT NULL
        );
        CREATE TABLE model_calls (
            id INTEGER PRIMARY KEY,
            investigation_id TEXT REFERENCES investigations(id),
            role TEXT NOT NULL,
            agent TEXT NOT NULL,
            model TEXT NOT NULL,
            request TEXT NOT NULL,
            response TEXT,
            error TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            latency_s REAL NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            actor TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            investigation_id TEXT
        );
        """,
    ),
    Migration(
        2,
        "indexes for live views, links and per-agent model calls",
        """
        CREATE INDEX links_by_hypothesis ON links(hypothesis_id);
        CREATE INDEX verdicts_by_hypothesis ON verdicts(hypothesis_id);
        CREATE INDEX model_calls_by_agent ON model_calls(investigation_id, agent, id);
        CREATE INDEX events_by_kind ON events(kind, seq);
        """,
    ),
    Migration(
        3,
        "the exploration evidence that motivated each hypothesis",
        """
        ALTER TABLE hypotheses ADD COLUMN motivated_by TEXT NOT NULL DEFAULT '[]';
        """,
    ),
    Migration(
        4,
        "run leases: one live process per investigation",
        """
        CREATE TABLE run_leases (
            investigation_id TEXT PRIMARY KEY REFERENCES investigations(id),
            token TEXT NOT NULL,
            owner TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            acquired_at TEXT NOT NULL,
            heartbeat_at TEXT NOT NULL
        );
        """,
    ),
    Migration(
        5,
        "candidate dimensions the orchestrator dismissed, with the reason",
        """
        CREATE TABLE dimension_dismissals (
            id INTEGER PRIMARY KEY,
            investigation_id TEXT REFERENCES investigations(id),
            dimension TEXT NOT NULL,
            reason TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (investigation_id, dimension)
        );
        """,
    ),
    Migration(
        6,
        "re-checks: analysis-tool calls behind evidence, evidence re-run, verdicts re-judged",
        """
        CREATE TABLE evidence_tool_calls (
            evidence_id TEXT PRIMARY KEY REFERENCES evidence(id),
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE recheck_runs (
            num INTEGER NOT NULL UNIQUE,
            id TEXT PRIMARY KEY,
            investigation_id TEXT NOT NULL REFERENCES investigations(id),
            source TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT
        );
        CREATE TABLE rechecks (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES recheck_runs(id),
            evidence_id TEXT NOT NULL REFERENCES evidence(id),
            outcome TEXT NOT NULL CHECK (outcome IN ('same', 'changed', 'fails', 'unchecked')),
            detail TEXT NOT NULL,
            row_count INTEGER,
            columns TEXT,
            result BLOB,
            result_hash TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, evidence_id)
        );
        CREATE TABLE recheck_verdicts (
            run_id TEXT NOT NULL REFERENCES recheck_runs(id),
            hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id),
            state TEXT NOT NULL CHECK (state IN ('confirmed', 'stale')),
            evidence_ids TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, hypothesis_id)
        );
        """,
    ),
    Migration(
        7,
        "how each model call ended: answered, failed, cancelled or refused by the budget",
        """
        ALTER TABLE model_calls ADD COLUMN status TEXT NOT NULL DEFAULT 'answered';
        UPDATE model_calls SET status = 'failed' WHERE error IS NOT NULL;
        """,
    ),
    Migration(
        8,
        "the chart a collector asked for when it recorded an evidence",
        """
        CREATE TABLE evidence_chart_requests (
            evidence_id TEXT PRIMARY KEY REFERENCES evidence(id),
            x TEXT,
            y TEXT,
            color TEXT,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        """,
    ),
    Migration(
        9,
        "the size a verdict gives a factor: major, minor or no contributor, effect and share",
        """
        ALTER TABLE verdicts ADD COLUMN contribution TEXT;
        """,
    ),
    Migration(
        10,
        "weak and neutral link stances; the evidence each verdict discounted, and why",
        """
        ALTER TABLE verdicts ADD COLUMN discounted TEXT NOT NULL DEFAULT '[]';
        CREATE TRIGGER links_stance_known BEFORE INSERT ON links
            WHEN NEW.stance NOT IN ('supports', 'contradicts', 'weak', 'neutral')
            BEGIN SELECT RAISE(ABORT, 'unknown link stance'); END;
        """,
    ),
    Migration(
        11,
        "re-judges of stale verdicts and report versions",
        """
        CREATE TABLE rejudges (
            run_id TEXT NOT NULL REFERENCES recheck_runs(id),
            hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id),
            outcome TEXT NOT NULL CHECK (outcome IN ('confirmed', 'revised', 'refined',
                                                     'undecided')),
            previous_verdict_id INTEGER REFERENCES verdicts(id),
            verdict_id INTEGER REFERENCES verdicts(id),
            rerun_evidence_ids TEXT NOT NULL,
            children TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, hypothesis_id)
        );
        CREATE TABLE report_versions (
            investigation_id TEXT NOT NULL REFERENCES investigations(id),
            version INTEGER NOT NULL,
            report TEXT NOT NULL,
            recheck_run_id TEXT REFERENCES recheck_runs(id),
            created_at TEXT NOT NULL,
            PRIMARY KEY (investigation_id, version)
        );
        """,
    ),
    Migration(
        12,
        "follow-up questions: which investigation each follows, the data fingerprints "
        "its evidence rests on, and the earlier evidence a follow-up reused",
        """
        CREATE TABLE follow_ups (
            investigation_id TEXT PRIMARY KEY REFERENCES investigations(id),
            follows TEXT NOT NULL REFERENCES investigations(id),
            created_at TEXT NOT NULL
        );
        CREATE TABLE data_fingerprints (
            investigation_id TEXT NOT NULL REFERENCES investigations(id),
            table_name TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (investigation_id, table_name)
        );
        CREATE TABLE evidence_reuses (
            investigation_id TEXT NOT NULL REFERENCES investigations(id),
            evidence_id TEXT NOT NULL REFERENCES evidence(id),
            from_investigation TEXT NOT NULL REFERENCES investigations(id),
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (investigation_id, evidence_id)
        );
        """,
    ),
)


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest migration applied to the file (0 for a new, empty file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(
    conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS
) -> list[int]:
    """Apply every migration the file lacks, in order; return the versions applied.

    Raises:
        BoardFormatError: the file is newer than this code, or is not a board.
    """
    known = migrations[-1].version
    current = schema_version(conn)
    if current > known:
        raise BoardFormatError(
            f"this board has schema version {current} but this d2_notebook knows only up "
            f"to {known}; upgrade with `pip install -U d2-notebook`"
        )
    if current == 0 and _has_foreign_tables(conn):
        raise BoardFormatError(
            "this SQLite file holds tables but is not a d2 board; pass a new path for the board"
        )
    applied = []
    for migration in migrations:
        if migration.version <= current:
            continue
        # executescript() commits first; run the statements in one explicit transaction.
        conn.execute("BEGIN IMMEDIATE")
        if schema_version(conn) >= migration.version:  # another process got here first
            conn.execute("ROLLBACK")
            continue
        try:
            if migration.version == 1:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations ("
                    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            for statement in _statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, datetime.now(UTC).isoformat()),
            )
            conn.execute(f"PRAGMA user_version = {int(migration.version)}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself after e.g. a full disk
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied


def applied_migrations(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
    """The ``(version, name, applied_at)`` rows recorded in the file."""
    return [
        (int(v), str(n), str(t))
        for v, n, t in conn.execute(
            "SELECT version, name, applied_at FROM _migrations ORDER BY version"
        )
    ]


def _statements(script: str) -> list[str]:
    """The script's statements, one by one (a trigger's body stays in its statement)."""
    statements, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip().rstrip(";").strip())
            pending = ""
    return statements


def _has_foreign_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != '_migrations'"
    ).fetchone()
    return bool(row[0])
