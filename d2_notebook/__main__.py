"""``python -m d2_notebook`` is the ``d2`` command."""

from d2_notebook.cli import main

main()
