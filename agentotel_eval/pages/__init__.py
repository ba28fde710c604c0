"""What people look at: the collector's web pages and the report file, rendered from stored runs.

``data`` reads overview, runs and one run through a ``Read`` callable (the sealed, read-only query layer, bound to
a live collector's cursor or to a database file); ``alignment`` lines the called tools up against the expected
ones and ``timeline`` places them; ``charts`` draws SVG; the ``*_view`` modules decide what each page shows, as
plain data; ``render`` fills the Jinja2 templates of ``templates/`` with it (``templating``: every value escaped).
Nothing here opens a socket or a file: ``agentotel_eval.collector.ui`` serves the pages, ``agentotel-eval report``
writes them into one self-contained file.
"""
