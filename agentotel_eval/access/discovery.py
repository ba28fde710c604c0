"""How ``agentotel-eval query`` finds a collector that holds the database: a small file next to it.

A running collector writes ``<db>.collector.json`` (its pid, HTTP address and a random token) once it listens, and
removes it when it stops. A reader trusts the file only if the pid is alive AND ``GET /healthz`` at that address
answers with the same token: a file left behind by a killed collector, or a port reused by another process, is
recognised as stale.

A collector serving TLS records it (``scheme`` https and its certificate file); a client then connects with https
and trusts that certificate alone (``client_ssl_context``). A collector that requires a token is sent the one in
``AGENTOTEL_AUTH_TOKEN`` (``auth_headers``); ``GET /healthz`` needs none.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # ssl and urllib load when a client connects: every command's start reads AUTH_TOKEN_ENV
    import ssl

SUFFIX = ".collector.json"
#: the collector's bearer token, for the server and for every command that talks to it
AUTH_TOKEN_ENV = "AGENTOTEL_AUTH_TOKEN"


def sidecar_path(db_path: str | Path) -> Path:
    return Path(f"{Path(db_path)}{SUFFIX}")


def new_token() -> str:
    return secrets.token_hex(8)


@dataclass(frozen=True, slots=True)
class CollectorInfo:
    pid: int
    http: str  # host:port a client can connect to
    db: str
    token: str
    grpc: str = ""
    started_at: str = ""
    #: "https" when the collector serves TLS (older collectors' files have no such field: http)
    scheme: str = "http"
    #: the TLS certificate file the collector serves, which its clients trust (pinned); "" without TLS
    cert: str = ""

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.http}"


def auth_token() -> str:
    """The collector's bearer token for a client: ``AGENTOTEL_AUTH_TOKEN``, or ""."""
    return os.environ.get(AUTH_TOKEN_ENV, "").strip()


def auth_headers() -> dict[str, str]:
    token = auth_token()
    return {"Authorization": f"Bearer {token}"} if token else {}


def unauthorized_message(base_url: str) -> str:
    """What a command says when the collector answered 401."""
    if auth_token():
        return f"the collector at {base_url} refused the token in {AUTH_TOKEN_ENV}: it is not the collector's token"
    return f"the collector at {base_url} requires a token: set {AUTH_TOKEN_ENV}"


def client_ssl_context(cert: str) -> ssl.SSLContext:
    """A client context that trusts exactly the collector's own certificate file (pinned, even if self-signed and
    not a CA: ``VERIFY_X509_PARTIAL_CHAIN``). The host name is not checked: clients connect to the address the
    collector wrote, often a loopback address its certificate need not name."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=cert)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context


def open_collector(info: CollectorInfo, path: str, *, data: bytes | None = None, timeout: float = 30.0,
                   headers: dict[str, str] | None = None) -> IO[bytes]:
    """A request to the collector, the way it asks to be reached (https and its certificate, the token if set);
    raises ``urllib.error.HTTPError`` for an error status and ``OSError`` when it cannot be reached."""
    import urllib.request

    all_headers = {**(headers or {}), **auth_headers()}
    request = urllib.request.Request(f"{info.base_url}{path}", data=data, headers=all_headers,
                                     method="POST" if data is not None else "GET")
    context = client_ssl_context(info.cert) if info.scheme == "https" else None
    response: IO[bytes] = urllib.request.urlopen(request, timeout=timeout, context=context)
    return response


def client_address(host: str, port: int) -> str:
    """The address a local client should use for a listening socket (a wildcard bind is reached on loopback)."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def write_sidecar(db_path: str | Path, info: CollectorInfo) -> Path:
    path = sidecar_path(db_path)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(info), indent=2) + "\n")
    os.replace(tmp, path)
    return path


def remove_sidecar(db_path: str | Path, token: str) -> None:
    """Remove the file if it is still ours (a newer collector on the same file may have replaced it)."""
    path = sidecar_path(db_path)
    try:
        if json.loads(path.read_text()).get("token") == token:
            path.unlink()
    except (OSError, ValueError):
        pass


def read_sidecar(db_path: str | Path) -> CollectorInfo | None:
    try:
        data: dict[str, Any] = json.loads(sidecar_path(db_path).read_text())
        return CollectorInfo(
            pid=int(data["pid"]), http=str(data["http"]), db=str(data.get("db", "")), token=str(data["token"]),
            grpc=str(data.get("grpc", "")), started_at=str(data.get("started_at", "")),
            scheme=str(data.get("scheme") or "http"), cert=str(data.get("cert") or ""),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_collector(db_path: str | Path, timeout: float = 2.0) -> CollectorInfo | None:
    """The live collector holding ``db_path``, or None."""
    info = read_sidecar(db_path)
    if info is None or not _pid_alive(info.pid):
        return None
    try:
        with open_collector(info, "/healthz", timeout=timeout) as response:
            health = json.loads(response.read() or b"{}")
    except (OSError, ValueError):  # urllib's URLError and ssl's SSLError are OSErrors
        return None
    return info if health.get("token") == info.token else None
