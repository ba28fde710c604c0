"""A helper process's side: its entry point.

``python -m MODULE FD`` (what ``supervisor.spawn`` runs) reads its ``Setup`` from the channel on FD, applies
it (log level, ``tuning``, nice value) and hands the channel to the helper's ``serve``, which says ``Ready``
once it takes messages. The collector decides when a helper stops (its ``Stop``, or its end of the channel
closing), so a Ctrl-C in the terminal or a service manager's SIGTERM to the whole process group does not cut a
helper's work short.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection

from agentotel_eval.collector.process.channel import Channel
from agentotel_eval.collector.process.messages import Setup
from agentotel_eval.collector.process.tuning import Tuning, tune_process


def helper_main(name: str, serve: Callable[[Channel, Setup], None], argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    channel = Channel(Connection(int(args[0])))
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    try:
        setup, _ = channel.receive()
        if not isinstance(setup, Setup):
            raise RuntimeError(f"expected the setup first, got {type(setup).__name__}")
        logging.basicConfig(
            level=setup.log_level,
            stream=sys.stderr,
            format=f"%(asctime)s %(levelname)s agentotel {name}: %(message)s",
        )
        tune_process(Tuning(*setup.tuning))
        if setup.nice:
            os.nice(setup.nice)
        serve(channel, setup)
    finally:
        channel.close()
    return 0
