"""Tool-call reconstruction: spans of any convention -> agent runs -> ordered tool calls."""
