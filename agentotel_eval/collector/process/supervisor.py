"""The one way the collector runs a helper process: spawn it, hand it its setup, wait for it to be ready,
watch it, and start it again with a bounded backoff when it dies.

A helper is ``python -m MODULE FD``, FD its end of a private socket pair (``child.helper_main`` on its side).
Messages it sends go to the stage's ``on_message`` with the channel they came on (a reply goes back on it), on
the supervisor's receiving thread, from the moment it starts (a helper may ask things before it is ready: the
assembler's recovery reads the database). When it dies,
``on_exit`` tells the stage (which fails what the helper held), and a new one is started: at once after a
helper that ran ``stable_after`` seconds, else after a delay that doubles up to ``max_delay``; after
``give_up_after`` deaths in a row, ``on_give_up``. A send that makes no headway by its deadline means the
helper stopped reading: the watchdog stops it, and it is started again the same way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import agentotel_eval
from agentotel_eval.collector.process.channel import Channel, ChannelBusy, ChannelClosed
from agentotel_eval.collector.process.messages import Message, Ready, Setup, Stop, Stopped

log = logging.getLogger(__name__)

#: how often the watchdog looks for a send that a helper has stopped taking
WATCH_INTERVAL = 0.5


class HelperUnavailable(RuntimeError):
    """The helper cannot take a message now (starting, restarting, stopping, given up): try again later."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    #: the wait before the first restart after a death, doubled for each death in a row, up to ``max_delay``
    first_delay: float = 0.2
    max_delay: float = 5.0
    #: a helper that ran this long before it died starts a new count of deaths in a row
    stable_after: float = 30.0
    #: deaths in a row before the supervisor gives up (None: never)
    give_up_after: int | None = None

    def delay(self, deaths_in_row: int) -> float:
        return min(self.first_delay * 2 ** max(deaths_in_row - 1, 0), self.max_delay)


