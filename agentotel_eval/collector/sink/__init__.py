"""Sink: committed evaluations out, each tool's own evaluation object in Arize Phoenix, MLflow or Langfuse.

``feed.EvaluationFeed`` takes what the writer committed (run rows, the judge's answers, a re-score's rows)
from the service's after-commit hooks without ever making them wait, turns it into plain
``records.SinkEvaluation`` on a thread of its own, counts it for ``/metrics``
(``agentotel_evaluations_total``, ``agentotel_tool_errors_total``) and hands it to each configured sink. A
sink (``worker.SinkWorker``) keeps a bounded queue keyed by (run, metric), so a re-score replaces what is
still waiting and the tool's own upsert replaces what was sent; it sends batches with retries and backoff, and
counts and logs (once per interval) what it has to drop. The run's spans reach the tool over its OTLP endpoint
through the forwarder (``agentotel_eval.collector.forward``). ``phoenix``, ``mlflow`` and ``langfuse`` hold
each tool's mapping (pure) and its REST calls; ``hub.SinkHub`` is what the service wires.
"""
