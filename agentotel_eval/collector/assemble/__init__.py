"""Assemble: the marks of committed records in, ``CompletedTrace`` batches out (a trace's spans, logs and rebuilt
agent runs), once each trace is complete.

``trace_buffer`` decides when a trace is complete (pure, clock passed in) from ``marks``; ``assembler`` reads the
complete traces back, reconstructs their runs and hands them to the next stage (``completed.TraceStage``). The
stage runs on a thread of the collector (``assembly.LocalAssembly``) or in a helper process (``helper_proxy`` on the
collector's side, ``worker`` on the helper's), behind one interface (``assembly.AssemblyStage``).
"""
