"""``python -m agentotel_eval.cli`` is ``agentotel-eval``."""

import sys

from agentotel_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
