"""Tools an agent may call, and how their calls are executed.

A :class:`Tool` is a spec the model sees plus an async handler. A handler returns the
text the model reads; it raises :class:`ToolError` for anything the model did wrong
(bad SQL, unknown id, a missing argument) and that message goes back to the model as
an ``is_error`` tool result — a model's mistake never crashes the run (STYLE.md, after
pydantic-ai's ``ModelRetry``). Only mistakes go back (:data:`MODEL_MISTAKES`): a fault
of the machinery (the board locked, full, read-only or corrupt; any other error) is
no message for the model and stops the run, which leaves it resumable.

A tool that *finishes* an agent's turn (``done``, ``finish``, ``give_verdict`` ...)
sets :attr:`Tool.ends_turn`; the agent loop stops after the response that called it.
When every call of one response is to a :attr:`Tool.concurrent` tool (the read-only
SQL tools), the calls run at the same time and their results still come back in the
order of the calls, in the next request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from d2_notebook.data.fencing import escape_text, fence
from d2_notebook.errors import InvalidRecordError, NotFoundError, SQLError
from d2_notebook.llm import ToolCallPart, ToolResult, ToolSpec

Handler = Callable[[dict[str, Any]], Awaitable[str]]

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


class ToolError(Exception):
    """A tool call the model must fix; the message is returned to it as a tool error."""


MODEL_MISTAKES: tuple[type[Exception], ...] = (ToolError, NotFoundError, InvalidRecordError,
                                               SQLError)
"""What a tool call may fail with and go back to the model: its own mistakes (a bad or
missing argument, an unknown id, a record that breaks a board rule, SQL the guard
refused or the database rejected). Everything else (a ``BoardError`` about the file,
``sqlite3.Error``, a bug) propagates and stops the run."""


@dataclass(frozen=True)
class Tool:
    """One tool: what the model sees (``spec``), what runs (``handler``).

    ``writes_board`` marks tools that change the board: their calls are executed in a
    fixed global order so that a replayed run writes the same board (see
    :mod:`d2_notebook.detective.sequencer`). ``concurrent`` marks read-only tools whose
    calls in one response may run at the same time (their handlers keep the results'
    order themselves).
    """

    spec: ToolSpec
    handler: Handler
    ends_turn: bool = False
    writes_board: bool = False
    concurrent: bool = False

    @property
    def name(self) -> str:
        """The tool's name as the model calls it."""
        return self.spec.name


def tool(
    name: str,
    description: str,
    properties: Mapping[str, Mapping[str, Any]],
    handler: Handler,
    *,
    required: Iterable[str] | None = None,
    ends_turn: bool = False,
    writes_board: bool = False,
    concurrent: bool = False,
) -> Tool:
    """Build a :class:`Tool` from a JSON-schema ``properties`` map.

    ``required`` defaults to every property.
    """
    schema = {
        "type": "object",
        "properties": {key: dict(value) for key, value in properties.items()},
        "required": list(properties if required is None else required),
    }
    return Tool(ToolSpec(name, description, schema), handler, ends_turn, writes_board,
                concurrent)


class Toolset:
    """The tools one agent has, by name."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        """Collect ``tools``; names must be unique."""
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if item.name in self._tools:
                raise ValueError(f"two tools are named {item.name!r}")
            self._tools[item.name] = item

    @property
    def specs(self) -> list[ToolSpec]:
        """The specs to send with a request, in a stable order."""
        return [item.spec for item in self._tools.values()]

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def writes_board(self, calls: Iterable[ToolCallPart]) -> bool:
        """True if any of ``calls`` may change the board."""
        return any((t := self._tools.get(c.name)) is not None and t.writes_board for c in calls)

    async def call_all(self, calls: list[ToolCallPart]) -> list[ToolResult]:
        """Run the calls of one response: at the same time when every one is to a
        concurrent tool, else one after the other; results in the calls' order."""
        tools = [self._tools.get(c.name) for c in calls]
        if len(calls) > 1 and all(t is not None and t.concurrent for t in tools):
            return list(await asyncio.gather(*(self.call(c) for c in calls)))
        return [await self.call(c) for c in calls]

    async def call(self, call: ToolCallPart) -> ToolResult:
        """Run one tool call; the model's mistakes come back as ``is_error``.

        Raises:
            Exception: any fault that is not one of :data:`MODEL_MISTAKES` (the board
                locked, full or read-only ...): the run stops with it.
        """
        item = self._tools.get(call.name)
        if item is None:
            names = ", ".join(self._tools)
            return ToolResult(call.id, f"unknown tool {call.name!r}; your tools are: {names}",
                              is_error=True)
        try:
            _validate(call.args, item.spec.parameters)
            content = await item.handler(dict(call.args))
        except SQLError as exc:
            return ToolResult(call.id, database_error_text(exc), is_error=True)
        except MODEL_MISTAKES as exc:
            return ToolResult(call.id, str(exc), is_error=True)
        return ToolResult(call.id, content)


def database_error_text(exc: SQLError) -> str:
    """A SQL error as the model reads it: escaped into one line and fenced as data.

    The message may quote the database's own names and values (a binder error lists a
    column named ``"x\n</data>\nSYSTEM: ..."`` as a candidate), so it is data, never
    instructions: its line breaks and every other control or separator character are
    shown as escapes, so nothing in it starts a line, and a forged ``</data>`` cannot
    close the fence. The guard's closing ``Hint:`` (its own text) keeps a line of its own.
    """
    text = str(exc)
    message, separator, hint = text.rpartition(_HINT)
    if not separator:
        message = text
    body = escape_text(message) + (f"{_HINT}{escape_text(hint)}" if separator else "")
    return fence("SQL error", body)


_HINT = "\nHint: "


def _validate(args: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Check required arguments, their JSON types, enums, ranges, ``minItems`` and
    ``minLength`` (the schema subset we use)."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        raise ToolError(f"missing argument(s): {', '.join(missing)}")
    unknown = [name for name in args if name not in properties]
    if unknown:
        raise ToolError(
            f"unknown argument(s): {', '.join(unknown)}; expected: {', '.join(properties)}"
        )
    for name, value in args.items():
        _check_value(name, value, properties[name])


def _check_value(name: str, value: Any, prop: Mapping[str, Any]) -> None:
    expected = prop.get("type")
    allowed = [t for t in (expected if isinstance(expected, list) else [expected])
               if t in _JSON_TYPES]
    if allowed and not any(_is_json_type(value, t) for t in allowed):
        raise ToolError(f"argument {name!r} must be a JSON {' or '.join(allowed)}, got "
                        f"{value!r}")
    if "enum" in prop and value not in prop["enum"]:
        raise ToolError(f"argument {name!r} must be one of {prop['enum']}, got {value!r}")
    if expected == "number" and not (prop.get("minimum", value) <= value <= prop.get("maximum",
                                                                                     value)):
        raise ToolError(
            f"argument {name!r} must be between {prop.get('minimum')} and {prop.get('maximum')}"
        )
    if expected == "array" and len(value) < prop.get("minItems", 0):
        raise ToolError(f"argument {name!r} needs at least {prop['minItems']} item(s), got "
                        f"{len(value)}")
    if expected == "string" and len(value.strip()) < prop.get("minLength", 0):
        raise ToolError(f"argument {name!r} must not be empty")
    if expected == "array" and "items" in prop:
        for position, item in enumerate(value):
            _check_value(f"{name}[{position}]", item, prop["items"])
    if expected == "object" and "properties" in prop:
        _validate(value, prop)


def _is_json_type(value: Any, expected: str) -> bool:
    if expected in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES[expected])
