"""@traced with the real OpenTelemetry SDK exporting to an in-memory exporter: span
shapes, structure, errors."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import gc
import inspect
import json
import logging
import re
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentotel_eval import ToolCall
from agentotel_eval import semconv as sc
from agentotel_eval.tracing import failures as tracing_failures
from agentotel_eval.tracing import set_expected_tools, state, traced
from agentotel_eval.tracing.shape import SpanShape


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


@pytest.fixture
def t(provider: TracerProvider):
    """``traced`` bound to the test's provider (never the global one)."""
    return functools.partial(traced, tracer_provider=provider)


@pytest.fixture(autouse=True)
def _fresh_failure_log():
    tracing_failures.reset_for_tests()
    yield
    tracing_failures.reset_for_tests()


def spans_by_name(exporter: InMemorySpanExporter) -> dict:
    return {span.name: span for span in exporter.get_finished_spans()}


def only_span(exporter: InMemorySpanExporter):
    (span,) = exporter.get_finished_spans()
    return span


def parent_id(span) -> int | None:
    return span.parent.span_id if span.parent is not None else None


# --- span shapes --------------------------------------------------------------------------------------------


def test_tool_span_follows_genai_execute_tool(t, exporter):
    @t(kind="tool")
    def get_weather(city: str, units: str = "metric") -> dict:
        """Current weather for a city.

        Uses the national service."""
        return {"city": city, "temp": 21.5}

    assert get_weather("Paris", units="imperial") == {"city": "Paris", "temp": 21.5}
    span = only_span(exporter)
    assert span.name == "execute_tool get_weather"
    assert span.kind is SpanKind.INTERNAL
    attrs = span.attributes
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert attrs[sc.GEN_AI_TOOL_NAME] == "get_weather"
    assert attrs[sc.GEN_AI_TOOL_TYPE] == "function"
    assert attrs[sc.GEN_AI_TOOL_DESCRIPTION] == "Current weather for a city."
    assert re.fullmatch(r"call_[0-9a-f]{24}", attrs[sc.GEN_AI_TOOL_CALL_ID])
    assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"city": "Paris", "units": "imperial"}
    assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) == {"city": "Paris", "temp": 21.5}
    assert span.status.status_code is StatusCode.UNSET


def test_tool_call_ids_are_unique_per_call(t, exporter):
    @t(kind="tool")
    def ping() -> str:
        return "pong"

    for _ in range(50):
        ping()
    ids = [span.attributes[sc.GEN_AI_TOOL_CALL_ID] for span in exporter.get_finished_spans()]
    assert len(set(ids)) == 50


def test_tool_call_id_keyword_is_the_call_id_and_not_an_argument(t, exporter):
    @t(kind="tool")
    def search(query: str, tool_call_id: str | None = None) -> list[str]:
        return [query]

    @t(kind="tool", name="lookup")
    def lookup(**kwargs) -> int:
        return len(kwargs)

    search("otel", tool_call_id="call_abc")
    search("positional", "call_pos")
    assert lookup(key="k", tool_call_id="call_kw") == 2  # the function still receives it
    spans = exporter.get_finished_spans()
    assert [s.attributes[sc.GEN_AI_TOOL_CALL_ID] for s in spans] == ["call_abc", "call_pos", "call_kw"]
    assert [json.loads(s.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) for s in spans] == [
        {"query": "otel"},
        {"query": "positional"},
        {"key": "k"},
    ]
    assert spans[2].name == "execute_tool lookup"


