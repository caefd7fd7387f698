"""``python -m benchmark reprice BOARD``: what a recorded investigation would have cost with
other models for some roles, priced on the same calls.

A what-if for presets and role models (issue 20): the board's calls keep their recorded
tokens (input, cache reads and writes, output) and each call is priced again at the
price of the model its role is mapped to (``--role-model judge=anthropic:claude-haiku-4-5``,
or ``--preset economy --model anthropic:claude-sonnet-4-6``: every role at that default
model but those the preset maps elsewhere; ``--preset default`` prices an economy run as
if every role had run on the default model). It says
what the price list alone changes; a smaller model may also make other calls (more or
fewer, longer or shorter), which only a run with that model shows.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from d2_notebook.board import Board
from d2_notebook.board.records import ModelCallStatus
from d2_notebook.detective.preset import PRESETS, preset_models
from d2_notebook.detective.variant import Role
from d2_notebook.errors import BoardError, InvalidRecordError
from d2_notebook.llm import TokenUsage
from d2_notebook.llm.pricing import cost_of


@dataclass(frozen=True)
class RolePrice:
    """One role's calls of an investigation, priced as recorded and as re-mapped."""

    role: str
    calls: int
    recorded_model: str
    model: str
    recorded_usd: float
    usd: float


def reprice(board: Board, role_models: dict[str, str],
            investigation_id: str | None = None) -> list[RolePrice]:
    """The calls of ``investigation_id`` (default: the board's last investigation) by
    role, each role priced at its recorded models' prices and at ``role_models``'s model
    for it (its recorded model when the role is not named). Refused calls cost nothing
    either way (they never reached a model).

    Raises:
        InvalidRecordError: the board has no investigation, or a named model has no
            price (the message names it and how to give one).
    """
    investigations = board.list_investigations()
    if not investigations:
        raise InvalidRecordError("the board holds no investigation to price")
    wanted = investigation_id or investigations[-1].id
    rows: dict[str, dict] = {}
    for call in board.list_model_calls():
        if call.investigation_id != wanted or call.status is ModelCallStatus.REFUSED:
            continue
        usage = TokenUsage(input_tokens=call.input_tokens or 0,
                           output_tokens=call.output_tokens or 0,
                           cache_read_tokens=call.cache_read_tokens or 0,
                           cache_write_tokens=call.cache_write_tokens or 0)
        target = role_models.get(call.role, call.model)
        priced = cost_of(target, usage)
        if not priced.priced:
            raise InvalidRecordError(
                f"no price is known for {target!r} (role {call.role}); name a priced model "
                "or add one with d2_notebook.llm.pricing.set_price")
        row = rows.setdefault(call.role, {"calls": 0, "recorded": set(), "models": set(),
                                          "recorded_usd": 0.0, "usd": 0.0})
        row["calls"] += 1
        row["recorded"].add(call.model)
        row["models"].add(target)
        row["recorded_usd"] += cost_of(call.model, usage).usd
        row["usd"] += priced.usd
    return [RolePrice(role, r["calls"], ", ".join(sorted(r["recorded"])),
                      ", ".join(sorted(r["models"])), r["recorded_usd"], r["usd"])
            for role, r in rows.items()]


def table(prices: list[RolePrice]) -> str:
    """``prices`` as a plain-text table with a total line."""
    def row(role: str, calls: int, recorded: float, repriced: float, note: str) -> str:
        return (f"{role:13} {calls:>5}  {f'${recorded:.3f}':>9}  {f'${repriced:.3f}':>9}  "
                f"{note}")

    lines = [f"{'role':13} {'calls':>5}  {'recorded':>9}  {'repriced':>9}  model"]
    lines += [row(p.role, p.calls, p.recorded_usd, p.usd, p.model) for p in prices]
    recorded = sum(p.recorded_usd for p in prices)
    repriced = sum(p.usd for p in prices)
    ratio = f"({repriced / recorded:.2f}× the recorded cost)" if recorded else ""
    lines.append(row("total", sum(p.calls for p in prices), recorded, repriced, ratio))
    return "\n".join(lines)


def add_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``reprice``."""
    parser.add_argument("board", type=Path, help="a finished board (.d2board)")
    parser.add_argument("--role-model", action="append", default=[], metavar="ROLE=MODEL",
                        help="price ROLE's calls at MODEL (repeatable)")
    parser.add_argument("--preset", choices=PRESETS,
                        help="price every role as the preset runs it with --model as the default "
                        "(--preset default: every role at --model, e.g. an economy run "
                        "at the default's prices; --role-model wins)")
    parser.add_argument("--model", help="the default model the preset maps from, e.g. "
                        "anthropic:claude-sonnet-4-6")
    parser.add_argument("--investigation", help="an investigation id (default: the last)")


def run(args: argparse.Namespace) -> int:
    """Print the re-priced table; 2 with the fix on bad input."""
    try:
        mapping: dict[str, str] = {}
        if args.preset:
            if not args.model:
                raise InvalidRecordError("--preset needs --model: the default model the "
                                         "preset maps from, e.g. anthropic:claude-sonnet-4-6")
            mapping.update({role.value: args.model for role in Role})
            mapping.update(preset_models(args.preset, args.model))
        for item in args.role_model:
            role, sep, model = item.partition("=")
            if not sep or not role or not model:
                raise InvalidRecordError(f"--role-model {item!r}: write ROLE=MODEL, e.g. "
                                         "judge=anthropic:claude-haiku-4-5")
            mapping[role] = model
        if not args.board.exists():
            raise InvalidRecordError(f"no board at {args.board}")
        with Board.open(args.board, read_only=True) as board:
            print(table(reprice(board, mapping, args.investigation)))
    except (InvalidRecordError, BoardError) as exc:
        print(f"reprice: {exc}")
        return 2
    return 0
