"""Metrics on hand-built gold files with known values, plus oracle/greedy/wall-of-text."""

from __future__ import annotations

import itertools

import pytest

from benchmark.metrics import (
    CaseScore,
    ConsideredSuspect,
    Edge,
    Evidence,
    Hypothesis,
    SystemAnswer,
    aggregate,
    match,
    oracle_answer,
    prf,
    score_case,
)

PLATE_SQL = ("SELECT p.id, p.name, dl.plate_number FROM person p LEFT JOIN drivers_license dl "
             "ON dl.id = p.license_id WHERE p.id = {} ORDER BY ALL")
GYM_SQL = ("SELECT p.id, p.name, m.id AS membership_id, m.membership_status FROM person p "
           "LEFT JOIN get_fit_now_member m ON m.person_id = p.id WHERE p.id = {} ORDER BY ALL")


def tiny_gold(murderers: tuple[int, ...] = (1,)) -> dict:
    people = {1: "Ann Lee", 2: "Bob Stone", 3: "Cy Fox"}
    return {
        "case_id": "tiny", "tier": "easy",
        "murderers": [{"id": i, "name": people[i]} for i in murderers],
        "suspects": [{"id": i, "name": n} for i, n in people.items()],
        "graph": {
            "hypotheses": [{"id": f"H{i}", "text": f"{n} (person {i}) is a murderer.",
                            "suspect": str(i)} for i, n in people.items()],
            "evidence": [
                {"id": "E1", "sql": PLATE_SQL.format(1), "rows": [[1, "Ann Lee", "0H42W2"]],
                 "description": "plate of Ann Lee"},
                {"id": "E2", "sql": PLATE_SQL.format(2), "rows": [[2, "Bob Stone", "0H42X2"]],
                 "description": "plate of Bob Stone"},
                {"id": "E3", "sql": GYM_SQL.format(3), "rows": [[3, "Cy Fox", None, None]],
                 "description": "gym membership of Cy Fox"},
            ],
            "edges": [{"evidence": "E1", "hypothesis": "H1", "stance": "supports"},
                      {"evidence": "E2", "hypothesis": "H2", "stance": "contradicts"},
                      {"evidence": "E3", "hypothesis": "H3", "stance": "contradicts"}],
        },
    }


def test_prf_edge_cases() -> None:
    assert prf(set(), set()) == (1.0, 1.0, 1.0)
    assert prf(set(), {"1"})[2] == 0.0
    assert prf({"1"}, set())[2] == 0.0


def test_correctness_exact_values() -> None:
    gold = tiny_gold()
    s = score_case(SystemAnswer(accused={"  ANN   lee ", "2"}), gold)
    assert (s.precision, s.recall) == (0.5, 1.0)
    assert s.correctness == pytest.approx(2 / 3)
    two = tiny_gold((1, 2))
    assert score_case(SystemAnswer(accused={"1"}), two).correctness == pytest.approx(2 / 3)
    assert score_case(SystemAnswer(accused={"Ann Lee", "Bob Stone"}), two).correctness == 1.0
    assert score_case(SystemAnswer(accused={"Nobody Known"}), gold).correctness == 0.0


def test_completeness_counts_only_analysed_suspects() -> None:
    answer = SystemAnswer(suspects_considered=[
        ConsideredSuspect("Ann Lee", verdict="guilty"),
        ConsideredSuspect("2", n_evidence=2),
        ConsideredSuspect("Cy Fox"),  # neither verdict nor evidence: not analysed
        ConsideredSuspect("Zed Unknown", verdict="innocent"),
    ])
    assert score_case(answer, tiny_gold()).completeness == pytest.approx(2 / 3)


def test_verifiability_exact_value() -> None:
    answer = SystemAnswer(
        hypotheses=[Hypothesis("a", "Ann did it", "ann lee"), Hypothesis("b", "Bob", "Bob Stone")],
        evidence=[Evidence("x", "select plate_number from drivers_license", [["0H42W2", 1,
                                                                              "ann lee"]]),
                  Evidence("y", description="plate of Bob Stone")],
        edges=[Edge("x", "a", "supports"), Edge("y", "b", "supports")])  # 2nd: wrong stance
    s = score_case(answer, tiny_gold())
    # 1 of 2 system edges is a gold edge, 1 of 3 gold edges found: P=1/2, R=1/3.
    assert s.verifiability == pytest.approx(0.4)
    assert s.hypothesis_f1 == pytest.approx(0.8)  # 2 matched of 2 system / 3 gold
    assert s.evidence_f1 == pytest.approx(0.8)


