"""Telemetry: the collector's own counters and gauges out, as ``GET /metrics`` (``prometheus``, read at scrape
time from each stage's counters).
"""
