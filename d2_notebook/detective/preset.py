"""Presets: a named role → model mapping, for a cheaper team in one word.

``economy`` puts the roles that make most of a team's calls on the smaller model of
the default model's provider: the evidence collectors (about half of a team's calls),
the judges (one call per hypothesis, a third of an economy run's bill while they kept
the default model) and the orchestrator (it steers from the digest alone). Their work
is checked mechanically, whatever model does it: every number a collector or a judge
writes is looked up in the evidence it cites, a verdict's size must be a cell of a
cited row, and a verdict on an effect is refused without its heterogeneity check. The
hypothesizer and the reporter keep the default model: they decide what is examined
and write what the user reads.

========================  =========================================
default model's provider  collectors, judges and the orchestrator
========================  =========================================
``anthropic``             ``anthropic:claude-haiku-4-5``
``openai``                ``openai:gpt-4.1-mini``
========================  =========================================

Models named per role (``models=``, ``--role-model``) win over the preset's. The
resulting names are stored with the settings, so a resumed run uses them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from d2_notebook.detective.variant import Role
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import parse_model_name


class Preset(StrEnum):
    """A named role → model mapping (see the module docstring)."""

    DEFAULT = "default"
    """Every role on the default model."""
    ECONOMY = "economy"
    """Collectors, judges and the orchestrator on the provider's smaller model."""


SMALLER_MODELS: Mapping[str, str] = MappingProxyType({
    "anthropic": "anthropic:claude-haiku-4-5",
    "openai": "openai:gpt-4.1-mini",
})
"""The smaller model of each provider the ``economy`` preset knows."""

ECONOMY_ROLES: tuple[Role, ...] = (Role.COLLECTOR, Role.JUDGE, Role.ORCHESTRATOR)
"""The roles ``economy`` moves to the smaller model."""

PRESETS: tuple[str, ...] = tuple(p.value for p in Preset)


def parse_preset(name: Preset | str) -> Preset:
    """The preset called ``name``.

    Raises:
        InvalidRecordError: no preset has that name (the message lists them).
    """
    try:
        return Preset(name)
    except ValueError:
        raise InvalidRecordError(f"unknown preset {name!r}; presets are: "
                                 f"{', '.join(PRESETS)}") from None


def preset_models(preset: Preset | str, default_model: str) -> dict[str, str]:
    """The model names ``preset`` gives by role, for a team whose default model is
    ``default_model`` (a ``provider:model-id`` name).

    Raises:
        InvalidRecordError: the preset is unknown, or ``economy`` knows no smaller
            model for the default model's provider (the message names the fix).
    """
    chosen = parse_preset(preset)
    if chosen is Preset.DEFAULT:
        return {}
    provider, _ = parse_model_name(default_model)
    smaller = SMALLER_MODELS.get(provider)
    if smaller is None:
        raise InvalidRecordError(
            f"the {chosen.value} preset knows no smaller model for {default_model!r} "
            f"(it knows {', '.join(SMALLER_MODELS)}); name the collector's model "
            "yourself instead, e.g. models={'collector': 'provider:model-id'}")
    return {role.value: smaller for role in ECONOMY_ROLES}
