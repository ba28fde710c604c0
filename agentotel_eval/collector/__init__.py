"""The OTLP collector: one package per stage a span goes through, each a component that imports no other
stage, wired together by ``service.Collector`` (the layers are a contract in ``.importlinter``).

    receive/   OTLP/gRPC and OTLP/HTTP in, the one ingest path, the HTTP API
    decode/    request bodies -> Arrow rows and marks (in decode worker processes)
    assemble/  marks -> complete traces -> reconstructed agent runs
    score/     runs -> evaluations and span score write-backs; the LLM judge queue
    forward/   spans with their scores -> a downstream OTLP endpoint
    store/     the DuckDB writer every stage writes through: group commits, run and score writes, reading back
    ui/        the web UI, on receive's HTTP listener
    sink/      committed evaluations -> Phoenix, MLflow, Langfuse (spans through forward's exporter)
    pipeline/  assemble -> score -> run rows joined: on a thread, in the assembler process,
               or over stored runs
    lake/      the node's part of a shared DuckLake
    process/   what crosses between stages (marks, ingest batches, completed traces, typed messages) and the
               helper processes: the supervisor, channels, process settings
    telemetry/ the shared parts of /metrics; each stage's own collector is its ``telemetry`` module

Shared settings: ``config`` (``CollectorConfig``), ``config_scoring``, ``config_sinks``, ``config_forward``,
``expectations``, validated by ``config_validation``. At the top: ``service`` (the wiring), beside it
``after_commit``, ``health``, ``prometheus_registry`` and ``housekeeping``, and ``__main__`` (``agentotel-eval
serve``, whose flags are ``agentotel_eval.cli.serve``). docs/architecture.md draws the path of
one span through them.
"""
