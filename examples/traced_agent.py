"""A plain-Python agent made observable and scoreable with @traced, exporting to the agentotel-eval collector.

    agentotel-eval serve                     # in another terminal (listens on 127.0.0.1:4317 / :4318)
    python examples/traced_agent.py "What's the weather in Paris, and how far is it from Lyon?"
    agentotel-eval query "SELECT agent_name, tools_called, expected_tools FROM agent_runs"

The "LLM" is a scripted function (no network, no API key), so the example runs anywhere; swap
``plan_next_step`` for a real model call and nothing else changes. Export goes to
``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://127.0.0.1:4317``; set
``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`` for port 4318). Without a collector the agent still runs; the
exporter logs that it could not deliver the spans.
"""

from __future__ import annotations

import json
import re
import sys

from agentotel_eval.tracing import configure, set_expected_tools, traced

CITIES = {"paris": (48.86, 2.35), "lyon": (45.76, 4.84), "berlin": (52.52, 13.40)}
_KNOWN = re.compile("|".join(rf"\b{name}\b" for name in CITIES), re.IGNORECASE)
_AFTER_IN = re.compile(r"\bin ([A-Z][\w-]*)")


def cities_in(question: str) -> list[str]:
    """The cities a question names, in the order it names them: those in CITIES, and a capitalised word after
    "in" for any other ("What's the weather in Oslo?")."""
    found = [(m.start(), m.group(0).title()) for m in _KNOWN.finditer(question)]
    found += [
        (m.start(1), m.group(1)) for m in _AFTER_IN.finditer(question) if m.group(1).lower() not in CITIES
    ]
    return list(dict.fromkeys(name for _, name in sorted(found)))


@traced(kind="tool")
def get_weather(city: str, tool_call_id: str | None = None) -> dict:
    """Current weather for a city."""
    return {"city": city, "condition": "sunny", "temperature_c": 21}


@traced(kind="tool")
def get_coordinates(city: str, tool_call_id: str | None = None) -> dict:
    """Latitude and longitude of a city."""
    lat, lon = CITIES[city.lower()]
    return {"city": city, "lat": lat, "lon": lon}


@traced(kind="tool")
def distance_km(a: dict, b: dict, tool_call_id: str | None = None) -> float:
    """Great-circle distance between two coordinates, in km."""
    from math import asin, cos, radians, sin, sqrt

    dlat, dlon = radians(b["lat"] - a["lat"]), radians(b["lon"] - a["lon"])
    h = sin(dlat / 2) ** 2 + cos(radians(a["lat"])) * cos(radians(b["lat"])) * sin(dlon / 2) ** 2
    return round(2 * 6371 * asin(sqrt(h)), 1)


# A tool's ``tool_call_id`` parameter becomes the span's gen_ai.tool.call.id (and is not one of its
# arguments), so the call the model requested and the execution are linked.
TOOLS = {"get_weather": get_weather, "get_coordinates": get_coordinates, "distance_km": distance_km}


@traced(kind="llm", name="scripted-model")
def plan_next_step(messages: list[dict], model: str = "scripted-planner") -> dict:
    """A stand-in for a chat model: asks for the tools the question needs, for the cities it names (the
    weather in the first; how far apart the first two whose coordinates it knows), then answers
    from their results."""
    question = messages[0]["content"]
    cities = cities_in(question)
    located = [city for city in cities if city.lower() in CITIES][:2]
    weather = "weather" in question.lower() and bool(cities)
    distance = "far" in question.lower() and len(located) == 2
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    wanted = []
    if weather:
        wanted.append(("get_weather", {"city": cities[0]}))
    if distance:
        wanted += [("get_coordinates", {"city": city}) for city in located]
    if len(results) < len(wanted):
        name, args = wanted[len(results)]
        call = {
            "id": f"call_{len(results)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if distance and not any(isinstance(r, float) for r in results):
        coords = [r for r in results if isinstance(r, dict) and "lat" in r]
        call = {
            "id": "call_distance",
            "type": "function",
            "function": {"name": "distance_km", "arguments": json.dumps({"a": coords[0], "b": coords[1]})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if not results:
        known = ", ".join(city.title() for city in CITIES)
        return {
            "role": "assistant",
            "content": f"I can tell the weather in a city you name, and how far apart two of {known} are.",
        }
    return {"role": "assistant", "content": f"Here is what I found: {json.dumps(results)}"}


def expected_tools_for(question: str) -> list[str]:
    """What a correct run of this question calls, as a test writer would state it: the weather tool when the
    question asks about the weather in a city, the coordinates of both cities and the distance when it asks
    how far apart two known cities are (every call, so that the exact and in-order scores hold too)."""
    expected = ["get_weather"] if "weather" in question.lower() and cities_in(question) else []
    located = [city for city in cities_in(question) if city.lower() in CITIES][:2]
    if "far" in question.lower() and len(located) == 2:
        expected += ["get_coordinates"] * 2 + [
            "distance_km"
        ]  # the coordinates of each city, then the distance
    return expected


@traced(kind="agent", name="travel-assistant")
def travel_assistant(question: str) -> str:
    """Answers travel questions with weather and distance tools."""
    set_expected_tools(
        expected_tools_for(question)
    )  # this run's expectation, on its span, scored by the collector
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(10):
        reply = plan_next_step(messages)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            function = call["function"]
            result = TOOLS[function["name"]](**json.loads(function["arguments"]), tool_call_id=call["id"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    return "I could not finish."


def main(argv: list[str]) -> int:
    configure(
        service_name="traced-agent-example"
    )  # endpoint/protocol from OTEL_EXPORTER_OTLP_* or the defaults
    question = argv[1] if len(argv) > 1 else "What's the weather in Paris, and how far is it from Lyon?"
    print(travel_assistant(question))
    return 0  # configure() registered an atexit hook that flushes the spans


if __name__ == "__main__":
    sys.exit(main(sys.argv))
