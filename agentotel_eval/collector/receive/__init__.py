"""Receive: OTLP export requests in (gRPC on :4317, HTTP on :4318), their answers out.

Both receivers hand a request body to the one ingest path (``ingest.Ingestor``): decoded by
the decoder the service wires in (``agentotel_eval.collector.decode``), committed by
``agentotel_eval.collector.store``, answered only once committed.
``grpc`` serves the two Export services; ``http`` is the HTTP edge (OTLP/HTTP, the JSON API, health, metrics
and the web UI, on Starlette and uvicorn's HTTP protocol); ``auth`` is the bearer token for both. Errors know
their answer (``errors``).
"""
