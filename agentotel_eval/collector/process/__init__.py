"""Helper processes: ``supervisor`` starts, watches and restarts one; ``channel`` and ``messages`` are what crosses
its socket pair (typed messages and raw frames); ``wire`` encodes records and Arrow tables for it; ``child`` is a
helper's entry point; ``tuning`` the process-wide settings every collector process applies to itself at start.
"""
