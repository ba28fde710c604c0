"""The one grammar of durations and sizes that flags, pages and the config share."""

from __future__ import annotations

import pytest

from agentotel_eval.durations import DurationError, SizeError, format_duration, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (2.5, 2.5),
        ("90", 90.0),
        ("500ms", 0.5),
        ("2s", 2.0),
        ("1.5h", 5400.0),
        ("30m", 1800.0),
        ("7d", 604800.0),
        ("2w", 1209600.0),
        (" 12 H ", 43200.0),
        ("0", 0.0),
    ],
)
def test_durations_read_with_and_without_units(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "x", "5y", "-1h", "1h30m", "h", True, -1, float("nan"), None, [1]])
def test_what_is_not_a_duration_is_refused_with_examples(text):
    with pytest.raises(DurationError, match=r"expected a duration such as 90, \"500ms\""):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [0.5, 90, 5400, 86400, 604800, 1209600, 2.25])
def test_formatted_durations_read_back_to_the_same_seconds(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(
    ("text", "size"),
    [
        (1024, 1024),
        ("20MiB", 20 * 1024 * 1024),
        ("512KB", 512_000),
        ("1.5 kib", 1536),
        ("7", 7),
        ("2GB", 2 * 10**9),
    ],
)
def test_sizes_read_with_and_without_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "20 MiBs", "-1", True, -5, 1.5, None])
def test_what_is_not_a_size_is_refused(text):
    with pytest.raises(SizeError, match="expected a size"):
        parse_size(text)
