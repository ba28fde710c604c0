"""The shared lake: what this node commits, copied for every node to read."""
