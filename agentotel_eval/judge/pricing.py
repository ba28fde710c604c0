"""What a judge call costs when the model runs on this machine or a private network: nothing, unless priced.

litellm prices a response by its model name, so ``openai/gpt-4o-mini`` served by vLLM or llama.cpp on
``http://127.0.0.1:8000/v1`` would be billed at OpenAI's rates for a call that cost nothing. A model reached
through a local ``api_base`` (loopback, a private or link-local address, ``localhost``, a single-label or
``.local``/``.internal``/``.home.arpa`` host name) is free unless the judge's litellm arguments give a price:
``input_cost_per_token``/``output_cost_per_token`` (or the ``..._per_second`` pair), which litellm then uses.
A proxy on such a host that forwards to a paid API (a LiteLLM proxy in front of OpenAI) needs that price too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

#: litellm's per-call price arguments: any of them is a price the configuration gives
PRICE_KWARGS = frozenset(
    {"input_cost_per_token", "output_cost_per_token", "input_cost_per_second", "output_cost_per_second"}
)

#: host name suffixes that only resolve inside a site (RFC 6761, 6762, 8375, and the common ``.internal``)
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


def endpoint_of(llm_kwargs: Mapping[str, Any]) -> str | None:
    """The URL the judge's litellm arguments send calls to (``api_base``, or the SDK's
    ``base_url``), if any."""
    base = llm_kwargs.get("api_base") or llm_kwargs.get("base_url")
    return base if isinstance(base, str) and base.strip() else None


def is_local_endpoint(url: str | None) -> bool:
    """Whether ``url`` names this machine or a private network (no name is resolved: that would
    be a network call).

    >>> is_local_endpoint("http://127.0.0.1:8000/v1"), is_local_endpoint("http://[::1]:8000")
    (True, True)
    >>> is_local_endpoint("http://10.0.3.7/v1"), is_local_endpoint("https://api.openai.com/v1")
    (True, False)
    """
    if not url or not url.strip():
        return False
    text = url.strip()
    try:
        host = urlsplit(text if "//" in text else f"//{text}").hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").lower()
    try:
        address = ipaddress.ip_address(
            host.split("%", 1)[0]
        )  # an IPv6 zone ("fe80::1%eth0") is no part of it
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def has_price(llm_kwargs: Mapping[str, Any]) -> bool:
    """Whether the judge's litellm arguments price the model themselves."""
    return any(llm_kwargs.get(key) is not None for key in PRICE_KWARGS)


def is_free(llm_kwargs: Mapping[str, Any]) -> bool:
    """A model on a local endpoint with no price given: its calls cost 0.0, whatever litellm's map says."""
    return is_local_endpoint(endpoint_of(llm_kwargs)) and not has_price(llm_kwargs)
