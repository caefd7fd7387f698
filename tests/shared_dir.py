"""Where the project's shared material lives for tests: ``<repo>/../shared``.

CI puts a copy of ``shared/`` beside the clone. ``D2_SHARED_DIR`` overrides the place
(e.g. a worktree whose parent holds no ``shared/``). Tests that need it skip, naming
the fix, when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir(*parts: str) -> Path:
    """``shared/<parts>``; skips the calling test when it is not there."""
    root = Path(os.environ.get("D2_SHARED_DIR", REPO.parent / "shared"))
    path = root.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: put the project's shared/ beside the repository "
                    "or set D2_SHARED_DIR")
    return path
