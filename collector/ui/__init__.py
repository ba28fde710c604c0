"""The web UI on the collector's HTTP port: overview, runs and run pages, their two static files, and the small
JSON document the pages poll. In: a path and query string; out: a status, a content type and a body. Every page
reads through the sealed read-only query layer (``agentotel_eval.access.queries``)."""
