"""What the CLI tests share: the scripted team as a model provider, a hospital database
file, and a CLI process whose model answers slowly (to be interrupted or raced)."""

from __future__ import annotations

from pathlib import Path

from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.llm import register_provider

TEST_POLICY = "testpolicy"
"""Provider name of the hospital walkthrough: ``--model testpolicy:x``."""


def register_test_policy() -> None:
    """Make ``testpolicy:<anything>`` the scripted hospital walkthrough."""
    register_provider(TEST_POLICY, lambda model_id, **kw: HospitalWalkthrough().model(),
                      replace=True)


def hospital_database(folder: Path) -> Path:
    """The bundled hospital data written to ``folder/hospital.duckdb``."""
    path = folder / "hospital.duckdb"
    hospital.create(path).close()
    return path


def slow_team_script(delay_s: float) -> str:
    """Python source of a ``d2`` CLI whose ``slow:x`` model is the walkthrough answering
    each call after ``delay_s`` seconds (run with ``python -c``, then the CLI's args)."""
    return f"""
import asyncio, sys
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.llm import register_provider

class Slow:
    def __init__(self):
        self.inner = HospitalWalkthrough().model()
        self.name = self.inner.name
    async def request(self, request):
        await asyncio.sleep({delay_s!r})
        return await self.inner.request(request)

register_provider("slow", lambda model_id, **kw: Slow())
from d2_notebook.cli import main
sys.exit(main())
"""
