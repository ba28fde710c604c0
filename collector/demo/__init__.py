"""``agentotel-eval demo``: a collector on free ports with a temporary database, scripted example agents whose
runs show each kind of tool-use mistake, their scores, and the web UI."""
