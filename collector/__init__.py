"""The agentotel-eval collector: OTLP receivers, the trace assembler, scoring and DuckDB storage."""
