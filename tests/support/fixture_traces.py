"""Access to the recorded real-framework traces in tests/fixtures/traces and their manifest."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agentotel_eval.otlp import LogRecord, SpanRecord, decode

TRACES_DIR = Path(__file__).parents[1] / "fixtures" / "traces"


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

    def _raw(self) -> str:
        """Everything the capture holds, decoded (log bodies as values, not OTLP key/value lists), as text."""
        return repr(self.spans()) + repr(self.logs())

    def args_recorded(self) -> bool:
        """Whether the capture carries the call arguments at all: the manifest says so, else some argument
        appears in it as a name and its quoted value (``"city": "Paris"``, ``city='Paris'``, escaped or not).
        Some instrumentations record no content (ADK's default conventions), and nothing can recover the
        arguments; an argument quoted in an error message (``Unknown city: Atlantis``) is not
        a recorded argument."""
        if "arguments_in_capture" in self.entry:
            return bool(self.entry["arguments_in_capture"])
        raw = self._raw()
        for args in self.entry["ground_truth_args"]:
            for key, value in args.items():
                if isinstance(value, str):
                    pattern = (
                        re.escape(key)
                        + r"""[\\"']*\s*[:=]\s*[\\]*["']"""
                        + re.escape(json.dumps(value)[1:-1])
                    )
                    if re.search(pattern, raw):
                        return True
        return False

    def recorded_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """The ground-truth arguments of one call that the capture holds. A value that appears nowhere in it
        next to its name was lost by the capture itself (Langtrace's LangChain dumps keep only string values):
        no reconstruction can give it back, and none may invent it."""
        raw = _raw_text(self)
        return {key: value for key, value in args.items() if _value_recorded(raw, key, value)}

    def lost_arguments(self) -> bool:
        """Whether the capture lost some argument value the model sent (see ``recorded_arguments``)."""
        return self.args_recorded() and any(
            self.recorded_arguments(args) != args for args in self.entry["ground_truth_args"]
        )

    def names_recorded(self) -> bool:
        """Whether the capture names the calls at all (an SDK's metadata-only spans do not; a capture whose
        tool names are only in the tool definitions, ``calls_in_capture: false`` in the
        manifest, records no call)."""
        if self.entry.get("calls_in_capture") is False:
            return False
        raw = self._raw()
        return all(name in raw for name in self.entry["ground_truth_tools"])

    def logs(self, encoding: str = "protobuf") -> list[LogRecord]:
        body = self.logs_body(encoding)
        return decode("logs", encoding, body).records if body else []


def as_stored(log: LogRecord) -> LogRecord:
    """A log record as the store gives it back. One ``severity`` column holds the text, else the number's
    standard name: a text that IS that name (Semantic Kernel's "INFO" with number 9) reads back unset, which
    OTLP defines as the same severity."""
    from agentotel_eval.store.rows import severity_name

    if log.severity_text and log.severity_text == severity_name(dataclasses.replace(log, severity_text="")):
        return dataclasses.replace(log, severity_text="")
    return log


@cache
def fixtures() -> tuple[Fixture, ...]:
    out = []
    for line in (TRACES_DIR / "manifest.jsonl").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            out.append(Fixture(entry["file"].removesuffix(".json"), entry))
    return tuple(out)


_RAW: dict[str, str] = {}


def _raw_text(fixture: Fixture) -> str:
    """``fixture._raw()``, once per fixture (every call of its ground truth asks)."""
    if fixture.name not in _RAW:
        _RAW[fixture.name] = fixture._raw()
    return _RAW[fixture.name]


_NAME_THEN = r"""[\\"']*\s*[:=]\s*[\\]*"""


def _value_recorded(raw: str, key: str, value: Any) -> bool:
    """Whether ``raw`` holds ``value`` right after the name ``key`` (quoted or not, JSON or repr; numbers
    compared by value: the model sent 100, the framework passed 100.0)."""
    if isinstance(value, bool):
        pattern = re.escape(key) + _NAME_THEN + ("(true|True)" if value else "(false|False)")
        return re.search(pattern, raw) is not None
    if isinstance(value, int | float):
        found = re.finditer(re.escape(key) + _NAME_THEN + r"""["']?(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)""", raw)
        return any(float(m.group(1)) == float(value) for m in found)
    if isinstance(value, str):
        pattern = re.escape(key) + _NAME_THEN + r"""["']""" + re.escape(json.dumps(value)[1:-1])
        return (
            re.search(pattern, raw) is not None
            or re.search(re.escape(key) + _NAME_THEN + r"""["']""" + re.escape(value), raw) is not None
        )
    return True  # (lists and objects: not lost by any capture seen)
