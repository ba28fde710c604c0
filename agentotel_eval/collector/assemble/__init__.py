"""Assemble: the marks of committed records in, ``CompletedTrace`` batches out (a trace's spans, logs and
rebuilt agent runs), once each trace is complete.

``trace_buffer`` decides when a trace is complete (pure, clock passed in) from the marks (``process.marks``);
``assembler`` reads the complete traces back, reconstructs their runs and hands them to the next stage
(``process.completed.TraceStage``); ``later_results`` folds in results that arrive after their run. Where it
runs (a thread, the assembler process) is ``collector.pipeline``'s.
"""
