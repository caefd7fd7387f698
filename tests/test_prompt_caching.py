"""Prompt caching on the wire: every role's request is laid out stable-first (tool specs,
then the system block with the rules, the schema and its join graph) with a cache marker
at the end of that stable part, and the stable part is byte-identical across a role's
turns and across its agents; each step of a turn caches the conversation so far and reads
back what the step before cached (roles whose turn is normally one call — judges, the
orchestrator, the reporter — do not write their first message to the cache)."""

from __future__ import annotations

import asyncio
import collections
import copy
import itertools
import json
from typing import Any

import pytest
from fake_anthropic_server import fake_anthropic, role_of

import d2_notebook.llm
from d2_notebook import investigate
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough

MARKER = {"type": "ephemeral"}


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The request bodies of a whole hospital investigation over the Messages API."""
    board_path = tmp_path_factory.mktemp("caching") / "test.d2board"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
        patch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", True)
        patch.setenv("ANTHROPIC_API_KEY", "test-key")
        with fake_anthropic(HospitalWalkthrough()) as server:
            patch.setenv("ANTHROPIC_BASE_URL", server["url"])
            result = asyncio.run(investigate(hospital.create(), hospital.QUESTION,
                                             board=board_path,
                                             model="anthropic:claude-sonnet-4-6"))
    assert result.state == "finished"
    return server["requests"]


def _system_text(body: dict[str, Any]) -> str:
    return "".join(block["text"] for block in body["system"])


def _stable_part(body: dict[str, Any]) -> str:
    """What the API reads before the conversation: the tool specs, then the system."""
    return json.dumps({"tools": body["tools"], "system": body["system"]}, sort_keys=True)


def _markers_in(value: Any) -> int:
    return json.dumps(value).count('"cache_control"')


def _without_markers(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plain = copy.deepcopy(messages)
    for message in plain:
        for block in message["content"]:
            block.pop("cache_control", None)
    return plain


def _user_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "user"]


def test_the_marker_ends_the_stable_part_and_the_conversation_so_far(sent) -> None:
    one_call_first = 0
    for body in sent:
        assert body["system"][-1]["cache_control"] == MARKER  # ends tools + system
        assert body["tools"][-1]["cache_control"] == MARKER
        assert _markers_in(body["tools"]) == 1 and _markers_in(body["system"]) == 1
        role, users = role_of(_system_text(body)), _user_turns(body)
        if role in ("judge", "orchestrator", "reporter") and len(body["messages"]) == 1:
            assert _markers_in(body["messages"]) == 0  # decided in one call: no write
            one_call_first += 1
            continue
        assert body["messages"][-1]["content"][-1]["cache_control"] == MARKER
        for turn in users[-2:]:  # written now, and read back from the step before
            assert turn["content"][-1]["cache_control"] == MARKER
        assert _markers_in(body["messages"]) == min(2, len(users))  # the API's four at most
        system = _system_text(body)
        assert "DATABASE SCHEMA" in system and hospital.QUESTION in system
        first = body["messages"][0]["content"][0]["text"]
        assert "THE BOARD NOW" in first or first == hospital.QUESTION  # what changes
    assert one_call_first > 5


def test_the_stable_part_is_byte_identical_across_turns_and_agents(sent) -> None:
    by_role: dict[str, set[str]] = collections.defaultdict(set)
    calls = collections.Counter(role_of(_system_text(body)) for body in sent)
    for body in sent:
        by_role[role_of(_system_text(body))].add(_stable_part(body))
    assert set(by_role) == {"hypothesizer", "orchestrator", "collector", "judge", "reporter"}
    # Several collectors and judges, and several turns of the hypothesizer, the
    # orchestrator and the judges (one sent back, some able to refine, some not).
    assert calls["collector"] > 5 and calls["judge"] > 5 and calls["orchestrator"] > 1
    for role, prefixes in by_role.items():
        assert len(prefixes) == 1, f"{role} sent {len(prefixes)} different stable parts"


def test_each_step_of_a_turn_starts_with_the_conversation_it_cached(sent) -> None:
    by_turn: dict[str, list[list[dict[str, Any]]]] = collections.defaultdict(list)
    for body in sent:
        first = json.dumps(_without_markers(body["messages"][:1]))
        by_turn[first].append(body["messages"])
    steps = 0
    for conversations in by_turn.values():
        for before, after in itertools.pairwise(conversations):
            if len(after) > len(before):
                assert _without_markers(after[:len(before)]) == _without_markers(before)
                # the step before cached up to its last block; this step marks the same
                # block, so the provider reads that prefix back instead of rewriting it
                assert after[len(before) - 1]["content"][-1].get("cache_control") == MARKER
                steps += 1
    assert steps > 5
