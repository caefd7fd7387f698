"""Metrics on hand-built gold files with known values, plus oracle/greedy/wall-of-text."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

import pytest

from benchmark.aggregate import aggregate
from d2_notebook.teaching.answer import (
    ConsideredSuspect,
    Edge,
    Evidence,
    Hypothesis,
    SystemAnswer,
    oracle_answer,
)
from d2_notebook.teaching.evidence_match import coverage, row_score, soft_prf
from d2_notebook.teaching.scoring import CaseScore, prf, score_case

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
    score = score_case(answer, tiny_gold())
    assert score.completeness == pytest.approx(2 / 3)  # recall: 2 of the 3 gold suspects
    assert score.completeness_f1 == pytest.approx(2 / 3)  # P 2/3 (Zed is extra), R 2/3
    assert score.extra_suspects == 1


def test_ruling_out_extra_people_costs_no_completeness() -> None:
    answer = SystemAnswer(suspects_considered=[
        *(ConsideredSuspect(n, verdict="cleared") for n in ("Ann Lee", "Bob Stone", "Cy Fox")),
        *(ConsideredSuspect(f"Extra {i}", verdict="cleared") for i in range(5))])
    score = score_case(answer, tiny_gold())
    assert score.completeness == 1.0 and score.extra_suspects == 5
    assert score.completeness_f1 == pytest.approx(2 * (3 / 8) / (1 + 3 / 8))  # the paper's


def test_verifiability_exact_value() -> None:
    answer = SystemAnswer(
        hypotheses=[Hypothesis("a", "Ann did it", "ann lee"), Hypothesis("b", "Bob", "Bob Stone")],
        evidence=[Evidence("x", "select plate_number from drivers_license", [["0H42W2", 1,
                                                                              "ann lee"]]),
                  Evidence("y", description="plate of Bob Stone")],
        edges=[Edge("x", "a", "supports"), Edge("y", "b", "supports")])  # y: no rows
    s = score_case(answer, tiny_gold())
    # x establishes gold E1 (column order free) and links it right: credit 1; y has no
    # rows, so it establishes nothing: credit 0. P = 1/2, R = 1/3 of the gold edges.
    assert (s.edge_precision, s.edge_recall) == (0.5, pytest.approx(1 / 3))
    assert s.verifiability == pytest.approx(0.4)
    assert s.hypothesis_f1 == pytest.approx(0.8)  # 2 of 2 system, 2 of 3 gold
    assert s.evidence_f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_evidence_is_matched_by_the_fact_its_rows_establish() -> None:
    gold = [("1", "ann lee", "0h42w2")]
    anchors = frozenset({"1", "ann lee"})
    other_query = [("0h42w2", "x", "ann lee", "1", "blue"), ("9", "someone", "zzz")]
    assert coverage(gold, other_query, anchors) == 1.0  # other SQL, order, extra columns
    assert coverage(gold, [("1", "ann lee")], anchors) == 0.0  # only who, not the fact
    assert coverage(gold, [("7", "bob", "0h42w2")], anchors) == 0.0  # someone else's plate
    two = [("1", "ann lee", "female", "white")]
    assert coverage(two, [("ann lee", "female", "red")], anchors) == 0.5  # soft, no cliff
    assert row_score(("3", "cy fox", "null", "null"), Counter(["3", "0", "null"]),
                     frozenset({"3", "cy fox"})) == 1.0  # a missing record: NULL, 0, false
    assert coverage([], [("1",)]) == 0.0 and coverage(gold, [], anchors) == 0.0
    assert soft_prf([], 0) == (1.0, 1.0, 1.0) and soft_prf([], 2) == (0.0, 0.0, 0.0)


def test_a_rewritten_audit_graph_that_establishes_every_fact_scores_one() -> None:
    gold = tiny_gold()
    answer = oracle_answer(gold)
    answer.evidence = [Evidence(e.id, "SELECT whatever FROM elsewhere",
                                [[*reversed(row), "extra column"] for row in e.rows],
                                "my own words") for e in answer.evidence]
    s = score_case(answer, gold)
    assert (s.verifiability, s.evidence_f1) == (1.0, 1.0)


def test_one_evidence_of_several_facts_must_carry_their_net_stance() -> None:
    gold = tiny_gold()
    gold["graph"]["evidence"].append({"id": "E4", "sql": GYM_SQL.format(2),
                                      "rows": [[2, "Bob Stone", "22ABC", "gold"]],
                                      "description": "gym of Bob"})
    gold["graph"]["edges"].append({"evidence": "E4", "hypothesis": "H2", "stance": "supports"})
    profile = Evidence("p", rows=[[2, "Bob Stone", "0H42X2", "22ABC", "gold"]])
    bob = Hypothesis("b", "Bob Stone did it", "2")
    right = score_case(SystemAnswer(hypotheses=[bob], evidence=[profile],
                                    edges=[Edge("p", "b", "contradicts")]), gold)
    wrong = score_case(SystemAnswer(hypotheses=[bob], evidence=[profile],
                                    edges=[Edge("p", "b", "supports")]), gold)
    # One link earns one gold edge (one-to-one): precision 1, recall 1 of the 4 gold edges.
    assert right.edge_precision == 1.0 and right.edge_recall == pytest.approx(1 / 4)
    assert wrong.verifiability == 0.0  # one of its facts clears Bob: "supports" is wrong


def test_edges_outside_the_gold_or_on_context_are_counted_not_scored() -> None:
    gold = tiny_gold()
    gold["graph"]["evidence"].append({"id": "E0", "sql": "SELECT * FROM interview",
                                      "rows": [[99, "I saw a plate with 0H42"]],
                                      "description": "the interview"})
    answer = oracle_answer(gold)
    answer.hypotheses.append(Hypothesis("Z", "Zed Unknown did it", "Zed Unknown"))
    answer.evidence.append(Evidence("I", rows=[[99, "Witness", "I saw a plate with 0H42"]]))
    answer.edges += [Edge("E1", "Z", "supports"), Edge("I", "H1", "supports")]
    s = score_case(answer, gold)
    assert s.extra_edges == 2 and s.verifiability == 1.0


def test_oracle_scores_one() -> None:
    s = score_case(oracle_answer(tiny_gold()), tiny_gold())
    assert (s.correctness, s.completeness, s.verifiability) == (1.0, 1.0, 1.0)
    assert (s.hypothesis_f1, s.evidence_f1) == (1.0, 1.0)


def test_greedy_answer_has_low_completeness() -> None:
    greedy = SystemAnswer(accused={"Ann Lee"},
                          suspects_considered=[ConsideredSuspect("Ann Lee", "guilty", 1)])
    s = score_case(greedy, tiny_gold())
    assert s.correctness == 1.0
    assert s.completeness == pytest.approx(1 / 3)  # recall: 1 of 3 suspects
    assert s.completeness_f1 == pytest.approx(0.5)  # the paper's F1: P 1, R 1/3


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


def test_scores_do_not_depend_on_input_order() -> None:
    twins = [Evidence(i, PLATE_SQL.format(1), [[1, "Ann Lee", "0H42W2"]]) for i in "bac"]
    hyp = [Hypothesis("h", "", "1")]
    first = None
    for perm in itertools.permutations(twins):
        answer = SystemAnswer(evidence=list(perm), hypotheses=hyp,
                              edges=[Edge("a", "h", "supports")])
        score = score_case(answer, tiny_gold())
        first = first or score
        assert score == first


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


def test_one_evidence_holding_every_fact_cannot_collect_every_gold_edge() -> None:
    gold = tiny_gold()
    everything = Evidence("all", rows=[row for e in gold["graph"]["evidence"] for row in e["rows"]])
    hyps = [Hypothesis(f"h{i}", "", str(i)) for i in (1, 2, 3)]
    gamed = score_case(SystemAnswer(hypotheses=hyps, evidence=[everything],
                                    edges=[Edge("all", h.id, "contradicts") for h in hyps]),
                       gold)
    # Three edges, each may earn one gold edge: only H2 and H3 are contradicted in the
    # gold, so 2 of 3 system edges earn credit, for 2 of 3 gold edges.
    assert gamed.edge_precision == pytest.approx(2 / 3)
    assert gamed.edge_recall == pytest.approx(2 / 3)
    assert soft_prf([[1.0, 1.0, 1.0]], 3) == (1.0, pytest.approx(1 / 3), pytest.approx(0.5))


def test_duplicated_evidence_and_edges_earn_nothing_more() -> None:
    gold = tiny_gold()
    answer = oracle_answer(gold)
    copies = SystemAnswer(
        hypotheses=answer.hypotheses,
        evidence=[replace(e, id=f"{e.id}#{k}") for e in answer.evidence for k in range(10)],
        edges=[replace(e, evidence=f"{e.evidence}#{k}") for e in answer.edges
               for k in range(10)])
    s = score_case(copies, gold)
    assert s.edge_recall == 1.0 and s.edge_precision == pytest.approx(0.1)
    assert s.evidence_f1 == pytest.approx(2 * 0.1 / 1.1)


def test_an_empty_result_naming_the_person_shows_a_missing_record() -> None:
    gold = tiny_gold()
    cy = Hypothesis("c", "Cy Fox did it", "3")
    named = Evidence("g", "SELECT * FROM get_fit_now_member WHERE person_id = 3", [],
                     "gym membership of Cy Fox: none")
    s = score_case(SystemAnswer(hypotheses=[cy], evidence=[named],
                                edges=[Edge("g", "c", "contradicts")]), gold)
    assert s.edge_precision == 1.0 and s.edge_recall == pytest.approx(1 / 3)
    # The same empty result about somebody else, or for a fact that exists, earns nothing.
    other = Evidence("g", "SELECT * FROM get_fit_now_member WHERE person_id = 33", [],
                     "gym membership")
    assert score_case(SystemAnswer(hypotheses=[cy], evidence=[other],
                                   edges=[Edge("g", "c", "contradicts")]), gold
                      ).verifiability == 0.0
    bob = Hypothesis("b", "Bob did it", "2")
    plate = Evidence("p", "SELECT plate_number FROM drivers_license WHERE id = 2", [],
                     "plate of Bob Stone")
    assert score_case(SystemAnswer(hypotheses=[bob], evidence=[plate],
                                   edges=[Edge("p", "b", "contradicts")]), gold
                      ).verifiability == 0.0
    assert coverage([("3", "cy fox", "null")], [], frozenset({"3", "cy fox"}),
                    "where name = 'Cy Fox'") == 1.0
