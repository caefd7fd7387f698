"""The SQL City data-investigation benchmark: case generation CLI and metrics.

``python -m benchmark generate --out DIR`` writes the cases; :mod:`benchmark.metrics`
scores system answers against the gold files. See ``benchmark/README.md``.
"""
