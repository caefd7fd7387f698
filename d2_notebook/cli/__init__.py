"""The ``d2`` command line: ``d2 investigate``, ``d2 demo`` and ``d2 board ...``
(:mod:`.commands`), with the live progress view of a run (:mod:`.progress`).

The CLI only parses, starts and renders: the investigation runs in
:mod:`d2_notebook.detective`, the board in :mod:`d2_notebook.board`.
"""

from d2_notebook.cli.commands import SCRIPTED_NOTICE, main

__all__ = ["SCRIPTED_NOTICE", "main"]
