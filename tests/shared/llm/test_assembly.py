"""Tool-call deltas from servers that bend the OpenAI shape (no index, repeated names)."""

from __future__ import annotations

from shared.llm.assembly import ReplyAssembler


def test_deltas_without_index_follow_their_id_or_the_latest_call() -> None:
    assembler = ReplyAssembler()
    assembler.add_tool_call(None, id="a", name="search", arguments='{"q":')
    assembler.add_tool_call(None, id=None, name=None, arguments=' "x"}')
    assembler.add_tool_call(None, id="b", name="list", arguments="{}")
    assembler.add_tool_call(None, id="a", name="search", arguments="")

    calls = assembler.tool_calls()

    assert [(c.id, c.name, dict(c.arguments)) for c in calls] == [
        ("a", "search", {"q": "x"}),
        ("b", "list", {}),
    ]


def test_names_sent_whole_repeatedly_grown_or_split_come_out_once() -> None:
    assembler = ReplyAssembler()
    for index, pieces in enumerate(
        [["search", "search"], ["get_", "get_weather"], ["list_", "tasks"]]
    ):
        for piece in pieces:
            assembler.add_tool_call(index, id=f"c{index}", name=piece, arguments=None)

    names = [call.name for call in assembler.tool_calls()]

    assert names == ["search", "get_weather", "list_tasks"]


def test_a_call_without_id_or_name_is_kept_and_marked() -> None:
    assembler = ReplyAssembler()
    assembler.add_tool_call(0, id=None, name=None, arguments="[1, 2]")

    (call,) = assembler.tool_calls()

    assert call.id.startswith("call_") and not call.valid
    assert call.invalid_reason == "the model sent no function name"
    assert call.arguments_json == "[1, 2]"
