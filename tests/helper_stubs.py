"""Processes that a supervisor starts as helpers but that behave as no helper should (``python -m tests.helper_stubs
silent|exit FD``)."""

import sys
import time

if __name__ == "__main__":
    if sys.argv[1] == "silent":  # takes its setup and never says it is ready
        time.sleep(120)
    sys.exit(3)
