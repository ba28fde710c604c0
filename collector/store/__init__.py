"""Store: the collector's writer side of DuckDB. Decoded batches and write operations in, commits out.

``database.Database`` holds the file (and reopens it now and then); ``writer.StoreWriter`` commits ingest in groups
and applies the other writes (``operations``: runs and scores, retention, judge answers) beside it; ``reader``
reads completed traces back for the assembler; ``runs`` turns completed traces into the run rows to write. The
schema, the read-only query layer and the row conversions stay in ``agentotel_eval.store``, which readers use.
"""
