"""Tools agents can call: registry, permission guard, executor, built-ins, MCP as a source.

Used on its own, like this (the agent core instead reads the agent's row in the statement
that stores the model's calls and passes it to `ToolExecutor.execute_checked`, which decides
on that row and leaves the record of the check to its next statement: `shared.agents.tool_runs`)::

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

from typing import TYPE_CHECKING

from shared.kernel.lazy import lazy_exports

if TYPE_CHECKING:
    from shared.tools.builtin import (
        builtin_registry as builtin_registry,
    )
    from shared.tools.builtin import (
        builtin_tools as builtin_tools,
    )
    from shared.tools.calls import (
        CallContext as CallContext,
    )
    from shared.tools.calls import (
        ToolCall as ToolCall,
    )
    from shared.tools.executor import (
        ToolExecutor as ToolExecutor,
    )
    from shared.tools.permissions import (
        Decision as Decision,
    )
    from shared.tools.permissions import (
        decide as decide,
    )
    from shared.tools.permissions import (
        offered_tools as offered_tools,
    )
    from shared.tools.repeated_calls import (
        TurnCache as TurnCache,
    )
    from shared.tools.results import (
        ToolCallError as ToolCallError,
    )
    from shared.tools.results import (
        ToolErrorCode as ToolErrorCode,
    )
    from shared.tools.results import (
        ToolResult as ToolResult,
    )
    from shared.tools.schema import (
        JsonObject as JsonObject,
    )
    from shared.tools.tool_registry import (
        Access as Access,
    )
    from shared.tools.tool_registry import (
        DatabaseTool as DatabaseTool,
    )
    from shared.tools.tool_registry import (
        ExternalTool as ExternalTool,
    )
    from shared.tools.tool_registry import (
        Tool as Tool,
    )
    from shared.tools.tool_registry import (
        ToolDefinition as ToolDefinition,
    )
    from shared.tools.tool_registry import (
        ToolRegistry as ToolRegistry,
    )
    from shared.tools.values import (
        ToolArgs as ToolArgs,
    )
    from shared.tools.values import (
        ToolOutput as ToolOutput,
    )
    from shared.tools.values import (
        ZonedArgs as ZonedArgs,
    )

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "shared.tools.builtin": ("builtin_registry", "builtin_tools"),
        "shared.tools.calls": ("CallContext", "ToolCall"),
        "shared.tools.executor": ("ToolExecutor",),
        "shared.tools.permissions": ("Decision", "decide", "offered_tools"),
        "shared.tools.tool_registry": (
            "Access",
            "DatabaseTool",
            "ExternalTool",
            "Tool",
            "ToolDefinition",
            "ToolRegistry",
        ),
        "shared.tools.results": ("ToolCallError", "ToolErrorCode", "ToolResult"),
        "shared.tools.schema": ("JsonObject",),
        "shared.tools.repeated_calls": ("TurnCache",),
        "shared.tools.values": ("ToolArgs", "ToolOutput", "ZonedArgs"),
    },
)