def spawn(module: str) -> tuple[subprocess.Popen[bytes], Connection]:
    """``python -m MODULE FD`` with FD its end of a new socket pair; the process and our end. The child gets
    no stdin and the collector's stderr; ``PYTHONPATH`` names the directory ``agentotel_eval`` is imported
    from, so an uninstalled checkout runs the same code."""
    try:
        ours, theirs = socket.socketpair()
    except OSError as exc:  # out of file descriptors, say
        raise HelperUnavailable(f"could not start {module}: {exc}") from exc
    env = dict(os.environ)
    root = str(Path(agentotel_eval.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except OSError as exc:
        ours.close()
        raise HelperUnavailable(f"could not start {module}: {exc}") from exc
    finally:
        theirs.close()
    return proc, Connection(ours.detach())


class Supervisor:
    """One helper process (see the module docstring). ``start``/``stop`` are called once each; ``send`` from
    any thread."""

    def __init__(
        self,
        name: str,
        module: str,
        setup: Setup,
        on_message: Callable[[Message, list[bytes], Channel], None],
        *,
        on_exit: Callable[[int | None], None] | None = None,
        on_give_up: Callable[[], None] | None = None,
        policy: RestartPolicy = RestartPolicy(),
        start_timeout: float = 60.0,
    ) -> None:
        self.name = name
        self._module = module
        self._setup = setup
        self._on_message = on_message
        self._on_exit = on_exit
        self._on_give_up = on_give_up
        self.policy = policy
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._channel: Channel | None = None
        #: the current helper said Ready
        self._ready = threading.Event()
        #: no helper is started any more: the stage is stopping
        self._stop_asked = threading.Event()
        self._restarting = False
        #: set once no helper runs and none will: after ``stop``, or when the supervisor gave up
        self.finished = threading.Event()
        self._spawned_at = 0.0
        self._deaths_in_row = 0
        #: processes started so far; a stage tells by it whether the helper it sent to is still the same one
        self.generation = 0
        self.restarts = 0
        self.gave_up = False

    # ---- what the stage reads ------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The helper's process id: the running one's, else the last one's (None before the first start)."""
        proc = self._proc
        return proc.pid if proc is not None else None

    @property
    def alive(self) -> bool:
        """Started, ready, and not known to have exited."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    # ---- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the helper and wait until it is ready (``HelperUnavailable`` if it is not, in time)."""
        try:
            self._spawn()
        except HelperUnavailable:
            self.finished.set()
            raise
        threading.Thread(target=self._watch, name=f"agentotel-{self.name}-watchdog", daemon=True).start()

    def stop_restarting(self) -> None:
        """From now on a helper that exits is not started again (its stage is finishing its work with it)."""
        with self._lock:
            self._stop_asked.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Tell the helper to finish what it holds and exit, and wait for it; stop it at ``timeout``."""
        self.ask_to_stop(timeout)
        self.wait_stopped(timeout)

    def ask_to_stop(self, timeout: float = 5.0) -> None:
        """Send the helper ``Stop`` (no restart follows); ``wait_stopped`` waits for it to exit."""
        with self._lock:
            self._stop_asked.set()
            channel, restarting = self._channel, self._restarting
        if channel is None:
            if not restarting:  # never started, or its start failed: nothing runs
                self.finished.set()
            return  # a restart under way sees the request and starts nothing
        with contextlib.suppress(ChannelBusy, ChannelClosed):  # stuck or gone: the wait ends it
            channel.send(Stop(), timeout=timeout, stuck_after=timeout)

    def wait_stopped(self, timeout: float) -> None:
        if self.finished.wait(timeout):
            return
        log.error("the %s process did not stop within %gs; stopping it", self.name, timeout)
        self.kill()
        self.finished.wait(5.0)

    def kill(self, generation: int | None = None) -> None:
        """Stop the helper at once (it is stuck); it is started again as after any death. With ``generation``,
        only if it is still that one (a restart in between leaves the new one alone)."""
        with self._lock:
            if generation is not None and generation != self.generation:
                return
            proc, channel = self._proc, self._channel
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()
        if channel is not None:
            channel.hang_up()

    # ---- messages ------------------------------------------------------------------------------------------

    def send(
        self,
        message: Message,
        frames: Sequence[Any] = (),
        *,
        timeout: float | None = None,
        stuck_after: float | None = None,
    ) -> None:
        """Send to the running helper; ``HelperUnavailable`` when there is none, when the channel stays busy
        past ``timeout``, or when the helper goes away meanwhile. ``stuck_after``: a send that has not gone
        out by then means the helper stopped reading, and the watchdog stops it."""
        channel = self._channel if self._ready.is_set() else None
        if channel is None:
            raise HelperUnavailable(self._absent())
        try:
            channel.send(message, frames, timeout=timeout, stuck_after=stuck_after)
        except ChannelBusy:
            raise HelperUnavailable(
                f"the {self.name} process did not take the message within {timeout:g}s"
            ) from None
        except ChannelClosed:
            raise HelperUnavailable(f"the {self.name} process is gone; try again") from None

    def _absent(self) -> str:
        if self.gave_up:
            return f"the {self.name} process kept dying and is no longer started"
        if self._stop_asked.is_set():
            return "the collector is stopping"
        return f"no {self.name} process is running (one is being started)"

    # ---- the process ---------------------------------------------------------------------------------------

    def _spawn(self) -> None:
        proc, conn = spawn(self._module)
        channel = Channel(conn)
        ready = threading.Event()  # this helper said Ready
        gone = threading.Event()  # this helper exited before it was ready
        try:
            channel.send(self._setup)
        except ChannelClosed as exc:
            channel.close()
            proc.kill()
            proc.wait()
            raise HelperUnavailable(
                f"the {self.name} process exited while starting (code {proc.poll()})"
            ) from exc
        with self._lock:
            stopping = self._stop_asked.is_set()
            if not stopping:
                self._proc, self._channel = proc, channel
                self._spawned_at = time.monotonic()
                self.generation += 1
        if stopping:  # asked to stop while this one started: it never gets a message
            proc.kill()
            channel.close()
            proc.wait()
            raise HelperUnavailable("the collector is stopping")
        threading.Thread(
            target=self._receive,
            args=(channel, proc, ready, gone),
            name=f"agentotel-{self.name}-recv",
            daemon=True,
        ).start()
        deadline = time.monotonic() + self._start_timeout
        while not ready.wait(0.05):
            if gone.is_set() or time.monotonic() > deadline:
                break
        else:
            return
        with self._lock:  # given up on: its receiving thread must not take its exit for a death to restart
            if self._channel is channel:
                self._channel = None
                self._ready.clear()
        proc.kill()
        channel.hang_up()
        code = proc.wait()
        if gone.is_set():
            raise HelperUnavailable(f"the {self.name} process exited while starting (code {code})")
        raise HelperUnavailable(f"the {self.name} process did not start within {self._start_timeout:g}s")

    def _receive(
        self, channel: Channel, proc: subprocess.Popen[bytes], ready: threading.Event, gone: threading.Event
    ) -> None:
        stopped = False
        while True:
            try:
                message, frames = channel.receive()
            except ChannelClosed:
                break
            except ValueError:  # not one of our messages: the helper is broken
                log.exception("unreadable message from the %s process; stopping it", self.name)
                proc.kill()
                break
            if isinstance(message, Ready):
                with self._lock:
                    if self._channel is channel:  # else its start was given up on
                        ready.set()
                        self._ready.set()
            elif isinstance(message, Stopped):
                stopped = True  # it exits next
            else:
                try:
                    self._on_message(message, frames, channel)
                except Exception:
                    log.exception("handling %s from the %s process failed", type(message).__name__, self.name)
        channel.close()
        code = proc.wait()
        if (
            not ready.is_set()
        ):  # a start that failed: the start reports it (and tries again, when it is a restart)
            gone.set()
            return
        with self._lock:
            current = self._channel is channel
            if current:
                self._channel = None
                self._ready.clear()
        if not current:
            return
        if self._on_exit is not None:
            try:
                self._on_exit(code)
            except Exception:
                log.exception("the %s exit handler failed", self.name)
        if self._stop_asked.is_set():
            if not stopped:
                log.error("the %s process exited (code %s) before it had finished", self.name, code)
            self.finished.set()
            return
        self._restart(code)

    def _restart(self, code: int | None) -> None:
        with self._lock:
            self._restarting = True
        try:
            while True:
                if (
                    time.monotonic() - self._spawned_at > self.policy.stable_after
                ):  # the last one ran long enough
                    self._deaths_in_row = 0
                self._deaths_in_row += 1
                limit = self.policy.give_up_after
                if limit is not None and self._deaths_in_row > limit:
                    self.gave_up = True
                    log.error(
                        "the %s process exited (code %s) %d times in a row; it is not started again",
                        self.name,
                        code,
                        self._deaths_in_row,
                    )
                    if self._on_give_up is not None:
                        self._on_give_up()
                    self.finished.set()
                    return
                log.error("the %s process exited unexpectedly (code %s); starting a new one", self.name, code)
                if self._stop_asked.wait(self.policy.delay(self._deaths_in_row)):
                    self.finished.set()
                    return
                self.restarts += 1
                try:
                    self._spawn()
                except HelperUnavailable as exc:
                    if self._stop_asked.is_set():
                        self.finished.set()
                        return
                    log.error("could not start the %s process (%s); trying again", self.name, exc)
                    code = None
                    continue
                return
        finally:
            with self._lock:
                self._restarting = False

    def _watch(self) -> None:
        """Stop a helper whose send has passed its deadline: one that stopped reading would otherwise hold its
        sender, and every message queued behind it, forever."""
        while not self.finished.wait(WATCH_INTERVAL):
            with self._lock:
                channel, generation = self._channel, self.generation
            deadline = channel.send_deadline if channel is not None else 0.0
            if deadline and time.monotonic() > deadline:
                log.error("the %s process stopped taking messages; stopping it", self.name)
                self.kill(generation)
