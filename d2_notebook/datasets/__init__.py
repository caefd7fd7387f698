"""Synthetic databases for demos, tests, teaching and the benchmark.

- :mod:`d2_notebook.datasets.hospital` — a COVID-19 hospital with planted truths.
- :mod:`d2_notebook.datasets.sql_city` — generated "SQL City" murder cases.

Each generator is deterministic from its seed and writes plain DuckDB tables.
"""
