"""The OTLP collector: one package per stage a span goes through, wired together by ``service.Collector``.

    receive/   OTLP/gRPC and OTLP/HTTP in, the one ingest path, the HTTP API
    decode/    request bodies -> Arrow rows and marks (in decode worker processes)
    store/     the DuckDB writer: group commits, run and score writes, reading traces back
    assemble/  marks -> complete traces -> reconstructed agent runs (in the assembler process)
    score/     runs -> evaluations and span score write-backs; the LLM judge queue
    forward/   spans with their scores -> a downstream OTLP endpoint
    process/   helper processes: the supervisor, typed messages, process settings
    telemetry/ /metrics

At the top: ``service`` (the wiring), ``config`` (settings) and ``__main__`` (``agentotel-eval serve``, whose flags
are ``agentotel_eval.cli.serve``).
docs/architecture.md draws the path of one span through them.
"""
