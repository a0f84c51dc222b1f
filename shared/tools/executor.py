"""Run one tool call the model made: check, record, run in the right unit of work, answer.

The three permission layers meet here:

1. *offer* — `permissions.offered_tools` (the agent core shows the model only those);
2. *call* — `decide` on the agent row re-read now; a denial is answered, logged, recorded and
   counted, and the tool does not run;
3. *database* — a `read` tool runs in `db.as_user(user, read_only=True)`, a `write` tool in
   `db.as_user(user)` — and only for an agent whose row says `read_write`: for any other agent
   every transaction is read-only, whatever the tool claims and whatever layer 2 decided. The
   handler gets that connection and nothing else.

Every outcome is a `ToolResult`; nothing a tool or a model does raises out of `execute`
(except cancellation). Unexpected errors are logged with the tool name and reach the model as a
generic `tool_failed`, so no internals or secrets leak into the conversation.

Write calls made for a plan happen once (`shared.db.receipts`): a database write records its
receipt — (plan, call id, arguments hash) and its result — in its own transaction, so a call
resumed after a crash between the write's commit and its result row gets the recorded result
and writes nothing. An external (MCP) write cannot share a transaction with Parley: its receipt
is recorded before the call and completed after; a call found begun but not completed is sent
again, and its result tells the model so (`RESENT_NOTE`) — whether it then ran twice depends on
the server.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, assert_never
from uuid import UUID

import psycopg

from shared.db import agents, dialogue, executions, receipts
from shared.db.database import Connection, Database
from shared.db.receipts import CallKey
from shared.db.records import Agent, DialogueEntry
from shared.kernel.errors import AppError, Conflict, InvalidInput, NotFound, PermissionDenied
from shared.kernel.usage import Usage
from shared.tools.calls import CallContext, ToolCall
from shared.tools.permissions import ALLOWED, Decision, Policy, decide
from shared.tools.repeated_calls import TurnCache
from shared.tools.results import ToolCallError, ToolErrorCode, ToolResult, failure
from shared.tools.schema import JsonObject
from shared.tools.tool_registry import (
    DatabaseTool,
    ExternalTool,
    ParsedArguments,
    Tool,
    ToolDefinition,
    ToolRegistry,
    decode_arguments,
)
from shared.tools.values import render_context

logger = logging.getLogger(__name__)

_APP_ERROR_CODES: tuple[tuple[type[AppError], ToolErrorCode], ...] = (
    (NotFound, "not_found"),
    (InvalidInput, "invalid_arguments"),
    (Conflict, "conflict"),
    (PermissionDenied, "permission_denied"),
)
_DATABASE_ERRORS: tuple[tuple[type[psycopg.Error], ToolErrorCode, str], ...] = (
    (
        psycopg.errors.ReadOnlySqlTransaction,
        "tool_failed",
        "the database refused a write: this tool runs read-only",
    ),
    (psycopg.errors.ForeignKeyViolation, "not_found", "a record the call refers to does not exist"),
    (psycopg.errors.CheckViolation, "invalid_arguments", "the values break a rule of the data"),
)
_UNCHECKED = "could not check this agent's permission; the tool did not run"
_FAILED = "the tool failed unexpectedly; it is logged. Try something else or report it."
RESENT_NOTE = (
    "This call was interrupted after it was sent and has been sent again; whether it took "
    "effect twice depends on the server. Check before repeating it."
)


@dataclass(frozen=True, slots=True)
class Checked:
    """A call answered on a row its caller read (`ToolExecutor.execute_checked`), with what
    the caller records: the call counts on the execution; a `denial` (the check's reason) is
    logged as a `permission_denied` dialogue row with the call's `arguments`."""

    result: ToolResult
    denial: str | None
    arguments: JsonObject
    agent_id: UUID | None
    """The agent row decided on (None: it is gone)."""


class ToolExecutor:
    """Executes tool calls against a registry, for agents whose rows live in `db`."""

    def __init__(
        self,
        db: Database,
        registry: ToolRegistry,
        *,
        timeout_seconds: float = 30.0,
        policy: Policy = decide,
    ) -> None:
        self.db = db
        self.registry = registry
        self.timeout_seconds = timeout_seconds
        self.policy = policy
        """The call-time decision; only tests replace it, to show the database layer alone."""

    async def offer(self, agent_id: UUID) -> list[ToolDefinition]:
        """The tools to show agent `agent_id`, from its row as it is now (none if it is gone)."""
        async with self.db.service() as conn:
            agent = await agents.get_agent(conn, agent_id=agent_id)
        if agent is None:
            return []
        return [tool.definition for tool in self.registry if self.policy(agent, tool).allowed]

    async def execute(self, call: ToolCall, *, context: CallContext, turn: TurnCache) -> ToolResult:
        """Answer `call`: denied, invalid, a repeat of this turn, or the tool's own result.

        Re-reads the agent row and records the check (the call counted on the execution; a
        denial logged as a dialogue row) in a transaction of its own."""
        tool = self.registry.get(call.name)
        arguments = _decoded(call)
        try:
            decision, agent = await self._guard(tool, call, arguments, context)
        except Exception:
            logger.exception("permission check failed for tool %s", call.name)
            return failure(call.id, call.name, "tool_failed", _UNCHECKED)
        return await self._perform(tool, call, arguments, decision, agent, context, turn)

    async def execute_checked(
        self, call: ToolCall, *, agent: Agent | None, context: CallContext, turn: TurnCache
    ) -> Checked:
        """Answer `call` for an agent whose row the caller read at call time (in the statement
        that stored the call): decided on that row, and the check's record — the call to
        count, a denial to log — left to the caller's next statement (`Checked`)."""
        tool = self.registry.get(call.name)
        arguments = _decoded(call)
        decision = self._decide(tool, agent, call, context)
        result = await self._perform(tool, call, arguments, decision, agent, context, turn)
        denial = None if decision.allowed else decision.reason
        agent_id = agent.id if agent is not None else None
        return Checked(result, denial, _recorded(arguments, call.arguments), agent_id)

    def _decide(
        self, tool: Tool | None, agent: Agent | None, call: ToolCall, context: CallContext
    ) -> Decision:
        """The call-time decision on `agent`'s row (an unknown tool is answered as such, not
        denied); a denial is logged."""
        decision = ALLOWED if tool is None else self.policy(agent, tool, user_id=context.user_id)
        if not decision.allowed:
            logger.warning(
                "permission denied: agent %s tool %s: %s",
                context.agent_id,
                call.name,
                decision.reason,
            )
        return decision

    async def _perform(
        self,
        tool: Tool | None,
        call: ToolCall,
        arguments: JsonObject | ToolCallError,
        decision: Decision,
        agent: Agent | None,
        context: CallContext,
        turn: TurnCache,
    ) -> ToolResult:
        if tool is None:
            return failure(call.id, call.name, "unknown_tool", _unknown(call.name))
        if not decision.allowed or agent is None:
            return failure(call.id, call.name, "permission_denied", decision.reason)
        may_write = agent.permissions == "read_write" and agent.role == "planner"
        try:
            if isinstance(arguments, ToolCallError):
                raise arguments
            parsed = tool.parse(arguments)
        except ToolCallError as exc:
            return failure(call.id, call.name, exc.code, exc.message)
        key = None
        if tool.access == "write" and context.plan_id is not None:
            key = CallKey.of(context.plan_id, call.id, tool.name, parsed.canonical)
        return await turn.once(
            f"{tool.name}\n{parsed.canonical}",
            call.id,
            lambda: self._run(tool, parsed, call, context, may_write=may_write, key=key),
            writes=tool.access == "write",
        )

    async def _guard(
        self,
        tool: Tool | None,
        call: ToolCall,
        arguments: JsonObject | ToolCallError,
        context: CallContext,
    ) -> tuple[Decision, Agent | None]:
        """Decide on the agent row as it is now; record a denial and count the call."""
        async with self.db.service() as conn:
            agent = await agents.get_agent(conn, agent_id=context.agent_id)
            decision = self._decide(tool, agent, call, context)
            denied = not decision.allowed
            if denied:
                await _record_denial(conn, context, agent, call, decision.reason, arguments)
            if context.execution_id is not None:
                await executions.add_execution_usage(
                    conn,
                    execution_id=context.execution_id,
                    usage=Usage(),
                    tool_calls=1,
                    permission_denials=int(denied),
                )
        return decision, agent

    async def _run(
        self,
        tool: Tool,
        parsed: ParsedArguments,
        call: ToolCall,
        context: CallContext,
        *,
        may_write: bool,
        key: CallKey | None,
    ) -> ToolResult:
        try:
            async with asyncio.timeout(self.timeout_seconds):
                payload = await self._invoke(tool, parsed, context, may_write=may_write, key=key)
        except ToolCallError as exc:
            return failure(call.id, call.name, exc.code, exc.message)
        except AppError as exc:
            return self._app_failure(call, exc)
        except psycopg.Error as exc:
            return self._database_failure(call, exc)
        except TimeoutError:
            logger.warning("tool %s timed out after %ss", call.name, self.timeout_seconds)
            return failure(call.id, call.name, "tool_failed", "the tool timed out")
        except Exception:
            logger.exception("tool %s failed", call.name)
            return failure(call.id, call.name, "tool_failed", _FAILED)
        return ToolResult(call.id, call.name, payload)

    async def _invoke(
        self,
        tool: Tool,
        parsed: ParsedArguments,
        context: CallContext,
        *,
        may_write: bool,
        key: CallKey | None,
    ) -> JsonObject:
        match tool:
            case DatabaseTool():
                read_only = tool.access == "read" or not may_write
                if key is not None and not read_only:
                    return await self._write_once(tool, parsed, context, key)
                async with self.db.as_user(context.user_id, read_only=read_only) as conn:
                    output = await tool.handler(conn, parsed.value)
                return output.model_dump(mode="json", context=render_context(parsed.value))
            case ExternalTool():
                if key is not None:
                    return await self._send_once(tool, parsed, context, key)
                return await tool.call(parsed.value)
            case _:
                assert_never(tool)

    async def _write_once(
        self, tool: DatabaseTool[Any], parsed: ParsedArguments, context: CallContext, key: CallKey
    ) -> JsonObject:
        """The write, with its receipt in its transaction — or the result it recorded."""
        if (done := await self._recorded(key)) is not None:
            return done
        try:
            async with self.db.as_user(context.user_id) as conn:
                output = await tool.handler(conn, parsed.value)
                payload = output.model_dump(mode="json", context=render_context(parsed.value))
                await receipts.record_with_write(
                    conn, key, user_id=context.user_id, tool_name=tool.name, result=payload
                )
        except psycopg.Error as exc:
            if not receipts.is_duplicate(exc):
                raise
            # Another run of this very call committed first: this write was rolled back.
            done = await self._recorded(key)
            assert done is not None
            return done
        return payload

    async def _send_once(
        self, tool: ExternalTool, parsed: ParsedArguments, context: CallContext, key: CallKey
    ) -> JsonObject:
        """The external call, unless an earlier attempt's result was recorded; marked when an
        earlier attempt was sent and its outcome is unknown."""
        async with self.db.service() as conn:
            receipt, first = await receipts.begin(
                conn, key, user_id=context.user_id, tool_name=tool.name
            )
        if receipt.result is not None:
            logger.info("tool %s: call %s already answered; not sent again", tool.name, key)
            return receipt.result
        payload = await tool.call(parsed.value)
        async with self.db.service() as conn:
            await receipts.complete(conn, key, result=payload)
        if not first:
            logger.warning("tool %s: call %s was sent again after an interruption", tool.name, key)
            return {**payload, "resent": True, "note": RESENT_NOTE}
        return payload

    async def _recorded(self, key: CallKey) -> JsonObject | None:
        async with self.db.service() as conn:
            receipt = await receipts.find(conn, key)
        if receipt is None or receipt.result is None:
            return None
        logger.info(
            "write call %s of plan %s already done; its result is reused", key.call_id, key.plan_id
        )
        return receipt.result

    def _app_failure(self, call: ToolCall, exc: AppError) -> ToolResult:
        for error_type, code in _APP_ERROR_CODES:
            if isinstance(exc, error_type):
                return failure(call.id, call.name, code, str(exc))
        logger.error("tool %s failed", call.name, exc_info=exc)
        return failure(call.id, call.name, "tool_failed", _FAILED)

    def _database_failure(self, call: ToolCall, exc: psycopg.Error) -> ToolResult:
        for error_type, code, message in _DATABASE_ERRORS:
            if isinstance(exc, error_type):
                logger.warning("tool %s: %s", call.name, type(exc).__name__)
                return failure(call.id, call.name, code, message)
        logger.error("tool %s failed in the database", call.name, exc_info=exc)
        return failure(call.id, call.name, "tool_failed", _FAILED)


async def _record_denial(
    conn: Connection,
    context: CallContext,
    agent: Agent | None,
    call: ToolCall,
    reason: str,
    arguments: JsonObject | ToolCallError,
) -> None:
    """The `permission_denied` dialogue row: in the call's thread, else on its plan."""
    sender = agent.id if agent is not None else None
    args = _recorded(arguments, call.arguments)
    thread = context.thread
    plan_id = thread.plan_id if thread is not None else context.plan_id
    if plan_id is not None:
        said = DialogueEntry("permission_denied", reason, sender, None, call.name, call.id, args)
        thread_id = thread.id if thread is not None else None
        await dialogue.add_agent_message(conn, said, plan_id=plan_id, thread_id=thread_id)


def _decoded(call: ToolCall) -> JsonObject | ToolCallError:
    try:
        return decode_arguments(call.arguments)
    except ToolCallError as exc:
        return exc


def _unknown(name: str) -> str:
    return f"there is no tool named {name[:64]!r}; use one of the tools you were given"


def _recorded(arguments: JsonObject | ToolCallError, raw: str) -> JsonObject:
    """The arguments as recorded with a denial (the raw text when they were not JSON)."""
    return arguments if isinstance(arguments, dict) else {"unparsed": raw[:2000]}
