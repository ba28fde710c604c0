"""What crosses between the collector's stages, and the helper processes some of them run in.

Between stages: ``marks`` (what the assembler keeps of each record, made by decode), ``ingest_batch`` (one
decoded request, from decode to the receivers, the store and the sinks), ``completed`` (a complete trace with
its runs, from assemble to score to the run rows, and the ``TraceStage`` interface). Helper processes:
``supervisor`` starts, watches and restarts one; ``channel`` and ``messages`` are what crosses its socket pair
(typed messages and raw frames); ``wire`` encodes records and Arrow tables for it; ``child`` is a helper's
entry point; ``tuning`` the process-wide settings every collector process applies to itself at start.
"""
