"""Tool calls that only a framework's log lines record.

Semantic Kernel without its sensitive-content diagnostics leaves the arguments off its ``execute_tool`` spans;
its kernel logs them instead, one INFO record per call on the enclosing span: ``Calling <plugin>-<function>
function with args: <JSON>``. Read only from that framework's own log scope.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.spans import Execution

_SCOPES = ("semantic_kernel",)
_CALLING = re.compile(r"^Calling (?P<name>\S+) function with args: (?P<args>\{.*\})\s*$", re.S)


def arguments_from_logs(executions: Sequence[Execution], ctx: TraceContext) -> None:
    """Fill the arguments of executions that record none from the log lines of their enclosing spans, each
    line used once, in time order, by tool name."""
    missing = [e for e in executions if e.raw_arguments is None]
    if not missing:
        return
    used: set[int] = set()
    for e in missing:
        parent = ctx.tree.parent(e.span)
        for log in ctx.logs(parent) if parent is not None else ():
            if id(log) in used or not log.scope_name.startswith(_SCOPES) or not isinstance(log.body, str):
                continue
            found = _CALLING.match(log.body)
            if found is None or found["name"] != e.name or log.timestamp_ns > e.span.end_ns:
                continue
            used.add(id(log))
            e.raw_arguments = found["args"]
            e.sources["arguments"] = "log"
            break
