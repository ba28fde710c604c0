"""A real PostgreSQL server and a real S3-compatible server (moto) on loopback, for the lake's tests.

PostgreSQL comes from Debian's packages (``.ci/run`` installs it when missing); its server refuses to run as
root, so as root it runs as the ``postgres`` user the package creates. moto runs in server mode
from this environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bin() -> Path | None:
    """The directory of PostgreSQL's server programs, or None when PostgreSQL is not installed."""
    for base in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (base / "initdb").exists():
            return base
    found = shutil.which("pg_ctl")
    return Path(found).parent if found else None


@dataclass(frozen=True)
class Postgres:
    port: int

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, dbname: str) -> str:
        subprocess.run(
            [
                str(_bin("psql")),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-q",
                "-c",
                f"CREATE DATABASE {dbname}",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return self.url(dbname)


def psql(pg: Postgres, sql: str, database: str = "postgres") -> str:
    """Run one statement as the server's superuser in ``database``; its output."""
    done = subprocess.run(
        [
            str(_bin("psql")),
            "-h",
            "127.0.0.1",
            "-p",
            str(pg.port),
            "-U",
            "postgres",
            "-d",
            database,
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _bin(name: str) -> Path:
    base = postgres_bin()
    assert base is not None
    return base / name if (base / name).exists() else Path(shutil.which(name) or name)


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    base = postgres_bin()
    if base is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="agentotel-pg-"))
    data, port = root / "data", free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(root, "postgres")
    subprocess.run(
        [*as_postgres, str(base / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    server = subprocess.Popen(
        [
            *as_postgres,
            str(base / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, server, "PostgreSQL")
        deadline = time.monotonic() + 60
        while subprocess.run(
            [str(_bin("psql")), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-c", "SELECT 1"],
            capture_output=True,
            timeout=30,
        ).returncode:  # still starting up
            if time.monotonic() > deadline:
                raise RuntimeError("PostgreSQL did not accept connections within 60s")
            time.sleep(0.2)
        yield Postgres(port)
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class S3Server:
    port: int
    pid: int = 0

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def create_bucket(self, name: str) -> None:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=f"http://{self.endpoint}",
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket=name)


@contextlib.contextmanager
def running_s3() -> Iterator[S3Server]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(port, server, "moto's S3 server")
        yield S3Server(port, server.pid)
    finally:
        server.terminate()
        server.wait(30)


def _wait_for(port: int, process: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start (status {process.returncode})")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout:g}s")


def lake_marks() -> list:
    """The marks of a module of lake tests: ``lake``, skipped with the reason when the ``[lake]`` extra
    (DuckDB 1.5.5 and its extensions) or PostgreSQL is missing; ``.ci/run`` runs them in an
    environment with both."""
    import pytest

    from agentotel_eval.store import lake

    try:
        lake.extension_files()
        missing = ""
    except lake.LakeError as exc:
        missing = str(exc)
    return [
        pytest.mark.lake,
        pytest.mark.skipif(
            bool(missing),
            reason=f"needs the [lake] extra ({missing}); .ci/run runs these in its own environment",
        ),
        pytest.mark.skipif(
            postgres_bin() is None, reason="PostgreSQL is not installed (.ci/run installs it)"
        ),
    ]
