"""OTLP/HTTP and the collector's HTTP API and pages: Starlette routes (``otlp``, ``api``, ``ops``, the UI's in
``agentotel_eval.collector.ui``) assembled by ``app`` and served by ``server`` on uvicorn's HTTP protocol."""
