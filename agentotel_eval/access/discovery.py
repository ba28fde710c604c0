"""How ``agentotel-eval query`` finds a collector that holds the database: a small file next to it, and a list
of the collectors running on this machine.

A running collector writes ``<db>.collector.json`` (its pid, HTTP address and a random token) once it listens,
and removes it when it stops. A reader trusts the file only if the pid is alive AND ``GET /healthz`` at that
address answers with the same token: a file left behind by a killed collector, or a port reused by another
process, is recognised as stale. The same record is written under ``registry_dir()`` (one file per collector):
a command run from another directory, with no database there and no ``--db``, asks the one collector
running on the machine.

A collector serving TLS records it (``scheme`` https and its certificate file); a client then connects with
https and trusts that certificate alone (``client_ssl_context``). A collector that requires a token is sent
the one in ``AGENTOTEL_AUTH_TOKEN`` (``auth_headers``); ``GET /healthz`` needs none.
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
#: the database the reading commands use when no --db is given
DB_ENV = "AGENTOTEL_DB"
#: the collector the reading commands ask when no --url is given
URL_ENV = "AGENTOTEL_URL"
#: a config file whose ``[lake]`` the reading commands read every node's rows from, when no --lake is given
LAKE_ENV = "AGENTOTEL_LAKE"
#: where running collectors list themselves (default: $XDG_RUNTIME_DIR/agentotel-eval, else
#: ~/.cache/agentotel-eval)
RUNTIME_DIR_ENV = "AGENTOTEL_RUNTIME_DIR"


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
        return (
            f"the collector at {base_url} refused the token in {AUTH_TOKEN_ENV}: it is not "
            f"the collector's token"
        )
    return f"the collector at {base_url} requires a token: set {AUTH_TOKEN_ENV}"


def client_ssl_context(cert: str) -> ssl.SSLContext:
    """A client context that trusts exactly the collector's own certificate file (pinned, even if self-signed
    and not a CA: ``VERIFY_X509_PARTIAL_CHAIN``). The host name is not checked: clients connect to the address
    the collector wrote, often a loopback address its certificate need not name."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cafile=cert)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context


def open_collector(
    info: CollectorInfo,
    path: str,
    *,
    data: bytes | None = None,
    timeout: float = 30.0,
    headers: dict[str, str] | None = None,
) -> IO[bytes]:
    """A request to the collector, the way it asks to be reached (https and its certificate, the token if
    set); raises ``urllib.error.HTTPError`` for an error status and ``OSError`` when it cannot be reached."""
    import urllib.request

    all_headers = {**(headers or {}), **auth_headers()}
    request = urllib.request.Request(
        f"{info.base_url}{path}", data=data, headers=all_headers, method="POST" if data is not None else "GET"
    )
    context = client_ssl_context(info.cert) if info.scheme == "https" else None
    response: IO[bytes] = urllib.request.urlopen(request, timeout=timeout, context=context)
    return response


def client_address(host: str, port: int) -> str:
    """The address a local client should use for a listening socket (a wildcard bind is
    reached on loopback)."""
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
            pid=int(data["pid"]),
            http=str(data["http"]),
            db=str(data.get("db", "")),
            token=str(data["token"]),
            grpc=str(data.get("grpc", "")),
            started_at=str(data.get("started_at", "")),
            scheme=str(data.get("scheme") or "http"),
            cert=str(data.get("cert") or ""),
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
    return info if _answers(info, timeout) else None  # urllib's URLError and ssl's SSLError are OSErrors


def registry_dir() -> Path:
    """Where running collectors list themselves: ``$AGENTOTEL_RUNTIME_DIR``, else the
    user's runtime directory."""
    explicit = os.environ.get(RUNTIME_DIR_ENV, "").strip()
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    return (Path(runtime) if runtime else Path.home() / ".cache") / "agentotel-eval" / "collectors"


def register(info: CollectorInfo) -> None:
    """List a started collector (best effort: a collector runs the same without it)."""
    try:
        folder = registry_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{info.pid}-{info.token}.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({**asdict(info), "db": str(Path(info.db).resolve())}, indent=2) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass


def unregister(token: str) -> None:
    try:
        for path in registry_dir().glob(f"*-{token}.json"):
            path.unlink(missing_ok=True)
    except OSError:
        pass


def running_collectors(timeout: float = 2.0) -> list[CollectorInfo]:
    """The live collectors of this machine, in start order; the records of dead ones are removed."""
    found: list[CollectorInfo] = []
    try:
        paths = sorted(registry_dir().glob("*.json"))
    except OSError:
        return []
    for path in paths:
        info = _info_of(path)
        if info is None or not _pid_alive(info.pid):
            path.unlink(missing_ok=True)
            continue
        if _answers(info, timeout):
            found.append(info)
    return sorted(found, key=lambda i: i.started_at)


def collector_at(url: str, timeout: float = 5.0) -> CollectorInfo | None:
    """The collector that answers at ``url`` (``http(s)://host:port``), described by its /healthz; None when
    nothing does."""
    from urllib.parse import urlsplit

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    probe = CollectorInfo(pid=0, http=parts.netloc, db="", token="", scheme=parts.scheme)
    try:
        with open_collector(probe, "/healthz", timeout=timeout) as response:
            health = json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return None
    if not isinstance(health, dict) or "token" not in health:
        return None
    return CollectorInfo(
        pid=int(health.get("pid") or 0),
        http=parts.netloc,
        db=str(health.get("db") or ""),
        token=str(health["token"]),
        scheme=parts.scheme,
    )


def _info_of(path: Path) -> CollectorInfo | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return CollectorInfo(**{k: data[k] for k in CollectorInfo.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError):
        return None


def _answers(info: CollectorInfo, timeout: float) -> bool:
    try:
        with open_collector(info, "/healthz", timeout=timeout) as response:
            health = json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return False
    return isinstance(health, dict) and health.get("token") == info.token
