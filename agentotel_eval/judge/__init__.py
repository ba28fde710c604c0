"""The LLM judge layer: model strings, litellm calls, custom clients, JSON repair, cache and cost."""
