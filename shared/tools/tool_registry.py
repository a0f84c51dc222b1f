"""The tool registry: what a tool is, how its arguments are checked, and the offered definitions.

Two kinds of tool, a closed set the executor dispatches on:

* `DatabaseTool` — a handler over the user's data. It receives a connection and its validated
  arguments and nothing else: the executor opens the unit of work (read-only for `read` tools),
  so a handler can never pick a more powerful one.
* `ExternalTool` — a call to something outside the database (an MCP server), with a JSON schema
  in place of a Pydantic model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from shared.db.database import Connection
from shared.kernel.errors import ConfigurationError
from shared.llm.messages import parse_arguments
from shared.tools.results import ToolCallError, problem_list
from shared.tools.schema import JsonObject, flatten_schema, function_parameters

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

Access = Literal["read", "write"]
"""`read` tools run in a read-only transaction and may be offered to read-only agents."""

A = TypeVar("A", bound=BaseModel)

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""Function names OpenAI-compatible providers accept."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What an agent is shown about a tool: plain values the LLM client turns into its wire form."""

    name: str
    description: str
    parameters: JsonObject
    """JSON schema of the arguments (inline, no `$ref`)."""
    access: Access
    destructive: bool
    """True when a call removes or irreversibly changes data (the planner may ask first)."""

    def as_openai_tool(self) -> JsonObject:
        """The OpenAI/DeepSeek `tools[]` entry for this definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """Validated arguments and their canonical form (the de-duplication key)."""

    value: Any
    """What the handler receives: the Pydantic model, or the JSON object of an external tool."""
    canonical: str
    """Sorted, compact JSON of the validated arguments (defaults filled in)."""


@dataclass(frozen=True, slots=True)
class DatabaseTool(Generic[A]):
    """A tool whose handler works on the user's rows through a connection it is given."""

    name: str
    description: str
    args: type[A]
    access: Access
    handler: Callable[[Connection, A], Awaitable[BaseModel]]
    destructive: bool = False

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            self.name,
            self.description,
            function_parameters(self.args),
            self.access,
            self.destructive,
        )

    def parse(self, arguments: JsonObject) -> ParsedArguments:
        """Validate `arguments`; raises `ToolCallError("invalid_arguments", ...)`."""
        try:
            value = self.args.model_validate(arguments)
        except ValidationError as exc:
            raise ToolCallError("invalid_arguments", _pydantic_problems(exc)) from None
        return ParsedArguments(value, canonical_json(value.model_dump(mode="json")))


@dataclass(frozen=True, slots=True)
class ExternalTool:
    """A tool served outside the database (e.g. by an MCP server), described by a JSON schema."""

    name: str
    description: str
    input_schema: JsonObject
    """The schema as the server publishes it; arguments are validated against this one."""
    access: Access
    call: Callable[[JsonObject], Awaitable[JsonObject]]
    destructive: bool = False
    parameters: JsonObject = field(init=False)
    """The schema as offered to the model (inline, like the built-ins')."""
    _validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from jsonschema import Draft202012Validator  # only MCP tools need it: keep cold start lean
        from jsonschema.exceptions import SchemaError  # with the above

        try:
            Draft202012Validator.check_schema(self.input_schema)
        except SchemaError as exc:
            raise ConfigurationError(
                f"tool {self.name}: invalid input schema: {exc.message}"
            ) from None
        object.__setattr__(self, "parameters", _offered_schema(self.input_schema))
        object.__setattr__(self, "_validator", Draft202012Validator(self.input_schema))

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            self.name, self.description, self.parameters, self.access, self.destructive
        )

    def parse(self, arguments: JsonObject) -> ParsedArguments:
        """Validate `arguments` against the schema; raises `ToolCallError("invalid_arguments")`."""
        problems = [
            f"{'.'.join(str(p) for p in err.absolute_path) or 'arguments'}: {err.message}"
            for err in self._validator.iter_errors(arguments)
        ]
        if problems:
            raise ToolCallError("invalid_arguments", problem_list(sorted(problems)))
        return ParsedArguments(arguments, canonical_json(arguments))


Tool = DatabaseTool[Any] | ExternalTool


class ToolRegistry:
    """Every tool a deployment has, by unique name, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register `tool`; a bad or duplicate name is a configuration error."""
        if not NAME.match(tool.name):
            raise ConfigurationError(
                f"tool name {tool.name!r} must match {NAME.pattern} (letters, digits, _ and -)"
            )
        if tool.name in self._tools:
            raise ConfigurationError(f"two tools are named {tool.name!r}; rename or prefix one")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool called `name`, if registered."""
        return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        """Every tool's definition, as a model is offered it (a built-in's JSON schema is built
        on first use, then kept)."""
        return [tool.definition for tool in self]

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def decode_arguments(raw: str) -> JsonObject:
    """The model's raw argument string as a JSON object (an empty string means `{}`); the
    same rules as the model client's (`shared.llm.messages.parse_arguments`)."""
    found = parse_arguments(raw)
    if isinstance(found, str):
        raise ToolCallError("invalid_arguments", found)
    return found


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _offered_schema(schema: dict[str, Any]) -> JsonObject:
    flat = flatten_schema(schema or {"type": "object"})
    flat.setdefault("type", "object")
    return flat


def _pydantic_problems(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    return problem_list(problems)
