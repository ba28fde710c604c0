"""Three small travel agents traced with ``@traced``, their "model" a script, so the demo needs no network and
no API key. Each question makes the script do one thing the scores should catch: a correct run, a wrong tool,
a missing call, an extra call, calls in the wrong order, and a tool that fails (and is retried as it was)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentotel_eval.tracing import traced

CITIES = {"paris": "sunny, 21°C", "madrid": "clear, 27°C", "tokyo": "rain, 16°C"}
RATES = {("USD", "EUR"): 0.92, ("GBP", "JPY"): 191.4}


@traced(kind="tool")
def get_weather(city: str, tool_call_id: str | None = None) -> str:
    """Current weather for a city."""
    if city.lower() not in CITIES:
        raise ValueError(f"unknown city: {city}")
    return CITIES[city.lower()]


@traced(kind="tool")
def search_flights(destination: str, tool_call_id: str | None = None) -> list[dict[str, Any]]:
    """Flights to a destination."""
    return [
        {"flight": "TP1234", "to": destination, "price_eur": 129},
        {"flight": "IB990", "to": destination, "price_eur": 154},
    ]


@traced(kind="tool")
def search_hotels(city: str, tool_call_id: str | None = None) -> list[dict[str, Any]]:
    """Hotels in a city, cheapest first."""
    return [{"hotel": f"Casa {city}", "price_eur": 88}, {"hotel": f"Grand {city}", "price_eur": 240}]


@traced(kind="tool")
def book_hotel(hotel: str, tool_call_id: str | None = None) -> dict[str, str]:
    """Book a hotel by name."""
    return {"hotel": hotel, "confirmation": "BK-" + str(abs(hash(hotel)) % 10_000).zfill(4)}


@traced(kind="tool")
def convert_currency(amount: float, source: str, target: str, tool_call_id: str | None = None) -> float:
    """Convert an amount between currencies."""
    return round(amount * RATES[(source, target)], 2)


TOOLS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (get_weather, search_flights, search_hotels, book_hotel, convert_currency)
}

#: question -> the calls the scripted model asks for, one model turn each
Plan = list[tuple[str, dict[str, Any]]]
SCRIPTS: dict[str, Plan] = {
    # trip_planner: expected search_flights, search_hotels, book_hotel
    "Plan a weekend in Lisbon: a flight, then book the cheapest hotel.": [
        ("search_flights", {"destination": "Lisbon"}),
        ("search_hotels", {"city": "Lisbon"}),
        ("book_hotel", {"hotel": "Casa Lisbon"}),
    ],
    "Plan a trip to Rome and book a hotel there.": [  # books before it has searched: out of order
        ("search_flights", {"destination": "Rome"}),
        ("book_hotel", {"hotel": "Grand Rome"}),
        ("search_hotels", {"city": "Rome"}),
    ],
    "Find me a flight and a hotel in Oslo, and book it.": [  # never books: a missing call
        ("search_flights", {"destination": "Oslo"}),
        ("search_hotels", {"city": "Oslo"}),
    ],
    # weather_assistant: expected get_weather
    "What's the weather in Paris?": [("get_weather", {"city": "Paris"})],
    "Is it sunny in Madrid today?": [("search_flights", {"destination": "Madrid"})],  # the wrong tool
    # the tool fails, and the model asks for the same call again: a repeated failure
    "What's the weather in Atlantis?": [
        ("get_weather", {"city": "Atlantis"}),
        ("get_weather", {"city": "Atlantis"}),
    ],
    # currency_assistant: expected convert_currency
    "How much is 100 USD in EUR?": [("convert_currency", {"amount": 100, "source": "USD", "target": "EUR"})],
    "Convert 50 GBP to JPY for my Tokyo trip.": [  # looks up the weather as well: an extra call
        ("get_weather", {"city": "Tokyo"}),
        ("convert_currency", {"amount": 50, "source": "GBP", "target": "JPY"}),
    ],
}


@traced(kind="llm", name="scripted-model")
def plan_next_step(messages: list[dict[str, Any]], model: str = "scripted-travel-model") -> dict[str, Any]:
    """A stand-in for a chat model: the next call of the question's script, then an
    answer from the results."""
    plan = SCRIPTS[messages[0]["content"]]
    done = sum(1 for m in messages if m["role"] == "tool")
    if done < len(plan):
        name, args = plan[done]
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    results = [m["content"] for m in messages if m["role"] == "tool"]
    return {"role": "assistant", "content": "Done: " + "; ".join(results)}


def _loop(question: str) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(8):
        reply = plan_next_step(messages)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return str(reply["content"])
        for call in reply["tool_calls"]:
            function = call["function"]
            try:
                result: Any = TOOLS[function["name"]](
                    **json.loads(function["arguments"]), tool_call_id=call["id"]
                )
            except (
                Exception
            ) as exc:  # the model sees the failure, as real agents' tool errors reach the model
                result = {"error": str(exc)}
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    return "I could not finish."


@traced(kind="agent", expected_tools=["search_flights", "search_hotels", "book_hotel"])
def trip_planner(question: str) -> str:
    """Plans trips: flights, then hotels, then a booking."""
    return _loop(question)


@traced(kind="agent", expected_tools=["get_weather"])
def weather_assistant(question: str) -> str:
    """Answers weather questions."""
    return _loop(question)


@traced(kind="agent", expected_tools=["convert_currency"])
def currency_assistant(question: str) -> str:
    """Converts money."""
    return _loop(question)


AGENTS: dict[str, Callable[[str], str]] = {
    "Plan a weekend in Lisbon: a flight, then book the cheapest hotel.": trip_planner,
    "Plan a trip to Rome and book a hotel there.": trip_planner,
    "Find me a flight and a hotel in Oslo, and book it.": trip_planner,
    "What's the weather in Paris?": weather_assistant,
    "Is it sunny in Madrid today?": weather_assistant,
    "What's the weather in Atlantis?": weather_assistant,
    "How much is 100 USD in EUR?": currency_assistant,
    "Convert 50 GBP to JPY for my Tokyo trip.": currency_assistant,
}


def run_all() -> int:
    """Run every scripted question once; returns the number of runs."""
    for question, agent in AGENTS.items():
        agent(question)
    return len(AGENTS)
