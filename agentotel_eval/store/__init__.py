"""DuckDB storage: schema and migrations, the batched single writer, read-only queries.

Heavy modules (duckdb, pyarrow) load only when a submodule is imported, so the CLI stays quick to start.
"""

#: Where ``serve`` and ``query`` look when no ``--db`` is given (relative to the working directory).
DEFAULT_DB_PATH = "agentotel.duckdb"
