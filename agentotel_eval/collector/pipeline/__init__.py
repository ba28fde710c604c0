"""Pipeline: assembly, scoring and the run rows joined, wherever they run.

``assembly.AssemblyStage`` is what the service hands each commit's marks to: ``assembly.LocalAssembly`` runs
the assembler, the scoring stage and the run writer on a thread of the collector;
``helper_proxy.ProcessAssembly`` (on the collector's side) and ``worker`` (in the helper) run them in the
assembler process. ``rescore`` runs the same over stored runs. ``telemetry`` is their ``/metrics``.
"""
