"""A helper that takes its setup and never says it is ready (``python -m tests.support.helper_silent FD``)."""

import time

if __name__ == "__main__":
    time.sleep(120)
