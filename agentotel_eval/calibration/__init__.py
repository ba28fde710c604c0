"""Labelled tool-use error suites and the figures the detectors (and the judge) reach on them.

Suites are built by mutation from data on the package index (BFCL's function-calling cases, τ²-bench's
golden actions), or read from a user's own labelled traces (TRAIL, MAST). Each case is turned into OTLP spans
of a real convention and goes through trace reconstruction and the detectors exactly as a collected run does.
"""
