"""Where assembly and scoring run: in the assembler process (``[assembler] process``), or on a thread of the
collector when configured so or when callables are hooked in (a test's stages or reconstruction stay in this
process)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentotel_eval.collector.assemble.assembler import Reconstruct
from agentotel_eval.collector.config import CollectorConfig
from agentotel_eval.collector.pipeline.assembly import AssemblyStage, LocalAssembly, StageFactory
from agentotel_eval.collector.pipeline.helper_proxy import ProcessAssembly
from agentotel_eval.collector.process.tuning import Tuning
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.collector.store.runs import RunWriter
from agentotel_eval.otlp.records import SpanRecord


def runs_in_process(
    config: CollectorConfig, stages: Sequence[StageFactory], reconstruct: Reconstruct | None
) -> bool:
    """Whether assembly runs on a thread of the collector rather than in the assembler process."""
    return not config.assembler.process or bool(stages) or reconstruct is not None


def assembly_for(
    config: CollectorConfig,
    reader: TraceReader,
    run_writer: RunWriter,
    *,
    forward: Callable[[Sequence[SpanRecord]], None] | None,
    tuning: Tuning,
    stages: Sequence[StageFactory] = (),
    reconstruct: Reconstruct | None = None,
) -> AssemblyStage:
    """The assembly stage (not started): it reads traces with ``reader``, writes runs with ``run_writer`` and
    hands completed spans to ``forward``."""
    if runs_in_process(config, stages, reconstruct):
        return LocalAssembly(
            config.assembler,
            config.scoring_config(),
            reader,
            run_writer,
            forward=forward,
            stages=stages,
            reconstruct=reconstruct,
            conventions=config.conventions,
            text_failures=config.reconstruction.text_failures,
        )
    return ProcessAssembly(
        config.assembler,
        config.scoring_config(),
        reader,
        run_writer,
        forward=forward,
        tuning=tuning,
        conventions=config.conventions,
        text_failures=config.reconstruction.text_failures,
    )
