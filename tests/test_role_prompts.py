"""Each role prompt says what PROMPTS.md asks of that role."""

from __future__ import annotations

import pytest

from d2_notebook.detective.roles import instructions

NEVER = {
    "hypothesizer": "never collect detailed evidence and never judge",
    "orchestrator": "never run SQL and never judge",
    "collector": "You never give the verdict",
    "judge": "You never run SQL",
    "reporter": "You never run SQL and never invent evidence",
}
ASKS = {
    "hypothesizer": ["EVERY candidate", "every dimension the data has", "related tables",
                     "distinguishable by data"],
    "orchestrator": ["ONLY the board digest", "duplicates another", "coverage looks thin",
                     "every hypothesis that is not abandoned has a verdict"],
    "collector": ["against the hypothesis as hard as", "compare like with like", "sample sizes",
                  "stance", "one-sentence reading"],
    "judge": ["ONLY the evidence linked", "Read all of it", "names what would change the "
              "verdict", "concrete hints", "differs between subgroups", "refined child"],
    "reporter": ["ALL supported hypotheses", "## Not examined", "mark_redundant",
                 "marked unverified"],
}


@pytest.mark.parametrize("role", sorted(NEVER))
def test_each_role_states_its_single_job_and_what_it_never_does(role: str) -> None:
    text = instructions(role)
    assert "single job" in text
    assert NEVER[role] in text


@pytest.mark.parametrize("role", sorted(ASKS))
def test_each_role_says_what_prompts_md_asks_of_it(role: str) -> None:
    text = instructions(role)
    for phrase in ASKS[role]:
        assert phrase in text, f"{role}.txt must say {phrase!r}"


def test_shared_rules_state_the_objective_and_the_citation_rules() -> None:
    shared = instructions("shared")
    assert "{question}" in shared and "untrusted" in shared
    assert "cites evidence ids" in shared and "did not come from a query result" in shared


def test_the_single_agent_reports_under_the_team_reporter_s_rules():
    """single_agent_board writes its report by the reporter's rules, word for word: the
    answer first with sizes, key findings, recommendations for a role that acts."""
    from d2_notebook.detective.roles import REPORT_RULES_MARK, report_rules, role_instructions

    alone = role_instructions("single_agent")
    rules = report_rules()
    assert rules.startswith("write_report:") and '"## Answer"' in rules
    assert '"## Recommendations"' in rules and rules in alone
    assert rules in role_instructions("reporter")
    assert REPORT_RULES_MARK not in alone
    assert "never paste raw tool output" in alone


def test_reports_say_each_fact_once_at_a_readable_length():
    """The report (team and single agent alike) states a fact once and is read in a few
    minutes: the real-model reports ran to ~1,900 words, most numbers said three times."""
    from d2_notebook.detective.roles import report_rules

    rules = report_rules()
    assert "Say each fact once" in rules and "500 to 900 words" in rules
    assert "from the board" in rules and "do not write those sections" in rules


def test_a_collector_links_an_interval_reaching_a_material_effect_as_weak() -> None:
    """Judges on flag-7 and flag-9 found results linked as contradicting a claimed effect
    whose interval held 0 but reached one that would matter, which their own rule calls
    not decisive against it. The collector's prompt and every stance description say
    such a result is weak."""
    from d2_notebook.detective.team_tools import _STANCE

    assert "reaches, in the claimed direction, an effect that would matter is weak" in \
        instructions("collector")
    assert "holds 0 but still reaches, in the claimed direction, one that would matter" in \
        _STANCE["description"]
    assert "not decisive against it" in instructions("judge")


def test_a_claim_of_no_effect_reads_the_interval_rule_the_other_way() -> None:
    """Collectors and a judge on flag-6 ("the other four agents do not differ
    materially", "the closing agent does not matter") had to invert the rule for a
    claimed effect themselves, and chose differently. The prompts and the stance say it."""
    from d2_notebook.detective.team_tools import _STANCE

    collector = instructions("collector")
    assert "A hypothesis that claims no effect (no difference that matters) reads the rule " \
        "the other way" in collector
    assert "stays short of an effect that would matter supports it" in collector
    assert "supported only when the interval stays short of an effect that would matter" in \
        instructions("judge")
    assert "nor for a claim of no effect" in _STANCE["description"]
