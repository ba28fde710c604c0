"""The read side: what the pages, the report and the commands read from a collector's database.

``client`` runs one sealed read-only query through the running collector that holds the database (found
through ``discovery``'s file beside it), else on the file read-only. ``queries`` holds the domain queries over
a ``Read`` callable: latest evaluations, the overview, the runs table, one run, the worst runs, a trace to
explain, the runs ``export-cases`` writes and the scored runs ``compare`` compares. ``filters`` is the
selection a page or the report asks for; ``specs`` compiles a ``compare`` SPEC. Heavy modules (duckdb) load
only when a query runs.
"""
