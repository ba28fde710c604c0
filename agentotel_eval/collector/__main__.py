"""``python -m agentotel_eval.collector`` is ``agentotel-eval serve``."""

import sys

from agentotel_eval.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
