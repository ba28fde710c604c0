"""What people look at: the collector's web pages and the report file, rendered from stored runs.

Rendering only: what a page shows is read by the read side (``agentotel_eval.access.queries``, through the
sealed, read-only query layer, bound to a live collector's cursor or to a database file). ``timeline`` places
the called tools against the expected ones (lined up by ``agentotel_eval.metrics.alignment``); ``charts``
draws SVG; the ``*_view`` modules decide what each page shows, as plain data; ``render`` fills the Jinja2
templates of ``templates/`` with it (``templating``: every value escaped). Nothing here opens a socket or a
file: ``agentotel_eval.collector.ui`` serves the pages, ``agentotel-eval report`` writes them into one
self-contained file.
"""
