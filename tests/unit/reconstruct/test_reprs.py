"""Framework reprs read as data, never evaluated."""

from __future__ import annotations

from agentotel_eval.reconstruct.reprs import ReprResult, parse_call_repr, parse_result_reprs


def test_tool_call_results_inside_a_message_repr_that_python_cannot_parse():
    text = (
        "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result='f(x) = \"(1, 2)\"', "
        "origin=ToolCall(tool_name='calc', arguments={'expr': 'f(x)', 'n': 2}, id='c1', extra=None), "
        "error=False), ToolCallResult(result='boom', origin=ToolCall(tool_name='calc', arguments={}, "
        "id=None), error=True)], _name=None)"
    )
    assert parse_result_reprs(text) == [
        ReprResult("calc", {"expr": "f(x)", "n": 2}, "c1", 'f(x) = "(1, 2)"', False),
        ReprResult("calc", {}, None, "boom", True),
    ]


def test_a_cut_or_foreign_text_gives_no_result_and_runs_nothing():
    assert parse_result_reprs("ToolCallResult(result='half") == []
    assert parse_result_reprs("ToolCallResult(result=__import__('os').system('true'), error=True)") == [
        ReprResult(None, None, None, None, True)
    ]
    assert parse_result_reprs({"not": "text"}) == []
    assert parse_call_repr("ToolCall(tool_name='x', tool_kwargs={'a': 1}, tool_id='c')").arguments == {"a": 1}
