"""Forward: spans and log records in, an OTLP endpoint downstream out, never blocking ingest (a bounded queue,
one sender thread, retries with backoff; what cannot be delivered is dropped and counted).
"""
