"""The SQL City data-investigation benchmark: case generation CLI and metrics.

``python -m benchmark generate --out DIR`` writes the cases; :mod:`d2_notebook.teaching.scoring`
scores system answers against the gold files (one implementation with the grading of
a student's board). See ``benchmark/README.md``.
"""
