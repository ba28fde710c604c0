"""``GET /metrics``: every component registers its own Prometheus collector (its package's ``metrics`` module)
in the service's registry, read at scrape time; ``families`` builds their metric families."""
