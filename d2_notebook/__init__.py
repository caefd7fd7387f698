"""d2_notebook: data investigations in Jupyter.

A team of LLM agents explores a DuckDB database, proposes competing hypotheses,
collects SQL evidence for and against each, judges, refines and reports. Their shared
state, the Data Investigation Board, is a SQLite file (:class:`Board`).
"""

from d2_notebook.board import Board

__version__ = "0.1.0"

__all__ = ["Board", "__version__"]
