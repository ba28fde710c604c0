"""Helpers the tests share: real servers on loopback (collector, LLM stub, OTLP sink, lake and sink servers),
fixture traces and the small programs some tests start."""
