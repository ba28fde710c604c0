"""DuckDB storage: schema and migrations, the batched single writer, read-only queries."""
