"""Untrusted content in judge prompts: delimit it, and make sure it cannot close its own delimiter.

User input, tool arguments and tool results were written by whoever the agent talked to. They go into the
prompt between ``<untrusted_data name="...">`` and ``</untrusted_data>``; the system prompt tells the judge
that everything inside is data to assess, never instructions. Inside the data, anything that looks like those
tags (any case, spacing, full-width letters, zero-width characters, look-alike brackets) has its bracket
replaced with ``[``, so no content can end the block early and speak as the prompt.
"""

from __future__ import annotations

import re
import unicodedata

TAG = "untrusted_data"

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_BRACKETS = "<\uff1c\ufe64\u2039\u3008\u27e8\u2329\u276e\u02c2"  # < and the characters that look like it
_SEP = f"[\\s{_ZERO_WIDTH}]*"


def _letter(ch: str) -> str:
    """A class matching ``ch`` in either case, ASCII or full-width, optionally followed
    by zero-width chars."""
    if ch == "_":
        return f"[_\\-\\s\uff3f{_ZERO_WIDTH}]*"
    variants = {
        ch.lower(),
        ch.upper(),
        chr(ord(ch.lower()) - 0x61 + 0xFF41),
        chr(ord(ch.upper()) - 0x41 + 0xFF21),
    }
    return "[" + "".join(sorted(variants)) + f"][{_ZERO_WIDTH}]*"


_TAG_RE = re.compile(
    f"[{_BRACKETS}]{_SEP}(?P<slash>[/\uff0f\u2215]?){_SEP}" + "".join(_letter(c) for c in TAG),
)


def neutralise(text: str) -> str:
    """``text`` with every delimiter look-alike defused (``<untrusted_data`` → ``[untrusted_data``)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    for ch in _ZERO_WIDTH:
        folded = folded.replace(ch, "")
    if "untrusted" not in folded and "untrusted" not in text.casefold():
        return text
    return _TAG_RE.sub(lambda m: "[" + ("/" if m.group("slash") else "") + TAG, text)


def data_block(name: str, text: str) -> str:
    """``text`` as a delimited block of untrusted data named ``name`` (a fixed label we choose, not data)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"a data block name must be a lowercase identifier, got {name!r}")
    return f'<{TAG} name="{name}">\n{neutralise(text)}\n</{TAG}>'