def test_agent_span_records_run_input_output_and_expected_tools(t, exporter):
    @t(kind="agent", expected_tools=["search", ToolCall("summarise")])
    def research_agent(question: str) -> str:
        """Answers research questions."""
        return "Paris is the capital of France."

    research_agent("What is the capital of France?")
    span = only_span(exporter)
    assert span.name == "invoke_agent research_agent"
    assert span.kind is SpanKind.INTERNAL
    attrs = span.attributes
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs[sc.GEN_AI_AGENT_NAME] == "research_agent"
    assert attrs[sc.GEN_AI_AGENT_DESCRIPTION] == "Answers research questions."
    assert list(attrs[sc.AGENTOTEL_EXPECTED_TOOLS]) == ["search", "summarise"]
    assert json.loads(attrs[sc.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is the capital of France?"}]}
    ]
    assert json.loads(attrs[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Paris is the capital of France."}],
            "finish_reason": "stop",
        }
    ]
    assert json.loads(attrs[sc.AGENTOTEL_INPUT]) == {"question": "What is the capital of France?"}
    assert json.loads(attrs[sc.AGENTOTEL_OUTPUT]) == "Paris is the capital of France."


def test_agent_with_several_arguments_uses_their_json_as_the_user_text(t, exporter):
    @t(kind="agent", name="planner")
    def plan(goal: str, budget: int) -> dict:
        return {"steps": 2}

    plan("trip", budget=300)
    span = only_span(exporter)
    assert span.name == "invoke_agent planner"
    (message,) = json.loads(span.attributes[sc.GEN_AI_INPUT_MESSAGES])
    assert json.loads(message["parts"][0]["content"]) == {"goal": "trip", "budget": 300}
    (answer,) = json.loads(span.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
    assert json.loads(answer["parts"][0]["content"]) == {"steps": 2}


def test_llm_span_follows_genai_inference_and_understands_chat_messages(t, exporter):
    @t(kind="llm")
    def complete(messages: list[dict], model: str = "scripted-1") -> dict:
        return {
            "id": "resp-1",
            "model": "scripted-1-2025",
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "search", "arguments": '{"query": "otel"}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7},
        }

    complete(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find otel"}], model="m-1"
    )
    span = only_span(exporter)
    assert span.name == "chat complete"
    assert span.kind is SpanKind.CLIENT
    attrs = span.attributes
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "chat"
    assert attrs[sc.GEN_AI_REQUEST_MODEL] == "m-1"
    assert attrs[sc.GEN_AI_RESPONSE_MODEL] == "scripted-1-2025"
    assert attrs[sc.GEN_AI_RESPONSE_ID] == "resp-1"
    assert list(attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS]) == ["tool_calls"]
    assert attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] == 12
    assert attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 7
    assert json.loads(attrs[sc.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Find otel"}]},
    ]
    assert json.loads(attrs[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "name": "search", "id": "call_1", "arguments": {"query": "otel"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]


def test_llm_without_capture_still_records_the_model(t, exporter):
    @t(kind="llm", capture_args=False, capture_result=False)
    def complete(messages: list, model: str) -> str:
        return "private answer"

    complete([{"role": "user", "content": "private question"}], model="m-2")
    attrs = only_span(exporter).attributes
    assert attrs[sc.GEN_AI_REQUEST_MODEL] == "m-2"
    assert sc.GEN_AI_INPUT_MESSAGES not in attrs and sc.GEN_AI_OUTPUT_MESSAGES not in attrs


def test_llm_with_plain_text_in_and_out(t, exporter):
    @t(kind="llm", name="scripted")
    def reply(prompt: str) -> str:
        return "hello"

    reply("hi")
    attrs = only_span(exporter).attributes
    assert json.loads(attrs[sc.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert json.loads(attrs[sc.GEN_AI_OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "hello"}], "finish_reason": "stop"}
    ]


def test_bare_decorator_makes_a_chain_span(t, exporter, provider):
    @traced
    def untargeted(x: int) -> int:  # no provider given: uses the global, which is not configured here
        return x + 1

    @t
    def step(x: int, *, scale: float = 1.0) -> float:
        return x * scale

    @t()
    def other() -> None:
        return None

    assert untargeted(1) == 2
    assert step(2, scale=1.5) == 3.0
    other()
    step_span, other_span = exporter.get_finished_spans()
    assert step_span.name == "step"
    assert step_span.kind is SpanKind.INTERNAL
    assert step_span.attributes[sc.AGENTOTEL_KIND] == "chain"
    assert json.loads(step_span.attributes[sc.AGENTOTEL_INPUT]) == {"x": 2, "scale": 1.5}
    assert json.loads(step_span.attributes[sc.AGENTOTEL_OUTPUT]) == 3.0
    assert sc.GEN_AI_OPERATION_NAME not in step_span.attributes
    assert other_span.attributes[sc.AGENTOTEL_OUTPUT] == "null"


def test_capture_can_be_turned_off(t, exporter):
    @t(kind="tool", capture_args=False, capture_result=False)
    def secret_tool(data: str) -> str:
        return data

    @t(kind="agent", capture_args=False, capture_result=False)
    def quiet_agent(question: str) -> str:
        return secret_tool(question)

    quiet_agent("private question")
    for span in exporter.get_finished_spans():
        values = " ".join(str(v) for v in span.attributes.values())
        assert "private question" not in values
    spans = spans_by_name(exporter)
    assert sc.GEN_AI_TOOL_CALL_ARGUMENTS not in spans["execute_tool secret_tool"].attributes
    assert sc.GEN_AI_TOOL_CALL_ID in spans["execute_tool secret_tool"].attributes
    assert sc.GEN_AI_INPUT_MESSAGES not in spans["invoke_agent quiet_agent"].attributes


# --- structure ----------------------------------------------------------------------------------------------


def test_tools_called_by_an_agent_are_its_children(t, exporter):
    @t(kind="tool")
    def search(query: str) -> list[str]:
        return [query]

    @t(kind="tool")
    def summarise(texts: list[str]) -> str:
        return " ".join(texts)

    @t(kind="agent")
    def agent(question: str) -> str:
        return summarise(search(question))

    with trace.get_tracer("app", tracer_provider=None).start_as_current_span("outside"):
        pass  # the global (unconfigured) tracer: must not interfere
    agent("q")
    spans = spans_by_name(exporter)
    root = spans["invoke_agent agent"]
    assert root.parent is None
    for name in ("execute_tool search", "execute_tool summarise"):
        assert parent_id(spans[name]) == root.context.span_id
        assert spans[name].context.trace_id == root.context.trace_id
    assert spans["execute_tool search"].end_time <= spans["execute_tool summarise"].start_time


def test_an_application_span_around_an_agent_is_its_parent(t, exporter, provider):
    @t(kind="agent")
    def agent() -> str:
        return "ok"

    with provider.get_tracer("app").start_as_current_span("request") as outer:
        agent()
    spans = spans_by_name(exporter)
    assert parent_id(spans["invoke_agent agent"]) == outer.get_span_context().span_id


# --- errors -------------------------------------------------------------------------------------------------


class ToolFailure(RuntimeError):
    pass


def test_exception_is_recorded_and_reraised_unchanged(t, exporter):
    error = ToolFailure("backend down")

    @t(kind="tool")
    def fragile(x: int) -> int:
        raise error

    with pytest.raises(ToolFailure) as caught:
        fragile(1)
    assert caught.value is error
    assert traceback.extract_tb(caught.value.__traceback__)[-1].name == "fragile"  # the raising frame is kept
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "ToolFailure: backend down"
    assert span.attributes[sc.ERROR_TYPE] == f"{__name__}.ToolFailure"
    (event,) = span.events
    assert event.name == "exception"
    assert event.attributes["exception.type"].endswith("ToolFailure")
    assert event.attributes["exception.message"] == "backend down"
    assert sc.GEN_AI_TOOL_CALL_RESULT not in span.attributes


def test_builtin_exception_error_type_is_unqualified_and_parent_is_unaffected(t, exporter):
    @t(kind="tool")
    def divide(a: int, b: int) -> float:
        return a / b

    @t(kind="agent")
    def agent() -> str:
        try:
            divide(1, 0)
        except ZeroDivisionError:
            return "recovered"
        return "no"

    assert agent() == "recovered"
    spans = spans_by_name(exporter)
    assert spans["execute_tool divide"].attributes[sc.ERROR_TYPE] == "ZeroDivisionError"
    assert spans["invoke_agent agent"].status.status_code is StatusCode.UNSET


async def test_async_exception_is_recorded_and_reraised(t, exporter):
    @t(kind="tool")
    async def fetch() -> str:
        await asyncio.sleep(0)
        raise KeyError("missing")

    with pytest.raises(KeyError):
        await fetch()
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ERROR_TYPE] == "KeyError"


# --- generators ---------------------------------------------------------------------------------------------


def test_generator_span_covers_the_whole_iteration(t, exporter, provider):
    @t(kind="tool")
    def lookup(word: str) -> str:
        return word.upper()

    @t(kind="agent")
    def stream_answer(question: str):
        for word in question.split():
            yield lookup(word) + " "
        return "done"

    consumer_tracer = provider.get_tracer("consumer")
    gen = stream_answer("a b c")
    assert exporter.get_finished_spans() == ()  # nothing runs before iteration starts
    chunks = []
    for chunk in gen:
        with consumer_tracer.start_as_current_span("consumer step"):
            chunks.append(chunk)
        assert "invoke_agent stream_answer" not in spans_by_name(exporter)  # still open
    assert chunks == ["A ", "B ", "C "]
    spans = exporter.get_finished_spans()
    agent = next(s for s in spans if s.name == "invoke_agent stream_answer")
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    consumer = [s for s in spans if s.name == "consumer step"]
    assert len(tools) == 3 and all(parent_id(s) == agent.context.span_id for s in tools)
    assert all(s.parent is None for s in consumer)  # the consumer's work is not inside the generator's span
    assert agent.end_time >= max(s.end_time for s in tools)
    assert json.loads(agent.attributes[sc.AGENTOTEL_OUTPUT]) == "A B C "


def test_generator_send_throw_and_return_value_pass_through(t, exporter):
    @t
    def echo():
        received = []
        while True:
            try:
                value = yield len(received)
            except ValueError:
                received.append("thrown")
                continue
            if value is None:
                return received
            received.append(value)

    gen = echo()
    assert next(gen) == 0
    assert gen.send("x") == 1
    assert gen.throw(ValueError("boom")) == 2  # handled inside the function, which yields again
    with pytest.raises(StopIteration) as stop:
        gen.send(None)
    assert stop.value.value == ["x", "thrown"]  # the return value reaches `yield from` callers
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.UNSET


def test_abandoned_generator_ends_its_span_on_close_and_on_collection(t, exporter):
    closed = []

    @t(kind="tool")
    def numbers():
        try:
            yield from range(100)
        finally:
            closed.append(True)

    gen = numbers()
    assert [next(gen), next(gen)] == [0, 1]
    gen.close()
    assert closed == [True]
    (first,) = exporter.get_finished_spans()
    assert first.status.status_code is StatusCode.UNSET
    assert json.loads(first.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == [0, 1]

    gen = numbers()
    next(gen)
    del gen
    gc.collect()
    assert closed == [True, True]
    assert len(exporter.get_finished_spans()) == 2

    never_started = numbers()
    del never_started
    gc.collect()
    assert len(exporter.get_finished_spans()) == 2  # no iteration, no span


def test_generator_exception_is_recorded(t, exporter):
    @t
    def broken():
        yield 1
        raise ToolFailure("mid-stream")

    with pytest.raises(ToolFailure):
        list(broken())
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ERROR_TYPE].endswith("ToolFailure")


async def test_async_generator_full_and_abandoned(t, exporter):
    @t(kind="tool")
    async def inner(x: int) -> int:
        await asyncio.sleep(0)
        return x * 10

    @t(kind="agent")
    async def stream(n: int):
        for i in range(n):
            yield await inner(i)

    assert [item async for item in stream(3)] == [0, 10, 20]
    spans = exporter.get_finished_spans()
    agent = next(s for s in spans if s.name == "invoke_agent stream")
    assert [parent_id(s) for s in spans if s.name == "execute_tool inner"] == [agent.context.span_id] * 3
    assert json.loads(agent.attributes[sc.AGENTOTEL_OUTPUT]) == [0, 10, 20]
    exporter.clear()

    agen = stream(10)
    assert await agen.__anext__() == 0
    await agen.aclose()
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool inner", "invoke_agent stream"]
    exporter.clear()

    agen = stream(10)
    async for _ in agen:
        break
    del agen
    gc.collect()  # asyncio's async-generator finaliser schedules aclose() on the loop
    for _ in range(50):
        if any(s.name == "invoke_agent stream" for s in exporter.get_finished_spans()):
            break
        await asyncio.sleep(0.01)
    assert any(s.name == "invoke_agent stream" for s in exporter.get_finished_spans())


async def test_async_generator_asend_reaches_the_function(t, exporter):
    @t
    async def accumulate():
        total = 0
        while True:
            value = yield total
            total += value

    agen = accumulate()
    assert await agen.asend(None) == 0
    assert await agen.asend(5) == 5
    assert await agen.asend(2) == 7
    await agen.aclose()
    assert len(exporter.get_finished_spans()) == 1


# --- concurrency --------------------------------------------------------------------------------------------


async def test_gather_and_create_task_keep_each_agents_tools_under_it(t, exporter):
    @t(kind="tool")
    async def step(label: str) -> str:
        await asyncio.sleep(0.001)
        return label

    @t(kind="agent")
    async def agent(name: str) -> list[str]:
        first = await asyncio.gather(step(f"{name}-1"), step(f"{name}-2"))
        task = asyncio.create_task(step(f"{name}-3"))
        await asyncio.sleep(0)
        return [*first, await task]

    results = await asyncio.gather(agent("a"), agent("b"), agent("c"))
    assert results == [[f"{n}-1", f"{n}-2", f"{n}-3"] for n in "abc"]
    spans = exporter.get_finished_spans()
    agents = {
        json.loads(s.attributes[sc.AGENTOTEL_INPUT])["name"]: s
        for s in spans
        if s.name == "invoke_agent agent"
    }
    assert len(agents) == 3
    for span in spans:
        if span.name != "execute_tool step":
            continue
        owner = json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["label"].split("-")[0]
        assert parent_id(span) == agents[owner].context.span_id
        assert span.context.trace_id == agents[owner].context.trace_id
    assert len({s.context.trace_id for s in agents.values()}) == 3


def test_threads_started_with_copy_context_keep_the_parent(t, exporter):
    @t(kind="tool")
    def work(i: int) -> int:
        return i * i

    @t(kind="agent")
    def agent() -> list[int]:
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = [pool.submit(contextvars.copy_context().run, work, i) for i in range(6)]
            return [f.result() for f in futures]

    assert agent() == [0, 1, 4, 9, 16, 25]
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "invoke_agent agent")
    tools = [s for s in spans if s.name == "execute_tool work"]
    assert len(tools) == 6
    assert all(parent_id(s) == root.context.span_id for s in tools)


def test_concurrent_threads_do_not_mix_contexts(t, exporter):
    @t(kind="tool")
    def work(owner: str) -> str:
        return owner

    @t(kind="agent")
    def agent(owner: str) -> str:
        for _ in range(20):
            work(owner)
        return owner

    threads = [threading.Thread(target=agent, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spans = exporter.get_finished_spans()
    agents = {
        json.loads(s.attributes[sc.AGENTOTEL_INPUT])["owner"]: s
        for s in spans
        if s.kind is SpanKind.INTERNAL and s.name.startswith("invoke_agent")
    }
    for span in spans:
        if span.name == "execute_tool work":
            owner = json.loads(span.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS])["owner"]
            assert parent_id(span) == agents[owner].context.span_id


# --- methods and introspection ------------------------------------------------------------------------------


def test_methods_static_and_class_methods(t, exporter):
    class Toolbox:
        factor = 3

        def __init__(self) -> None:
            self.calls = 0

        @t(kind="tool")
        def scale(self, x: int) -> int:
            self.calls += 1
            return x * self.factor

        @t(kind="tool")
        @staticmethod
        def add(a: int, b: int) -> int:
            return a + b

        @staticmethod
        @t(kind="tool")
        def sub(a: int, b: int) -> int:
            return a - b

        @t(kind="tool")
        @classmethod
        def make(cls, n: int) -> str:
            return f"{cls.__name__}:{n}"

        @classmethod
        @t(kind="tool")
        def describe(cls) -> str:
            return cls.__name__

    box = Toolbox()
    assert box.scale(2) == 6 and box.calls == 1
    assert Toolbox.add(1, 2) == 3 and box.add(1, 2) == 3
    assert Toolbox.sub(5, 2) == 3
    assert Toolbox.make(4) == "Toolbox:4" and box.make(4) == "Toolbox:4"
    assert Toolbox.describe() == "Toolbox"
    args = {
        s.name: json.loads(s.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) for s in exporter.get_finished_spans()
    }
    assert args == {
        "execute_tool scale": {"x": 2},
        "execute_tool add": {"a": 1, "b": 2},
        "execute_tool sub": {"a": 5, "b": 2},
        "execute_tool make": {"n": 4},
        "execute_tool describe": {},
    }
    assert len(exporter.get_finished_spans()) == 7


def test_decorated_functions_keep_signature_name_doc_and_nature(t):
    def plain(a: int, b: str = "x", *args: int, key: bool = False, **kw: str) -> str:
        """Plain doc."""
        return b

    async def coro(a: int) -> int:
        """Coro doc."""
        return a

    def gen(n: int):
        """Gen doc."""
        yield n

    async def agen(n: int):
        """Agen doc."""
        yield n

    for fn, check in (
        (plain, inspect.isfunction),
        (coro, inspect.iscoroutinefunction),
        (gen, inspect.isgeneratorfunction),
        (agen, inspect.isasyncgenfunction),
    ):
        for kind in ("agent", "tool", "llm", "chain"):
            wrapped = t(kind=kind)(fn)
            assert inspect.signature(wrapped) == inspect.signature(fn)
            assert wrapped.__name__ == fn.__name__
            assert wrapped.__qualname__ == fn.__qualname__
            assert wrapped.__doc__ == fn.__doc__
            assert wrapped.__wrapped__ is fn
            assert check(wrapped)
            assert inspect.iscoroutinefunction(wrapped) == inspect.iscoroutinefunction(fn)
            assert inspect.isgeneratorfunction(wrapped) == inspect.isgeneratorfunction(fn)
            assert inspect.isasyncgenfunction(wrapped) == inspect.isasyncgenfunction(fn)


def test_arguments_with_varargs_and_kwargs(t, exporter):
    @t
    def flexible(a, *rest, flag=False, **extra):
        return None

    flexible(1, 2, 3, flag=True, colour="red")
    assert json.loads(only_span(exporter).attributes[sc.AGENTOTEL_INPUT]) == {
        "a": 1,
        "rest": [2, 3],
        "flag": True,
        "colour": "red",
    }


# --- expected tools -----------------------------------------------------------------------------------------


def test_set_expected_tools_sets_the_nearest_enclosing_agent(t, exporter):
    @t(kind="tool")
    def inner_tool() -> bool:
        return set_expected_tools(["inner_tool", "other"])  # from inside a tool: goes to the nearest agent

    @t(kind="agent")
    def sub_agent() -> bool:
        return inner_tool()

    @t(kind="agent", expected_tools=["decorator_default"])
    def main_agent() -> bool:
        assert set_expected_tools([ToolCall("sub_agent")])
        return sub_agent()

    assert main_agent() is True
    spans = spans_by_name(exporter)
    assert list(spans["invoke_agent main_agent"].attributes[sc.AGENTOTEL_EXPECTED_TOOLS]) == ["sub_agent"]
    assert list(spans["invoke_agent sub_agent"].attributes[sc.AGENTOTEL_EXPECTED_TOOLS]) == [
        "inner_tool",
        "other",
    ]
    assert sc.AGENTOTEL_EXPECTED_TOOLS not in spans["execute_tool inner_tool"].attributes


def test_set_expected_tools_outside_a_run(t, provider, caplog):
    assert set_expected_tools(["x"]) is False  # nothing active at all: silently nothing
    with (
        caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"),
        provider.get_tracer("app").start_as_current_span("not an agent"),
    ):
        assert set_expected_tools(["x"]) is False
        assert set_expected_tools(["x"]) is False
    assert len([r for r in caplog.records if "outside any agent run" in r.getMessage()]) == 1


def test_set_expected_tools_on_another_instrumentations_agent_span(provider, exporter):
    tracer = provider.get_tracer("framework")
    with tracer.start_as_current_span(
        "invoke_agent x", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    ):
        assert set_expected_tools(["a"]) is True
    assert list(only_span(exporter).attributes[sc.AGENTOTEL_EXPECTED_TOOLS]) == ["a"]


@pytest.mark.parametrize("bad", ["search", None, ["ok", 3], [""], 42])
def test_expected_tools_must_be_a_list_of_names(bad, t):
    with pytest.raises(TypeError, match="expected tools"):
        set_expected_tools(bad)
    if bad is not None:
        with pytest.raises(TypeError, match="expected tools"):
            t(kind="agent", expected_tools=bad)


# --- capture: secrets, odd values, limits -------------------------------------------------------------------


def test_secret_named_arguments_and_keys_are_redacted(t, exporter):
    @t(kind="tool")
    def call_api(
        url: str,
        api_key: str,
        Password: str,
        auth_token: str,
        max_tokens: int,
        headers: dict,
        clientSecret: str,
    ) -> dict:
        return {"status": 200, "Authorization": "Bearer returned", "body": "fine"}

    call_api(
        "https://x",
        "sk-live",
        "hunter2",
        "tok",
        256,
        {"Authorization": "Bearer abc", "Accept": "json", "nested": [{"x-api-key": "k"}]},
        "shh",
    )
    attrs = only_span(exporter).attributes
    text = attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] + attrs[sc.GEN_AI_TOOL_CALL_RESULT]
    for secret in ("sk-live", "hunter2", 'tok"', "Bearer abc", '"k"', "shh", "Bearer returned"):
        assert secret not in text
    arguments = json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert arguments["api_key"] == arguments["Password"] == arguments["auth_token"] == "[REDACTED]"
    assert arguments["clientSecret"] == "[REDACTED]"
    assert arguments["max_tokens"] == 256  # a token count is not a secret
    assert arguments["headers"] == {
        "Authorization": "[REDACTED]",
        "Accept": "json",
        "nested": [{"x-api-key": "[REDACTED]"}],
    }
    assert json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT]) == {
        "status": 200,
        "Authorization": "[REDACTED]",
        "body": "fine",
    }


