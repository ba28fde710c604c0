"""A listening address checked before anything is created: a start that cannot bind its ports must not leave a
database file and its lock behind, and says in one line which port is taken."""

from __future__ import annotations

import errno
import socket


class PortInUse(OSError):
    """The port another process listens on; the message is the one line a person reads."""


def in_use_message(port: int, what: str, host: str, flag: str) -> str:
    return (
        f"port {port} is in use: cannot listen for {what} on {host}:{port} (another collector? choose "
        f"another address with --{flag} HOST:PORT)"
    )


def check_free(host: str, port: int, what: str, flag: str) -> None:
    """Raise ``PortInUse`` when ``host:port`` cannot be bound now (port 0, any free port, always can). The
    port is bound as the servers bind it (``SO_REUSEADDR``: a port in TIME_WAIT is free, one being listened on
    is not) and released at once."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(in_use_message(port, what, host, flag)) from None
            raise OSError(f"cannot listen for {what} on {host}:{port}: {exc.strerror}") from None
