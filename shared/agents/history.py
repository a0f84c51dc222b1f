"""An agent's conversation IS its stored rows: rebuilding model histories from the tables.

* The planner's turn for one plan is its `chat_messages` with that `plan_id`: assistant rows
  (text, `tool_calls`, `reasoning_content`) and `tool` rows answering them by `tool_call_id`.
  Past turns are the user's messages and the final answers (`chats.list_conversation`).
  What the plan's own rows hold is not stored twice: the accepted `create_plan` call is stored
  without its `steps` (its row's `metadata.plan_steps` names the call) and its result (the
  steps' outcomes, `plan_results`) without its text; both are read back from the plan's steps
  (`plan_arguments`, `plan_results`; `shared.db.chats` does the same in SQL for readers).
* A step's agent's conversation is its thread (`agent_chat_messages`): the `delegation` is the
  user message; the agent's own `status` text and its call rows (`tool_call`, `question`,
  `completion`, `error`, `escalation`, each with a `tool_call_id`) form its assistant turns
  (a turn's first row carries the model, usage and reasoning of the call that produced it);
  `tool_result` and `answer` rows are the tool messages answering them. A plain tool call's
  result is stored in the call's own row, which becomes a `tool_result` row still sent by the
  agent, with the call's arguments: one row, read back as the call and its result (older
  threads have two). `permission_denied` rows are the record of a denial — the model sees
  the denial as that call's `tool_result`.

Every call is stored before it runs and every result after, so the last turn's calls without a
result are exactly the work a resumed agent still has to do, and a history built for the next
model call pairs every call with its result (DeepSeek's 400s cannot happen by construction).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from shared.agents.budget import Segment
from shared.agents.prompts import PLAN_RESULTS, TEXT_ONLY_REMINDER
from shared.db.records import AgentMessage, AgentMessageType, ChatMessage, PlanStep
from shared.llm import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

CALL_TYPES: frozenset[AgentMessageType] = frozenset(
    {"tool_call", "question", "completion", "error", "escalation"}
)
RESULT_TYPES: frozenset[AgentMessageType] = frozenset({"tool_result", "answer"})
OWN_CALL_ROWS: frozenset[AgentMessageType] = CALL_TYPES | {"tool_result"}
"""The rows an agent sends that hold a call of its: a `tool_result` it sends is a call answered
in its own row (a result of its own has no sender)."""
UNPARSED = "_unparsed"
"""Key under which arguments that were not a JSON object are stored verbatim."""
TEXT_ARGUMENT: dict[str, str] = {
    "complete": "result",
    "fail": "reason",
    "escalate": "reason",
    "ask_planner": "question",
}
"""The argument of each control call that its row's `content` holds (the call's text)."""


@dataclass(slots=True)
class Turn:
    """One assistant turn and the results that answer its calls so far."""

    text: str | None = None
    reasoning: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)
    """Call id → how it was stored: the call row's message type in a thread; for the
    planner, the answering row's `metadata.kind` ("tool" until it is answered)."""
    results: dict[str, str] = field(default_factory=dict)

    @property
    def unanswered(self) -> list[ToolCall]:
        return [call for call in self.calls if call.id not in self.results]

    def messages(self) -> list[Message]:
        turn: list[Message] = [AssistantMessage(self.text, tuple(self.calls), self.reasoning)]
        turn += [
            ToolMessage.answering(c, self.results[c.id]) for c in self.calls if c.id in self.results
        ]
        if not self.calls:
            turn.append(UserMessage(TEXT_ONLY_REMINDER))
        return turn


def stored_arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as stored in `tool_args` (verbatim text when they were not an object)."""
    return dict(call.arguments) if call.valid else {UNPARSED: call.arguments_json}


def without_text(
    message_type: AgentMessageType, tool_name: str, arguments: dict[str, Any], content: str
) -> dict[str, Any] | None:
    """What a call row stores of `arguments`: None for a control call whose arguments are just
    its text, which the row's `content` holds already (`_call_from_row` puts it back)."""
    key = TEXT_ARGUMENT.get(tool_name)
    if message_type in CALL_TYPES and key is not None and arguments == {key: content}:
        return None
    return arguments