def test_agent_single_secret_argument_is_redacted_in_messages_too(t, exporter):
    @t(kind="agent")
    def login(password: str) -> str:
        return "ok"

    login("hunter2")
    attrs = only_span(exporter).attributes
    assert "hunter2" not in attrs[sc.GEN_AI_INPUT_MESSAGES] + attrs[sc.AGENTOTEL_INPUT]


class Opaque:
    def __repr__(self) -> str:
        return "Opaque(" + "x" * 5000 + ")"


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@dataclass
class Point:
    x: int
    y: int


def test_non_json_values_are_reprd_truncated_or_converted(t, exporter):
    @t(kind="tool")
    def odd(a, b, c, d, e):
        return Opaque()

    odd(Opaque(), Hostile(), Point(1, 2), {1, 2}, {(1, 2): "tuple key"})
    attrs = only_span(exporter).attributes
    arguments = json.loads(attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert arguments["a"].startswith("Opaque(xxx") and "...[truncated" in arguments["a"]
    assert len(arguments["a"]) < 1100
    assert arguments["b"] == "<unrepresentable Hostile>"
    assert arguments["c"] == {"x": 1, "y": 2}
    assert arguments["d"] == [1, 2]
    assert arguments["e"] == {"(1, 2)": "tuple key"}
    result = json.loads(attrs[sc.GEN_AI_TOOL_CALL_RESULT])
    assert result.startswith("Opaque(") and "...[truncated" in result


def test_captured_values_respect_the_size_limit_and_stay_json(t, exporter):
    @t(kind="tool", max_chars=500)
    def big(text: str, rows: list) -> list:
        return rows

    big("y" * 10_000, [{"id": i, "text": "z" * 50} for i in range(1000)])
    attrs = only_span(exporter).attributes
    arguments = attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS]
    result = attrs[sc.GEN_AI_TOOL_CALL_RESULT]
    assert len(arguments) <= 500 and len(result) <= 500
    parsed = json.loads(arguments)
    assert parsed["text"].startswith("yyy") and "truncated" in parsed["text"]
    assert isinstance(json.loads(result), list)


