"""Store: the collector's writer side of DuckDB. Decoded batches and write operations in, commits out.

``database.Database`` holds the file (and reopens it now and then); ``writer.StoreWriter`` commits ingest in
groups (``idempotent_append``), with its ``operation_queue`` applying the other writes (``operations``: runs
and scores, retention, judge answers) beside it and its ``reopen_policy`` saying when the file is reopened;
``reader`` reads completed traces back for the assembler; ``runs`` turns completed traces into the run rows to
write (and those rows into frames for the assembler process). Every stage may write through the store; it
imports none of them. The schema, the read-only query layer and the row conversions stay in
``agentotel_eval.store``, which readers use.
"""
