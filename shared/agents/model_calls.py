"""One agent's model calls: the prompt fitted to its budget, the checks before spending, tokens.

An `AgentRun` is who is acting (the `agents` row), for which plan, and which `agent_executions`
row pays. Every call goes through `call_model`, which first checks the plan's `Control` state
— as the statement just before the call returned it, or read now when none did: a cancel
request or a reached cost cap stops the agent here, before the request is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from shared.agents.accounting import check, read_control
from shared.agents.budget import FittedPrompt, Segment, fit_prompt
from shared.agents.quotes import Quotes
from shared.agents.replies import own_reply
from shared.db.records import Agent, Execution, Plan
from shared.db.transitions import Control
from shared.events import EventEmitter
from shared.kernel.text import storable
from shared.llm import (
    ChatRequest,
    Completed,
    Completion,
    ModelInfo,
    SystemMessage,
    TextDelta,
    ToolChoice,
    ToolSchema,
    UnexpectedReply,
    spans,
)
from shared.observability import tracing
from shared.tools import ToolDefinition

if TYPE_CHECKING:
    from shared.agents.ports import AgentServices
    from shared.kernel.settings import Settings


@dataclass(frozen=True, slots=True)
class AgentRun:
    """An agent at work on a plan: its row, where its calls are accounted, where events go."""

    services: AgentServices
    emitter: EventEmitter
    plan: Plan
    agent: Agent
    execution: Execution

    @property
    def model(self) -> ModelInfo:
        return self.services.models.lookup(self.agent.model)

    @property
    def budget(self) -> int:
        """The agent's token budget, never more than its model's context window allows."""
        return min(self.agent.token_budget, self.model.context_window)

    @property
    def thinking(self) -> bool | None:
        """The thinking mode to ask for (`requested_thinking`)."""
        return requested_thinking(self.services.settings, self.agent.role, self.model)

    @property
    def thinks(self) -> bool:
        """Whether the agent's calls run in thinking mode (replies carry reasoning, which is
        passed back on later requests that carry tools)."""
        return self.model.thinking if self.thinking is None else self.thinking

    @property
    def forced_choice(self) -> ToolChoice:
        """How a step's turn asks for a tool call (`forced_choice`)."""
        return forced_choice(thinks=self.thinks)


def requested_thinking(settings: Settings, role: str, model: ModelInfo) -> bool | None:
    """The thinking mode an agent asks for: its role's setting (`LLM_PLANNER_THINKING`,
    `LLM_EXECUTOR_THINKING`) where the model has a switch; None = the model's default."""
    mode = settings.llm_executor_thinking if role == "executor" else settings.llm_planner_thinking
    if mode == "auto" or not model.thinking_toggle:
        return None
    return mode == "enabled"


def forced_choice(*, thinks: bool) -> ToolChoice:
    """How a step's turn asks for a tool call: `required`, unless the agent thinks.

    DeepSeek's thinking mode refuses it ("`required` and named tool choices are not supported
    in thinking mode; the API returns a 400 error"): a thinking agent is asked with `auto`,
    and a turn in text alone is answered with a reminder to call a tool — a few in a row end
    the step (`step_loop.TEXT_TURNS`). Thinking is never switched off behind the settings'
    back: `LLM_PLANNER_THINKING` / `LLM_EXECUTOR_THINKING` decide."""
    return "auto" if thinks else "required"


def tool_schemas(definitions: Sequence[ToolDefinition]) -> list[ToolSchema]:
    """What the model is shown of the tools an agent may use."""
    return [ToolSchema(d.name, d.description, d.parameters) for d in definitions]


def build_request(
    run: AgentRun,
    *,
    system: str,
    segments: Sequence[Segment],
    tools: Sequence[ToolSchema] = (),
    tool_choice: ToolChoice = "auto",
    earlier: str | None = None,
) -> tuple[ChatRequest, FittedPrompt]:
    """The request for the agent's next call, its prompt kept within the agent's budget
    (`earlier`: what the caller already left out before `segments`, announced to the model)."""
    fitted = fit_prompt(
        system=SystemMessage(system),
        segments=segments,
        tools=tools,
        budget=run.budget,
        counter=run.services.tokens,
        thinking=run.thinks,
        earlier=earlier,
    )
    request = ChatRequest(
        run.agent.model,
        fitted.messages,
        tools=tuple(tools),
        tool_choice=tool_choice if tools else "auto",
        history="strict",
        thinking=run.thinking,
    )
    return request, fitted


async def call_model(
    run: AgentRun,
    request: ChatRequest,
    *,
    stream_text: bool,
    control: Control | None,
    quotes: Quotes | None = None,
) -> Completion:
    """Check the plan may go on (`control`: its state as the last statement returned it;
    None: read it now), then call the model (text streamed as `token` events).

    The reply comes back as Parley's (`replies.own_reply`): its own call ids, storable text —
    and with `quotes`, each `{{step N}}` in its text replaced by that step's result, in the
    streamed tokens as in the completion returned. With tracing on, the call is a GenAI span
    (`shared.llm.spans`: model, tokens, cache hits, finish reason; no text by default).
    """
    settings = run.services.settings
    current = control or await read_control(run.services.db, run.plan.id)
    check(current, cost_cap=settings.plan_max_cost_usd)
    if not tracing.enabled():
        return await _call(run, request, stream_text=stream_text, quotes=quotes)
    attributes = spans.request_attributes(
        request,
        base_url=settings.llm_base_url,
        session_id=run.plan.session_id,
        plan_id=run.plan.id,
        agent_name=run.agent.role,
        agent_id=run.agent.id,
    )
    with tracing.span(spans.span_name(request), kind="client", attributes=attributes) as span:
        completion = await _call(run, request, stream_text=stream_text, quotes=quotes)
        span.set_attributes(spans.completion_attributes(completion))
        if tracing.capture_content():
            span.set_attributes(spans.content_attributes(request, completion))
    return completion


async def _call(
    run: AgentRun, request: ChatRequest, *, stream_text: bool, quotes: Quotes | None
) -> Completion:
    if not stream_text:
        return _quoted(own_reply(await run.services.llm.complete(request)), quotes)
    completion: Completion | None = None
    async for event in run.services.llm.stream(request):
        if isinstance(event, TextDelta):
            text = storable(event.text)
            shown = quotes.feed(text) if quotes is not None else text
            await run.emitter.token(shown, plan_id=run.plan.id, agent_id=run.agent.id)
        elif isinstance(event, Completed):
            completion = event.completion
    if quotes is not None:
        await run.emitter.token(quotes.end(), plan_id=run.plan.id, agent_id=run.agent.id)
    await run.emitter.flush_tokens()
    if completion is None:
        raise UnexpectedReply("the stream ended without a completion", model=request.model)
    return _quoted(own_reply(completion), quotes)


def _quoted(completion: Completion, quotes: Quotes | None) -> Completion:
    """`completion` with its text's placeholders expanded (`quotes`), when there are any."""
    if quotes is None or completion.message.content is None:
        return completion
    expanded = quotes.expand(completion.message.content)
    return replace(completion, message=replace(completion.message, content=expanded))
