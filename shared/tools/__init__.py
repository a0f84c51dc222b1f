"""Tools agents can call: registry, permission guard, executor, built-ins, MCP as a source.

The agent core uses it like this::

    registry = builtin_registry()                 # + MCP tools: registry.add(tool) for each
    executor = ToolExecutor(db, registry, timeout_seconds=settings.tool_timeout_seconds)
    definitions = offered_tools(agent_row, registry)          # what the LLM is shown
    turn = TurnCache()                                        # one per agent turn
    result = await executor.execute(
        ToolCall(id=call_id, name=name, arguments=raw_json),
        context=CallContext(agent_id=..., user_id=..., thread=..., execution_id=...),
        turn=turn,
    )
    tool_message_content = result.content()

`shared.tools.mcp_source.McpSource` (imported on its own: it pulls in the MCP SDK) connects
the servers of `Settings.mcp_servers` and yields their tools as `ExternalTool`s.
"""

from shared.tools.builtin import builtin_registry, builtin_tools
from shared.tools.calls import CallContext, ToolCall
from shared.tools.executor import ToolExecutor
from shared.tools.permissions import Decision, decide, offered_tools
from shared.tools.registry import (
    Access,
    DatabaseTool,
    ExternalTool,
    Tool,
    ToolDefinition,
    ToolRegistry,
)
from shared.tools.results import ToolCallError, ToolErrorCode, ToolResult
from shared.tools.schema import JsonObject
from shared.tools.turns import TurnCache
from shared.tools.values import ToolArgs, ToolOutput, ZonedArgs

__all__ = [
    "Access",
    "CallContext",
    "DatabaseTool",
    "Decision",
    "ExternalTool",
    "JsonObject",
    "Tool",
    "ToolArgs",
    "ToolCall",
    "ToolCallError",
    "ToolDefinition",
    "ToolErrorCode",
    "ToolExecutor",
    "ToolOutput",
    "ToolRegistry",
    "ToolResult",
    "TurnCache",
    "ZonedArgs",
    "builtin_registry",
    "builtin_tools",
    "decide",
    "offered_tools",
]