def wire_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """`chat_messages.tool_calls`: the wire form, arguments exactly as the model wrote them."""
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments_json},
        }
        for c in calls
    ]


def _call_from_wire(raw: dict[str, Any]) -> ToolCall:
    function = raw.get("function") or {}
    return ToolCall.parse(
        id=str(raw.get("id")),
        name=str(function.get("name", "")),
        arguments_json=str(function.get("arguments", "")),
    )


def _call_from_row(row: AgentMessage) -> ToolCall:
    key = TEXT_ARGUMENT.get(row.tool_name or "")
    args = row.tool_args if row.tool_args is not None else {key: row.content} if key else {}
    text = args[UNPARSED] if UNPARSED in args else json.dumps(args, ensure_ascii=False)
    return ToolCall.parse(id=str(row.tool_call_id), name=row.tool_name or "", arguments_json=text)


# --- the planner -------------------------------------------------------------------------

PLAN_STEPS = "plan_steps"
"""`metadata` key of the planner's row whose `create_plan` call (this id) is stored without its
`steps`: the accepted plan's, which its step rows hold."""


def step_arguments(step: PlanStep) -> dict[str, Any]:
    """A stored step as `create_plan` takes it, defaults left out (as in SQL: `chats`)."""
    found: dict[str, Any] = {"step_number": step.step_number, "description": step.description}
    if not step.executor_required:
        found["assignee"] = "planner"
    if step.depends_on:
        found["depends_on"] = list(step.depends_on)
    if step.tools:
        found["tools"] = list(step.tools)
    return found


def plan_arguments(stored: dict[str, Any], steps: Sequence[PlanStep]) -> dict[str, Any]:
    """An accepted `create_plan` call's arguments: what was stored of them, with its steps."""
    ordered = sorted(steps, key=lambda s: s.step_number)
    return {**stored, "steps": [step_arguments(step) for step in ordered]}


def without_steps(call: ToolCall) -> ToolCall:
    """The accepted `create_plan` call as stored: its steps are the plan's step rows."""
    rest = {key: value for key, value in call.arguments.items() if key != "steps"}
    return ToolCall.parse(id=call.id, name=call.name, arguments_json=json.dumps(rest))


