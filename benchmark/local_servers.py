"""Throwaway local servers with the hospital demo data, for tests and benchmarks.

- :class:`PostgresCluster`: Debian's PostgreSQL binaries, a fresh cluster in a temp
  directory listening on a Unix socket only, started as an unprivileged user (as root,
  the cluster runs as ``nobody`` through ``runuser``), stopped and deleted on
  :meth:`~PostgresCluster.stop`. :meth:`~PostgresCluster.load_hospital` creates the
  ``hospital`` database owned by the superuser and a login role ``analyst`` that may
  only read it.
- :func:`hospital_parquet` writes the hospital tables as Parquet files and
  :func:`spark_session` starts a ``local[2]`` Spark session with them as temp views.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from d2_notebook.datasets import hospital

__all__ = ["PostgresCluster", "hospital_parquet", "postgres_bin_dir", "spark_session"]

_ANALYST = "analyst"


def postgres_bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` live (Debian keeps them out of PATH), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


class PostgresCluster:
    """A PostgreSQL cluster of its own, on a Unix socket in a temp directory.

    Raises:
        RuntimeError: PostgreSQL is not installed (``apt-get install postgresql``) or
            the cluster does not start (the message carries the server log).
    """

    def __init__(self) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql")
        self._bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="d2-pg-"))
        self.data_dir = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.socket_dir.mkdir()
        self._as_root = os.geteuid() == 0
        if self._as_root:  # PostgreSQL refuses to run as root: hand the tree to nobody
            os.chmod(self.root, 0o755)
            shutil.chown(self.root, "nobody", "nogroup")
            shutil.chown(self.socket_dir, "nobody", "nogroup")
        self.superuser = "nobody" if self._as_root else os.environ.get("USER", "postgres")
        self._started = False

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self._bin / args[0]), *args[1:]]
        if self._as_root:
            command = ["runuser", "-u", "nobody", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False,
                              cwd=self.root)

    def start(self) -> PostgresCluster:
        """initdb (trust auth on the socket) and start the server; returns self."""
        done = self._run("initdb", "-D", str(self.data_dir), "-A", "trust", "-U",
                         self.superuser, "--no-sync", "-E", "UTF8", "--locale", "C")
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()}")
        options = (f"-k {self.socket_dir} -c listen_addresses='' -F "
                   "-c shared_buffers=32MB -c max_connections=40")
        done = self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-l",
                         str(self.root / "server.log"), "-w", "-t", "60", "start")
        if done.returncode:
            log = (self.root / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"PostgreSQL did not start: {done.stderr.strip()}\n{log}")
        self._started = True
        return self

    def stop(self) -> None:
        """Stop the server and delete the cluster."""
        if self._started:
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", user: str | None = None) -> str:
        """A ``postgresql+psycopg`` URL reaching ``database`` over the socket."""
        return (f"postgresql+psycopg://{user or self.superuser}@/{database}"
                f"?host={self.socket_dir}")

    def admin(self, database: str = "postgres") -> Any:
        """An autocommit psycopg connection as the superuser."""
        import psycopg

        return psycopg.connect(host=str(self.socket_dir), dbname=database,
                               user=self.superuser, autocommit=True)

    def load_hospital(self, *, seed: int = 7, patients: int = 5000) -> str:
        """Create the ``hospital`` database with the demo tables (their foreign keys
        included) and the read-only role ``analyst``; returns the analyst's URL."""
        with self.admin() as con:
            con.execute("DROP DATABASE IF EXISTS hospital")
            con.execute("CREATE DATABASE hospital")
            exists = con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                 (_ANALYST,)).fetchone()
            if not exists:
                con.execute(f"CREATE ROLE {_ANALYST} LOGIN")
        source = hospital.create(seed=seed, patients=patients)
        with self.admin("hospital") as con:
            con.execute(hospital._SCHEMA)
            for table in hospital.TABLES:
                rows = source.execute(f"SELECT * FROM {table}").fetchall()
                with con.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            con.execute("ANALYZE")
            con.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {_ANALYST}")
        source.close()
        return self.url("hospital", _ANALYST)


def hospital_parquet(directory: str | os.PathLike[str], *, seed: int = 7,
                     patients: int = 5000) -> dict[str, Path]:
    """Write each hospital table as ``<directory>/<table>.parquet``; returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    con = hospital.create(seed=seed, patients=patients)
    paths = {}
    for table in hospital.TABLES:
        path = out / f"{table}.parquet"
        con.execute(f"COPY {table} TO '{path}' (FORMAT parquet)")
        paths[table] = path
    con.close()
    return paths


def spark_session(parquet: dict[str, Path]) -> Any:
    """A ``local[2]`` Spark session with each Parquet file as a temp view."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("d2-notebook-tests")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "1g")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for table, path in parquet.items():
        spark.read.parquet(str(path)).createOrReplaceTempView(table)
    return spark
