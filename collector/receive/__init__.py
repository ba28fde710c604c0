"""Receive: OTLP export requests in (gRPC on :4317, HTTP on :4318), their answers out.

Both receivers hand a request body to the one ingest path (``ingest.Ingestor``): decoded by ``agentotel_eval.collector.decode``,
committed by ``agentotel_eval.collector.store``, answered only once committed. The HTTP server also serves the collector's API
(``/v1/query``, ``/healthz``, ``/metrics``). Errors know their answer (``errors``); bodies are read and inflated
under a size limit (``body``).
"""