def plan_results(steps: Sequence[PlanStep]) -> str:
    """The steps' outcomes, as the planner is given them (after `prompts.PLAN_RESULTS`) — each
    step's description is in the plan above it: not repeated."""
    lines = []
    for step in sorted(steps, key=lambda s: s.step_number):
        lines.append(f"Step {step.step_number}: {step.status}")
        if step.result:
            lines.append(f"Result: {step.result}")
        if step.error:
            lines.append(f"Problem: {step.error}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class PlannerTurn:
    """The planner's work on one plan, as stored."""

    turns: list[Turn]
    answer: ChatMessage | None

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def messages(self) -> list[Message]:
        return [message for turn in self.turns for message in turn.messages()]

    def calls_named(self, name: str) -> list[tuple[Turn, ToolCall]]:
        return [(turn, call) for turn in self.turns for call in turn.calls if call.name == name]


def planner_turn(rows: Sequence[ChatMessage], steps: Sequence[PlanStep] = ()) -> PlannerTurn:
    """Read a plan's `chat_messages` (assistant and tool rows) back into turns; the accepted
    plan's call and results take what their rows do not hold from its `steps`."""
    turns: list[Turn] = []
    answer: ChatMessage | None = None
    for row in rows:
        if row.role == "assistant" and row.tool_calls:
            planned = row.metadata.get(PLAN_STEPS)
            calls = [_call_from_wire(raw) for raw in row.tool_calls]
            calls = [_with_steps(call, steps) if call.id == planned else call for call in calls]
            kinds = {call.id: "tool" for call in calls}
            turns.append(Turn(row.content or None, row.reasoning_content, calls, kinds))
        elif row.role == "tool" and turns and row.tool_call_id is not None:
            kind = str(row.metadata.get("kind", "tool_result"))
            turns[-1].results[row.tool_call_id] = _as_sent(kind, row.content, steps)
            turns[-1].kinds[row.tool_call_id] = kind
        elif row.role == "assistant" and row.metadata.get("kind") == "answer":
            answer = row
    return PlannerTurn(turns, answer)


def _with_steps(call: ToolCall, steps: Sequence[PlanStep]) -> ToolCall:
    arguments = plan_arguments(dict(call.arguments), steps)
    return ToolCall.parse(id=call.id, name=call.name, arguments_json=json.dumps(arguments))


def _as_sent(kind: str, content: str, steps: Sequence[PlanStep]) -> str:
    """A planner tool row's content as the model is given it: a plan's results (read from its
    steps when the row does not hold them) come after the instruction to answer from them
    (`prompts.PLAN_RESULTS`), which is not stored with each (rows stored before it was not
    have it already)."""
    if kind != "plan_results" or content.startswith(PLAN_RESULTS):
        return content
    return f"{PLAN_RESULTS}\n\n{content or plan_results(steps)}"


def conversation_segments(rows: Sequence[ChatMessage]) -> list[Segment]:
    """Past turns as droppable segments: each request with the answer that followed it (and
    the answer's reasoning, which DeepSeek wants back whenever tools are offered).

    A past turn's tool calls are not replayed: its answer says what they found, and the turn
    reads to the model as one without tool calls. DeepSeek's rule binds the assistant messages
    a request carries — each carries its reasoning here — and docs/deepseek.md says why this
    compact replay is on its documented side."""
    segments: list[list[Message]] = []
    for row in rows:
        if row.role == "user" or not segments:
            segments.append([])
        message: Message = (
            UserMessage(row.content)
            if row.role == "user"
            else AssistantMessage(row.content, reasoning_content=row.reasoning_content)
        )
        segments[-1].append(message)
    return [Segment(tuple(messages)) for messages in segments]


# --- a step's thread ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThreadView:
    """A step agent's thread, as stored."""

    delegation: str
    turns: list[Turn]

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def segments(self) -> list[Segment]:
        """The delegation and the latest turn pinned; earlier turns droppable."""
        segments = [Segment((UserMessage(self.delegation),), pinned=True)]
        for index, turn in enumerate(self.turns):
            pinned = index == len(self.turns) - 1
            segments.append(Segment(tuple(turn.messages()), pinned=pinned))
        return segments

    def tool_results(self) -> list[str]:
        """Every result the agent has seen, oldest first (a timed-out step's partial output)."""
        return [result for turn in self.turns for result in turn.results.values()]


def thread_view(rows: Sequence[AgentMessage], *, agent_id: UUID) -> ThreadView:
    """Read a thread's rows back into the agent's conversation (see the module docstring)."""
    delegation = ""
    turns: list[Turn] = []
    for row in rows:
        own = row.sender_agent_id == agent_id
        if row.message_type == "delegation":
            delegation = row.content
        elif own and row.message_type == "status":
            turns.append(Turn(row.content, row.reasoning_content))
        elif own and row.message_type in OWN_CALL_ROWS and row.tool_call_id:
            if row.model is not None or not turns:  # a turn's first row carries its model
                turns.append(Turn(None, row.reasoning_content))
            call = _call_from_row(row)
            turns[-1].calls.append(call)
            if row.message_type == "tool_result":  # a call answered in its own row
                turns[-1].kinds[call.id] = "tool_call"
                turns[-1].results[call.id] = row.content
            else:
                turns[-1].kinds[call.id] = row.message_type
        elif row.message_type in RESULT_TYPES and row.tool_call_id and turns:
            turns[-1].results[row.tool_call_id] = row.content
    return ThreadView(delegation, turns)
