"""Decode: request bodies in, ``IngestBatch`` out (the Arrow rows to append, the marks the assembler keeps,
and the records where they are still needed after the commit).

``batch.decode_request`` is the whole per-span work of ingest, pure; the decode workers run it in helper
processes (``pool``, on ``collector.process``), so the collector's own process, which holds the
DuckDB writer, does none.
"""
