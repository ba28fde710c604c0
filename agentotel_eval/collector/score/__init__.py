"""Score: completed traces in, the same traces with their evaluation rows and span score write-backs out.

``stage.ScoringStage`` finds each run's expectation (``expectations``), runs the deterministic metrics and
queues the LLM judge as a ``pending`` row when ``judge_policy`` says so; ``judge_worker`` answers pending rows
in the background, from the database. Its settings (``[scoring]``, ``[judge]``, ``[[expectations]]``) are the
collector's ``config_scoring`` and ``expectations``; re-scoring stored runs is ``collector.pipeline.rescore``.
"""
