"""A helper that exits at once, before it is ready (``python -m tests.support.helper_exits FD``)."""

import sys

if __name__ == "__main__":
    sys.exit(3)
