"""Redaction rules: what the built-in patterns and secret keys catch and what they leave, the marker (rule and
length class), JSON inside strings, records, the user's own patterns, and the settings' errors."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.otlp import SpanEvent, SpanRecord
from agentotel_eval.otlp.records import LogRecord
from agentotel_eval.redaction import RedactionConfigError, RedactionSettings, Redactor, length_class

ON = Redactor(RedactionSettings(enabled=True))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-proj-abcdefghijklmnop1234567890 here", "key [REDACTED:api_key:32-63] here"),
        ("sk-ant-api03-" + "x" * 40, "[REDACTED:api_key:32-63]"),
        ("AKIAIOSFODNN7EXAMPLE", "[REDACTED:aws_access_key:16-31]"),
        ("token ghp_" + "a" * 36, "token [REDACTED:github_token:32-63]"),
        ("Authorization: Bearer abc.def-123456", "Authorization: Bearer [REDACTED:bearer_token:8-15]"),
        ("write to bob.smith@example.co.uk", "write to [REDACTED:email:16-31]"),
        ("pay with 4111 1111 1111 1111", "pay with [REDACTED:card_number:16-31]"),
        ("pay with 4111-1111-1111-1111.", "pay with [REDACTED:card_number:16-31]."),
    ],
)
def test_builtin_patterns_replace_what_matched_with_rule_and_length_class(text: str, expected: str) -> None:
    assert ON.text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "order 1234 5678 9012 3456 shipped",  # fails the Luhn check: not a card
        "the sk-learn docs",
        "max_tokens = 4096",
        "Paris, 3 nights",
        "a@b",
        "Bearer x",
        "[REDACTED:email:16-31]",  # a marker is not redacted again
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert ON.text(text) == text


def test_length_classes() -> None:
    assert [length_class(n) for n in (1, 7, 8, 15, 16, 40, 1000)] == [
        "1-7",
        "1-7",
        "8-15",
        "8-15",
        "16-31",
        "32-63",
        "512-1023",
    ]


def test_secret_keys_replace_their_values_whole_and_leave_counts() -> None:
    attributes = {
        "db.password": "hunter2",
        "OPENAI_API_KEY": "x" * 40,
        "http.request.header.authorization": "Basic abc",
        "x-api-key": "k",
        "gen_ai.usage.input_tokens": 12,
        "llm.token_count.prompt": 3,
        "token_type": "bearer",
        "gen_ai.request.max_tokens": 100,
        "headers": {"Cookie": ["a=1", "b=2"]},
        "city": "Paris",
    }
    assert ON.value(attributes) == {
        "db.password": "[REDACTED:password:1-7]",
        "OPENAI_API_KEY": "[REDACTED:openai_api_key:32-63]",
        "http.request.header.authorization": "[REDACTED:authorization:8-15]",
        "x-api-key": "[REDACTED:x_api_key:1-7]",
        "gen_ai.usage.input_tokens": 12,
        "llm.token_count.prompt": 3,
        "token_type": "bearer",
        "gen_ai.request.max_tokens": 100,
        "headers": {"Cookie": ["[REDACTED:cookie:1-7]"] * 2},
        "city": "Paris",
    }


def test_json_inside_a_string_keeps_its_shape_and_its_arguments() -> None:
    arguments = json.dumps({"user": "bob", "password": "hunter2", "note": "mail bob@example.com", "n": 3})
    redacted = json.loads(ON.text(arguments))
    assert redacted == {
        "user": "bob",
        "password": "[REDACTED:password:1-7]",
        "note": "mail [REDACTED:email:8-15]",
        "n": 3,
    }
    assert ON.text('{"not json": ') == '{"not json": '


def test_records_are_redacted_in_every_field_that_carries_values() -> None:
    resource = {"service.name": "svc", "deployment.secret": "s3cr3t"}
    span = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "call",
        1,
        1,
        2,
        2,
        "failed for alice@example.org",
        {"gen_ai.tool.call.arguments": '{"api_key": "sk-' + "z" * 30 + '"}'},
        (SpanEvent("exception", 1, {"exception.message": "Bearer abcdefghij rejected"}),),
        (),
        resource,
        "s",
        "1",
    )
    (out,) = ON.spans([span])
    assert out.status_message == "failed for [REDACTED:email:16-31]"
    assert json.loads(out.attributes["gen_ai.tool.call.arguments"]) == {"api_key": "[REDACTED:api_key:32-63]"}
    assert out.events[0].attributes["exception.message"] == "Bearer [REDACTED:bearer_token:8-15] rejected"
    assert out.resource == {"service.name": "svc", "deployment.secret": "[REDACTED:secret:1-7]"}
    assert span.attributes["gen_ai.tool.call.arguments"].endswith('z"}')  # the input is not changed
    log = LogRecord(
        1,
        0,
        None,
        None,
        9,
        "INFO",
        "gen_ai.choice",
        {"message": {"content": "call 4111111111111111"}},
        {},
        resource,
        "s",
        "1",
    )
    (redacted_log,) = ON.logs([log])
    assert redacted_log.body == {"message": {"content": "call [REDACTED:card_number:16-31]"}}


def test_users_patterns_and_keys_and_builtin_off() -> None:
    settings = RedactionSettings.from_dict(
        {
            "builtin": False,
            "secret_keys": ["ssn"],
            "patterns": [
                {"name": "employee", "regex": r"EMP-\d{6}"},
                {"name": "ticket", "regex": r"(?P<id>T-\d+)"},
            ],
        }
    )
    mine = Redactor(settings)
    assert settings.enabled and settings.where == ("store", "judge", "forward")
    assert mine.value({"ssn": "123-45-6789", "who": "EMP-123456 on T-77", "password": "kept"}) == {
        "ssn": "[REDACTED:ssn:8-15]",
        "who": "[REDACTED:employee:8-15] on [REDACTED:ticket:1-7]",
        "password": "kept",
    }
    same_groups = Redactor(
        RedactionSettings.from_dict(
            {"patterns": [{"name": "a", "regex": r"(?P<x>AA\d)"}, {"name": "b", "regex": r"(?P<x>BB\d)"}]}
        )
    )
    assert same_groups.text("AA1 BB2") == "[REDACTED:a:1-7] [REDACTED:b:1-7]"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"where": ["disk"]}, "where must be"),
        ({"patterns": [{"name": "x", "regex": "("}]}, "not a valid regex"),
        ({"patterns": [{"name": "x", "regex": "a*"}]}, "matches the empty string"),
        ({"patterns": [{"regex": "a"}]}, "string name and regex"),
        ({"secret_keys": "password"}, "list of key names"),
        ({"enable": True}, "unknown key"),
    ],
)
def test_bad_settings_are_named(section: dict, message: str) -> None:
    with pytest.raises(RedactionConfigError, match=message):
        RedactionSettings.from_dict(section)


def test_places() -> None:
    settings = RedactionSettings.from_dict({"where": ["judge"]})
    assert settings.applies("judge") and not settings.applies("store")
    assert not RedactionSettings().applies("store")  # off unless asked for