def test_oracle_scores_one() -> None:
    s = score_case(oracle_answer(tiny_gold()), tiny_gold())
    assert (s.correctness, s.completeness, s.verifiability) == (1.0, 1.0, 1.0)
    assert (s.hypothesis_f1, s.evidence_f1) == (1.0, 1.0)


def test_greedy_answer_has_low_completeness() -> None:
    greedy = SystemAnswer(accused={"Ann Lee"},
                          suspects_considered=[ConsideredSuspect("Ann Lee", "guilty", 1)])
    s = score_case(greedy, tiny_gold())
    assert s.correctness == 1.0
    assert s.completeness == pytest.approx(0.5)


def test_empty_answer_scores_zero() -> None:
    s = score_case(SystemAnswer(), tiny_gold())
    assert (s.correctness, s.completeness, s.verifiability) == (0.0, 0.0, 0.0)


def test_wall_of_text_has_no_verifiability() -> None:
    text = "After many queries I believe Ann Lee is the murderer because her plate matched. " * 20
    answer = SystemAnswer(accused={"Ann Lee"},
                          suspects_considered=[ConsideredSuspect("Ann Lee", "guilty")],
                          hypotheses=[Hypothesis("h", text)])
    s = score_case(answer, tiny_gold())
    assert s.correctness == 1.0
    assert s.verifiability == 0.0
    assert s.evidence_f1 == 0.0


def test_matching_tie_breaks_do_not_depend_on_input_order() -> None:
    gold = [Evidence("E1", PLATE_SQL.format(1))]
    twins = [Evidence(i, PLATE_SQL.format(1)) for i in ("b", "a", "c")]
    results = {tuple(match(list(p), gold, lambda s, g: 1.0).items())
               for p in itertools.permutations(twins)}
    assert len(results) == 1
    for perm in itertools.permutations(twins):
        answer = SystemAnswer(evidence=list(perm), hypotheses=[Hypothesis("h", "", "1")],
                              edges=[Edge("a", "h", "supports")])
        assert score_case(answer, tiny_gold()) == score_case(
            SystemAnswer(evidence=twins, hypotheses=answer.hypotheses, edges=answer.edges),
            tiny_gold())


def test_aggregate_means_by_tier_and_system() -> None:
    def cs(tier: str, system: str, v: float) -> CaseScore:
        return CaseScore("c", tier, system, v, v, v, v, v, v, v)

    scores = [cs("hard", "d2", 1.0), cs("easy", "d2", 0.5), cs("easy", "d2", 1.0),
              cs("easy", "cc", 0.0)]
    rows = aggregate(scores, by="tier")
    assert [(r["tier"], r["n"], r["correctness"]) for r in rows] == [
        ("easy", 3, 0.5), ("hard", 1, 1.0), ("all", 4, 0.625)]
    rows = aggregate(scores, by=("system", "tier"))
    assert [(r["system"], r["tier"], r["n"]) for r in rows] == [
        ("cc", "easy", 1), ("cc", "all", 1), ("d2", "easy", 2), ("d2", "hard", 1),
        ("d2", "all", 3)]


def test_oracle_and_greedy_on_a_generated_case() -> None:
    from d2_notebook.datasets.sql_city import generate_case

    gold = generate_case(3, 1, "very_hard").gold
    assert score_case(oracle_answer(gold), gold).verifiability == 1.0
    m = gold.murderers[0]
    greedy = SystemAnswer(accused={m["name"]},
                          suspects_considered=[ConsideredSuspect(m["name"], "guilty", 2)])
    s = score_case(greedy, gold)
    assert s.correctness == pytest.approx(2 / 3)
    assert s.completeness < 0.3
