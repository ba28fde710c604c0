"""Instrumentation for plain Python agents: ``@traced`` and ``configure()``."""
