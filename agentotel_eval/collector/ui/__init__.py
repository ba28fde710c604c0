"""The web UI on the collector's HTTP port: the overview, runs and run pages, their two static files, the
small JSON document the pages poll (``routes``), and signing in when the collector requires a token
(``sign_in``). Every page reads through the sealed read-only query layer (``agentotel_eval.access.queries``)
and is rendered by ``agentotel_eval.pages``. ``web.WebUi`` is what an HTTP listener serves of it (the
node's, the lake's)."""