def test_max_chars_from_environment(monkeypatch, t, exporter):
    monkeypatch.setenv("AGENTOTEL_TRACED_MAX_CHARS", "100")

    @t(kind="tool")
    def echo(text: str) -> str:
        return text

    echo("q" * 1000)
    assert len(only_span(exporter).attributes[sc.GEN_AI_TOOL_CALL_RESULT]) < 150
    monkeypatch.setenv("AGENTOTEL_TRACED_MAX_CHARS", "lots")
    with pytest.raises(ValueError, match="AGENTOTEL_TRACED_MAX_CHARS"):
        t(kind="tool")(echo)


# --- robustness ---------------------------------------------------------------------------------------------


class _BrokenTracer:
    def start_span(self, *args, **kwargs):
        raise RuntimeError("tracer exploded")


class _BrokenProvider:
    def get_tracer(self, *args, **kwargs):
        return _BrokenTracer()


def test_failure_to_start_a_span_never_breaks_the_function(caplog):
    @traced(kind="tool", tracer_provider=_BrokenProvider())
    def add(a: int, b: int) -> int:
        return a + b

    @traced(kind="tool", tracer_provider=_BrokenProvider())
    async def add_async(a: int, b: int) -> int:
        return a + b

    @traced(tracer_provider=_BrokenProvider())
    def numbers():
        yield from (1, 2)

    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"):
        assert add(1, 2) == 3
        assert add(2, 2) == 4
        assert asyncio.run(add_async(1, 1)) == 2
        assert list(numbers()) == [1, 2]
    failures = [r for r in caplog.records if "tracer exploded" in r.getMessage()]
    assert len(failures) == 1  # logged once per kind of failure


