"""A tiny stdio MCP server for the MCP tool-source tests: `python mcp_echo_server.py`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo")


@server.tool()
def echo(text: str, times: int = 1) -> str:
    """Repeat the text (reads nothing, writes nothing)."""
    return " ".join([text] * times)


@server.tool()
def shout(text: str) -> str:
    """Upper-case the text (not declared read-only in the tests' configuration)."""
    return text.upper()


calls: dict[str, int] = {}


@server.tool()
def tally(label: str) -> int:
    """Count the calls made with this label (a write with an effect tests can see)."""
    calls[label] = calls.get(label, 0) + 1
    return calls[label]


@server.tool()
def refuse(reason: str) -> str:
    """Always fail with the given reason."""
    raise ToolError(f"refused: {reason}")


if __name__ == "__main__":
    server.run()
