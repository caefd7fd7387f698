"""Settings of one investigation: team size, per-branch limits, budgets, the variant
and the model of each role.

They are stored on the board with the investigation, so a resumed or replayed run
uses the same ones. Settings stored by older versions are migrated when read
(:meth:`InvestigationSettings.from_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from d2_notebook.detective.variant import FULL, Role, Variant, parse_variant
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import Budget

DEFAULT_MAX_USD = 5.0
"""The dollar budget of an investigation unless one is given: about a large team run
on a Sonnet-class model (a $0.70–$1.40 investigation fits several times over; a
runaway cascade of refinements stops here). ``max_usd=None`` removes it. Models
without a known price (offline, replay, unpriced self-hosted ones) cost $0 and never
reach it."""


DEFAULT_MAX_REFINEMENTS = 4
"""Refinements (a judge splitting a hypothesis into subgroups) one investigation makes
at most unless told otherwise: enough for the differences that matter to the question,
not a cascade down to single suppliers. Every refinement not made is listed in the
report."""


@dataclass(frozen=True)
class InvestigationSettings:
    """How an investigation runs.

    Attributes:
        collectors: branches (collect → judge) running at once.
        collectors_before_triage: branches running at once while hypotheses the
            hypothesizer just added wait for the orchestrator's triage (so the ones it
            abandons as duplicates or off the question are not examined); once it has
            steered, up to ``collectors``. Variants without an orchestrator use
            ``collectors`` throughout.
        max_depth: generations of hypotheses at most: a hypothesis the hypothesizer
            adds is generation 1, a refinement of it generation 2, and so on; a judge
            may refine only below this depth.
        max_refinements: refinements the whole investigation makes at most
            (:data:`DEFAULT_MAX_REFINEMENTS`); a judge whose turn starts once they are
            made cannot refine, and the report lists what was not refined.
        max_steps: model calls one agent may make in one turn (tool-call iterations).
        max_steps_alone: model calls of the single-agent variants (``react_sql``,
            ``single_agent_board``), which do every job in one turn: a fair baseline
            gets about what the whole team would use.
        max_evidence_returns: times a judge may send a hypothesis back for more evidence.
        max_hypothesizer_calls: times the hypothesizer runs (first pass included).
        max_calls, max_tokens, max_usd: the model budget for the whole investigation,
            counted over every run of it (a resumed run counts what earlier runs
            spent); every call sent counts, a cancelled one included. A call is sent
            only while the spend, plus every call under way at a conservative estimate
            (its prompt's estimated tokens plus its whole output allowance, at its
            model's price), plus its own prompt, is below each cap
            (:mod:`d2_notebook.llm.usage`): however many agents run at once,
            ``max_calls`` is never passed, and ``max_tokens``/``max_usd`` only by the
            last call's answer and the token estimate's error. ``max_usd`` defaults
            to :data:`DEFAULT_MAX_USD`; None means no cap.
        max_seconds: wall-time budget.
        reporter_reserve: share of the call/token/dollar budget kept for the reporter
            in variants that run one: collection stops at ``1 - reporter_reserve`` of
            each cap (as estimated when each call is admitted, see above) and the stop
            names the cap and what is kept; the reporter may spend up to the whole
            cap. Variants without a reporter spend the whole budget on collection.
        preview_rows: rows of a query result shown to a model.
        sql_timeout_s: per-query time limit.
        context_window_tokens: the model's context window in tokens, against which
            prompts are budgeted; None uses the model's known window
            (:func:`d2_notebook.llm.context_window`).
        variant: which roles run and with which tools (a name is parsed).
        role_models: model names by role (``{"collector": "anthropic:..."}``); roles
            not named use the investigation's default model.
    """

    collectors: int = 8
    collectors_before_triage: int = 4
    max_depth: int = 4
    max_refinements: int = DEFAULT_MAX_REFINEMENTS
    max_steps: int = 12
    max_steps_alone: int = 80
    max_evidence_returns: int = 1
    max_hypothesizer_calls: int = 2
    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = DEFAULT_MAX_USD
    max_seconds: float | None = None
    reporter_reserve: float = 0.15
    preview_rows: int = 20
    sql_timeout_s: float = 30.0
    context_window_tokens: int | None = None
    variant: Variant = FULL
    role_models: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", parse_variant(self.variant))
        object.__setattr__(self, "role_models",
                           MappingProxyType(check_role_names(dict(self.role_models))))
        for name in ("collectors", "collectors_before_triage", "max_depth", "max_steps",
                     "max_steps_alone", "max_hypothesizer_calls", "preview_rows"):
            if getattr(self, name) < 1:
                raise InvalidRecordError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_refinements < 0:
            raise InvalidRecordError(f"max_refinements must be at least 0, got "
                                     f"{self.max_refinements}; 0 turns refinement off")
        if self.context_window_tokens is not None and self.context_window_tokens < 1_000:
            raise InvalidRecordError(
                f"context_window_tokens must be at least 1000, got {self.context_window_tokens}; "
                "pass the model's context window in tokens, or None for its known window")
        if not 0.0 <= self.reporter_reserve < 1.0:
            raise InvalidRecordError("reporter_reserve must be in [0, 1)")

    def collection_budget(self) -> Budget:
        """The collection phase's budget: the user's budget less ``reporter_reserve``
        when the variant runs a reporter (a cap of calls or tokens keeps at least 1; its
        refusals name the user's budget and what is kept), else the whole of it (nothing
        to keep it for)."""
        whole = Budget(self.max_calls, self.max_tokens, self.max_usd)
        if not self.variant.runs(Role.REPORTER) or self.reporter_reserve == 0:
            return whole
        return whole.share(1.0 - self.reporter_reserve)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as stored on the board."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["variant"] = self.variant.name
        data["role_models"] = dict(self.role_models)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvestigationSettings:
        """Rebuild settings stored on a board (unknown keys are ignored).

        Settings of older versions are migrated: ``max_rounds`` (rounds of the old
        round-based loop, each of which could refine one generation deeper) becomes
        ``max_depth`` with the same value.
        """
        data = dict(data)
        if "max_rounds" in data and "max_depth" not in data:
            data["max_depth"] = data.pop("max_rounds")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def check_role_names(models: dict[str, Any]) -> dict[str, Any]:
    """``models`` unchanged if every key names a role.

    Raises:
        InvalidRecordError: a key is not a role (the message lists the roles).
    """
    roles = [r.value for r in Role]
    unknown = [name for name in models if name not in roles]
    if unknown:
        raise InvalidRecordError(f"unknown role(s) {', '.join(map(repr, unknown))} for a "
                                 f"model; roles are: {', '.join(roles)}")
    return models

