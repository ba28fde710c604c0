"""Example agents: small travel agents traced with ``@traced`` whose scripted runs show each kind of tool-use
mistake. ``agentotel-eval demo`` runs them against a collector and prints their scores."""
