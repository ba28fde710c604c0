"""Access to the recorded real-framework traces in tests/fixtures/traces and their manifest."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agentotel_eval.otlp import LogRecord, SpanRecord, decode

TRACES_DIR = Path(__file__).parent / "fixtures" / "traces"


@dataclass(frozen=True)
class Fixture:
    name: str  # file stem, e.g. "pydantic-ai__native-v5__single"
    entry: dict[str, Any]  # the manifest line

    @property
    def json_path(self) -> Path:
        return TRACES_DIR / self.entry["file"]

    @property
    def pb_path(self) -> Path:
        return TRACES_DIR / self.entry["pb_file"]

    def logs_path(self, encoding: str) -> Path | None:
        path = TRACES_DIR / f"{self.name}.logs.{'pb' if encoding == 'protobuf' else 'json'}"
        return path if path.exists() else None

    def body(self, encoding: str) -> bytes:
        return (self.pb_path if encoding == "protobuf" else self.json_path).read_bytes()

    def logs_body(self, encoding: str) -> bytes | None:
        path = self.logs_path(encoding)
        return path.read_bytes() if path else None

    def spans(self, encoding: str = "protobuf") -> list[SpanRecord]:
        return decode("traces", encoding, self.body(encoding)).records

    def args_recorded(self) -> bool:
        """Whether the capture carries the call arguments at all (their string values appear in it); some
        instrumentations record no content (ADK's default conventions), and nothing can recover the arguments."""
        raw = self.json_path.read_text()
        logs = self.logs_path("json")
        raw += logs.read_text() if logs else ""
        strings = [v for args in self.entry["ground_truth_args"] for v in args.values() if isinstance(v, str)]
        return any(json.dumps(s)[1:-1] in raw for s in strings)

    def logs(self, encoding: str = "protobuf") -> list[LogRecord]:
        body = self.logs_body(encoding)
        return decode("logs", encoding, body).records if body else []


@cache
def fixtures() -> tuple[Fixture, ...]:
    out = []
    for line in (TRACES_DIR / "manifest.jsonl").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            out.append(Fixture(entry["file"].removesuffix(".json"), entry))
    return tuple(out)