def test_failure_capturing_a_result_still_ends_the_span(t, exporter, monkeypatch, caplog):
    def explode(self, result):
        raise RuntimeError("capture bug")

    monkeypatch.setattr(SpanShape, "end_attributes", explode)

    @t(kind="tool")
    def ok() -> str:
        return "fine"

    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"):
        assert ok() == "fine"
        assert ok() == "fine"
    assert len(exporter.get_finished_spans()) == 2
    assert len([r for r in caplog.records if "capture bug" in r.getMessage()]) == 1


def test_failure_capturing_arguments_still_traces_the_call(t, exporter, monkeypatch):
    def explode(self, args, kwargs):
        raise RuntimeError("argument bug")

    monkeypatch.setattr(SpanShape, "start_attributes", explode)

    @t(kind="tool")
    def ok(x: int) -> int:
        return x

    assert ok(5) == 5
    span = only_span(exporter)
    assert span.name == "execute_tool ok"
    assert span.attributes[sc.GEN_AI_TOOL_NAME] == "ok"


def test_untraced_when_nothing_is_configured(monkeypatch):
    # whatever other tests did to this process's global provider: simulate the unconfigured API
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    monkeypatch.setattr(state, "default_provider", None)  # an earlier configure() in this worker sets it

    @traced(kind="agent")
    def agent(x: int) -> int:
        assert set_expected_tools(["a"]) is False
        return x

    assert agent(3) == 3


def test_decorator_argument_errors():
    with pytest.raises(ValueError, match="kind must be one of"):
        traced(kind="workflow")
    with pytest.raises(TypeError, match="decorates a function"):
        traced("my-name")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_chars"):
        traced(max_chars=0)


def test_a_disabled_sdk_costs_no_capture(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    disabled = TracerProvider()  # hands out no-op tracers

    def explode(self, args, kwargs):
        raise AssertionError("arguments must not be captured when nothing records them")

    monkeypatch.setattr(SpanShape, "start_attributes", explode)

    @traced(kind="tool", tracer_provider=disabled)
    def tool(x: int) -> int:
        return x

    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"):
        assert tool(4) == 4
    assert not caplog.records


async def test_a_cancelled_agent_run_is_not_a_success(t, exporter):
    started = asyncio.Event()

    @t(kind="agent")
    async def slow_agent() -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    task = asyncio.create_task(slow_agent())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = only_span(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[sc.ERROR_TYPE] == "asyncio.exceptions.CancelledError"
