"""Variants are six values of one type; settings parse them and migrate old boards."""

from __future__ import annotations

import pytest

from d2_notebook.detective import ALL_VARIANTS, VARIANTS, InvestigationSettings, Role, Variant
from d2_notebook.detective.variant import FULL, NO_JUDGE, REACT_SQL, Shape, parse_variant
from d2_notebook.errors import InvalidRecordError

# Exactly what a board recorded before the streaming loop stores (real-boards/*.d2board).
OLD_SETTINGS = {"collectors": 4, "max_calls": None, "max_evidence_returns": 1,
                "max_hypothesizer_calls": 2, "max_rounds": 4, "max_seconds": None,
                "max_steps": 12, "max_steps_alone": 80, "max_tokens": None, "max_usd": None,
                "preview_rows": 20, "reporter_reserve": 0.15, "sql_timeout_s": 30.0,
                "variant": "full"}


def test_six_variants_name_their_roles_and_tools():
    assert VARIANTS == ("full", "no_reporter", "no_judge", "merged_planner",
                        "single_agent_board", "react_sql")
    assert all(isinstance(v, Variant) for v in ALL_VARIANTS)
    assert FULL.roles == (Role.HYPOTHESIZER, Role.ORCHESTRATOR, Role.COLLECTOR, Role.JUDGE,
                          Role.REPORTER)
    assert "dispatch" not in FULL.tools_of(Role.ORCHESTRATOR)
    assert NO_JUDGE.tools_of(Role.COLLECTOR)[-1] == "give_verdict"
    assert not NO_JUDGE.runs(Role.JUDGE) and NO_JUDGE.tools_of(Role.JUDGE) == ()
    assert REACT_SQL.shape is Shape.REACT and REACT_SQL.tools_of(Role.REACT) == (
        "run_sql", "final_answer")
    with pytest.raises(TypeError):
        FULL.tools[Role.JUDGE] = ()  # read-only


def test_a_variant_is_parsed_in_one_place_and_a_bad_name_lists_them():
    assert parse_variant("no_judge") is NO_JUDGE and parse_variant(NO_JUDGE) is NO_JUDGE
    with pytest.raises(InvalidRecordError, match="unknown variant 'solo'; use one of: full, "):
        parse_variant("solo")
    assert InvestigationSettings(variant="react_sql").variant is REACT_SQL


def test_settings_round_trip_as_json_names():
    settings = InvestigationSettings(variant="no_judge", role_models={"collector": "a:b"})
    data = settings.to_dict()
    assert data["variant"] == "no_judge" and data["role_models"] == {"collector": "a:b"}
    assert InvestigationSettings.from_dict(data) == settings


def test_old_board_settings_migrate_max_rounds_to_max_depth():
    settings = InvestigationSettings.from_dict(OLD_SETTINGS)
    assert settings.max_depth == 4 and settings.variant is FULL
    assert settings.role_models == {}
    assert "max_rounds" not in settings.to_dict()


def test_role_models_must_name_roles():
    with pytest.raises(InvalidRecordError, match=r"unknown role.*'collectors'"):
        InvestigationSettings(role_models={"collectors": "a:b"})
