"""Redaction of secrets and personal data in attribute values, event and log bodies, and judge prompts.

A value is redacted when it matches a pattern (API keys, bearer tokens, e-mail addresses, card numbers, and
the user's own regexes) or sits under a key that names a secret (``password``, ``api_key``, ``authorization``,
``token``, ``secret``, ...: the last segment of an attribute key, or a key of a map or of a JSON object inside
a string, such as a tool call's arguments). What matched becomes ``[REDACTED:<rule>:<length class>]``: the
rule that matched (a pattern's name, or the secret key's) and a power-of-two bucket of the original length, so
a redacted argument is still an argument, of a known kind and rough size, and the JSON it sat
in stays valid JSON.

Pure functions over plain values and records; ``RedactionSettings`` is the ``[redaction]``
section of the config.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord

#: where redaction applies: before storing, before a judge prompt is built, before spans are forwarded
PLACES = ("store", "judge", "forward")
MARKER_PREFIX = "[REDACTED:"

#: (rule name, regex, literals one of which any match contains) applied to every string value; a match is
#: replaced whole. The literals let a string skip a rule at the speed of a substring search: Python's regex
#: engine scans text a hundred times slower, and most values (message contents) hold none of them.
BUILTIN_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("api_key", r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}", ("sk-",)),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", ("xox",)),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b", ("AIza",)),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", ("eyJ",)),
    ("bearer_token", r"(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{8,}", ("earer ",)),
    ("email", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b", ("@",)),
    ("card_number", r"\b\d(?:[ -]?\d){12,18}\b", ()),
)
#: last key segments whose values are secrets (case-insensitive; ``_``, ``-`` and ``.`` separate segments)
BUILTIN_SECRET_KEYS = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "client_secret",
    "secret_key",
    "api_key",
    "apikey",
    "x_api_key",
    "access_key",
    "private_key",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "session_token",
    "authorization",
    "proxy_authorization",
    "cookie",
    "set_cookie",
    "credentials",
)
_SEGMENTS = re.compile(r"[.\s]+")
_JSON_KEY = re.compile(r'"([^"\\]{1,100})"\s*:')


class RedactionConfigError(ValueError):
    """An invalid ``[redaction]`` section; the message names the key."""


@dataclass(frozen=True, slots=True)
class RedactionSettings:
    """``[redaction]``: off unless ``enabled``; ``where`` any of store, judge, forward (all by default)."""

    enabled: bool = False
    where: tuple[str, ...] = PLACES
    #: the built-in patterns and secret key names (off: only the user's)
    builtin: bool = True
    #: more key names whose values are secrets (matched as the last key segment, case-insensitive)
    secret_keys: tuple[str, ...] = ()
    #: more patterns, as (name, regex)
    patterns: tuple[tuple[str, str], ...] = ()

    def applies(self, place: str) -> bool:
        return self.enabled and place in self.where

    def redactor(self, place: str) -> Redactor | None:
        """The redactor of one place (store, judge, forward), or None where these settings do not apply."""
        return Redactor(self) if self.applies(place) else None

    @classmethod
    def from_dict(cls, data: Any) -> RedactionSettings:
        if not isinstance(data, Mapping):
            raise RedactionConfigError("[redaction] must be a table")
        allowed = {"enabled", "where", "builtin", "secret_keys", "patterns"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise RedactionConfigError(f"unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        enabled = data.get("enabled", True)  # a [redaction] table asks for redaction unless it says otherwise
        builtin = data.get("builtin", True)
        if not isinstance(enabled, bool) or not isinstance(builtin, bool):
            raise RedactionConfigError("enabled and builtin must be true or false")
        where = data.get("where", list(PLACES))
        if not isinstance(where, list) or not where or any(w not in PLACES for w in where):
            raise RedactionConfigError(f"where must be a non-empty list of {list(PLACES)}, got {where!r}")
        keys = data.get("secret_keys", [])
        if not isinstance(keys, list) or not all(isinstance(k, str) and k.strip() for k in keys):
            raise RedactionConfigError("secret_keys must be a list of key names")
        patterns = []
        for index, item in enumerate(data.get("patterns", [])):
            if (
                not isinstance(item, Mapping)
                or set(item) != {"name", "regex"}
                or not all(isinstance(item[k], str) for k in ("name", "regex"))
            ):
                raise RedactionConfigError(f"patterns[{index}] must be a table with a string name and regex")
            if not re.fullmatch(r"[A-Za-z0-9_-]+", item["name"]):
                raise RedactionConfigError(f"patterns[{index}].name must be letters, digits, _ or -")
            try:
                compiled = re.compile(item["regex"])
            except re.error as exc:
                raise RedactionConfigError(f"patterns[{index}].regex is not a valid regex: {exc}") from None
            if compiled.search(""):
                raise RedactionConfigError(f"patterns[{index}].regex matches the empty string")
            patterns.append((item["name"], item["regex"]))
        return cls(enabled, tuple(where), builtin, tuple(k.strip() for k in keys), tuple(patterns))


def length_class(n: int) -> str:
    """A power-of-two bucket of a length: ``1-7``, ``8-15``, ``16-31``, ..."""
    if n < 8:
        return "1-7"
    low = 1 << (n.bit_length() - 1)
    return f"{low}-{2 * low - 1}"


def marker(rule: str, original: str) -> str:
    return f"{MARKER_PREFIX}{rule}:{length_class(len(original))}]"


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _key_name(key: str) -> str:
    return _SEGMENTS.split(key.strip().lower())[-1].replace("-", "_")


class Redactor:
    """Redacts values with one settings' rules. Built once per process; thread-safe (its only state is a cache
    of which keys are secret, whose entries never change)."""

    def __init__(self, settings: RedactionSettings) -> None:
        rules: list[tuple[str, str, tuple[str, ...]]] = list(BUILTIN_PATTERNS) if settings.builtin else []
        rules += [(name, regex, ()) for name, regex in settings.patterns]
        self._rules = [
            (name, re.compile(regex), triggers, _replacer(name)) for name, regex, triggers in rules
        ]
        # one scan for every rule's literals: a string with none of them skips those rules at once
        literals = sorted({t for _, _, triggers in rules for t in triggers}, key=len, reverse=True)
        self._any_literal = re.compile("|".join(map(re.escape, literals))) if literals else None
        keys = (BUILTIN_SECRET_KEYS if settings.builtin else ()) + settings.secret_keys
        self._secret_keys = frozenset(_key_name(k) for k in keys)
        self._key_cache: dict[str, bool] = {}  # keys repeat on every span

    # ---- values -------------------------------------------------------------------------------------------

    def is_secret_key(self, key: str) -> bool:
        """Whether a key names a secret: its last segment is a secret key name, or ends with ``_`` and one
        (``OPENAI_API_KEY``, ``x-api-key``, ``db.password``; not ``max_tokens`` or ``token_count``)."""
        known = self._key_cache.get(key)
        if known is None:
            parts = _key_name(key).split("_")
            known = any("_".join(parts[i:]) in self._secret_keys for i in range(len(parts)))
            if len(self._key_cache) < 10_000:
                self._key_cache[key] = known
        return known

    def text(self, value: str) -> str:
        """A string with every pattern's matches replaced, and secret keys of a JSON object inside it."""
        has_literal = self._any_literal is not None and self._any_literal.search(value) is not None
        for _name, pattern, triggers, replace_match in self._rules:
            if triggers:
                if not has_literal:
                    continue
                for trigger in triggers:
                    if trigger in value:
                        break
                else:
                    continue
            if pattern.search(value) is not None:
                value = pattern.sub(replace_match, value)
        if self._secret_keys and value[:1] in ("{", "[") and self._has_secret_key(value):
            value = self._json_text(value)
        return value

    def _has_secret_key(self, text: str) -> bool:
        """Whether a JSON text has an object key that names a secret (found without
        parsing it: most do not)."""
        is_secret = self.is_secret_key
        return any(is_secret(key) for key in set(_JSON_KEY.findall(text)))

    def value(self, value: Any, key: str | None = None) -> Any:
        """Any attribute or body value: strings by pattern, maps and JSON objects by their keys, recursively;
        everything under a secret ``key`` replaced whole."""
        if key is not None and self.is_secret_key(key):
            return self._whole(value, _key_name(key))
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self.value(v, k) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self.value(v, k) for k, v in attributes.items()}

    def _whole(self, value: Any, rule: str) -> Any:
        if isinstance(value, str):
            return value if value.startswith(MARKER_PREFIX) else marker(rule, value)
        if isinstance(value, Mapping):
            return {k: self._whole(v, rule) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._whole(v, rule) for v in value]
        return value  # a number or flag under a secret key says nothing secret

    def _json_text(self, value: str) -> str:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if not isinstance(parsed, dict | list):
            return value
        # the patterns already ran over the whole text: only the keys are left to look at
        redacted = self._keys(parsed)
        return value if redacted == parsed else json.dumps(redacted, ensure_ascii=False)

    def _keys(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                k: self._whole(v, _key_name(k)) if self.is_secret_key(k) else self._keys(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._keys(v) for v in value]
        return value

    # ---- records ------------------------------------------------------------------------------------------

    def spans(self, spans: list[SpanRecord]) -> list[SpanRecord]:
        """The spans with their attributes, events, links, resource and status message redacted (a resource
        shared by the spans of a request is redacted once)."""
        resources: dict[int, dict[str, Any]] = {}
        out = []
        for span in spans:
            resource = resources.get(id(span.resource))
            if resource is None:
                resource = resources[id(span.resource)] = self.attributes(span.resource)
            out.append(
                replace(
                    span,
                    attributes=self.attributes(span.attributes),
                    resource=resource,
                    events=tuple(
                        SpanEvent(e.name, e.time_ns, self.attributes(e.attributes)) for e in span.events
                    ),
                    links=tuple(
                        SpanLink(lk.trace_id, lk.span_id, self.attributes(lk.attributes)) for lk in span.links
                    ),
                    status_message=self.text(span.status_message)
                    if span.status_message
                    else span.status_message,
                )
            )
        return out

    def logs(self, records: list[LogRecord]) -> list[LogRecord]:
        """The log records with their body, attributes and resource redacted."""
        resources: dict[int, dict[str, Any]] = {}
        out = []
        for record in records:
            resource = resources.get(id(record.resource))
            if resource is None:
                resource = resources[id(record.resource)] = self.attributes(record.resource)
            out.append(
                replace(
                    record,
                    body=self.value(record.body),
                    attributes=self.attributes(record.attributes),
                    resource=resource,
                )
            )
        return out


def _replacer(name: str) -> Callable[[re.Match[str]], str]:
    def replace_match(match: re.Match[str]) -> str:
        text = match.group(0)
        if name == "card_number" and not _luhn(re.sub(r"\D", "", text)):
            return text
        return marker(name, text)

    return replace_match
