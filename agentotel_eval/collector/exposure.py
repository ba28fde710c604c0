"""Who can reach the listeners, and the TLS files they serve: the warnings a start logs when stored prompts
and tool results are open to other machines (no token), or the token travels in clear text
(no TLS off loopback)."""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path

from agentotel_eval.collector.config import TlsConfig

log = logging.getLogger("agentotel.collector")


def is_loopback(host: str) -> bool:
    """Whether a listener on ``host`` is reachable only from this machine (a wildcard bind is not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost


def tls_files(tls: TlsConfig) -> tuple[str, str]:
    """The TLS certificate and key, as absolute paths; empty without TLS."""
    if not tls.cert:
        return "", ""
    return str(Path(tls.cert).expanduser().resolve()), str(Path(tls.key).expanduser().resolve())


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def warn_if_exposed(
    http: tuple[str, int], grpc: tuple[str, int], *, authenticated: bool, tls: bool, db: Path
) -> None:
    """A listener other machines can reach, with no token, hands every stored prompt and tool result to them.
    ``http`` and ``grpc`` are each the configured host and the port bound."""
    (http_host, _), (grpc_host, _) = http, grpc
    http_where, grpc_where = _where(*http), _where(*grpc)
    if not authenticated:
        if not is_loopback(http_host):
            log.warning(
                "no auth token: anyone who can reach %s can write spans and read every stored prompt, "
                "tool argument and result through /v1/query and the web UI; set --auth-token or "
                "AGENTOTEL_AUTH_TOKEN",
                http_where,
            )
        if not is_loopback(grpc_host):
            log.warning(
                "no auth token: anyone who can reach %s (OTLP/gRPC) can write spans into %s; set "
                "--auth-token or AGENTOTEL_AUTH_TOKEN",
                grpc_where,
                db,
            )
    elif not tls and not (is_loopback(http_host) and is_loopback(grpc_host)):
        log.warning(
            "the auth token is sent in clear text to %s: anyone on the network path can read it; "
            "serve TLS with --tls-cert and --tls-key",
            " and ".join(
                w for h, w in ((http_host, http_where), (grpc_host, grpc_where)) if not is_loopback(h)
            ),
        )
