"""How ``agentotel-eval query`` finds a collector that holds the database: a small file next to it.

A running collector writes ``<db>.collector.json`` (its pid, HTTP address and a random token) once it listens, and
removes it when it stops. A reader trusts the file only if the pid is alive AND ``GET /healthz`` at that address
answers with the same token: a file left behind by a killed collector, or a port reused by another process, is
recognised as stale.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

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

    @property
    def base_url(self) -> str:
        return f"http://{self.http}"


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
        with urllib.request.urlopen(f"{info.base_url}/healthz", timeout=timeout) as response:
            health = json.loads(response.read() or b"{}")
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return info if health.get("token") == info.token else None
