"""``@traced``: one decorator that turns a plain Python function into an OpenTelemetry GenAI span.

The wrapper is of the same nature as the function (sync, ``async def``, generator, async generator), so
``inspect.iscoroutinefunction`` & co. and frameworks that dispatch on them keep working; ``functools.wraps``
keeps the name, docstring, ``__wrapped__`` and hence ``inspect.signature``.

Context: the span is made current with ``context.attach`` only while the function's own code runs. A
generator's span is current during each of its steps, never while the consumer runs between them, so context
tokens are always detached where they were attached and the consumer's spans do not become the
generator's children.

Robustness: tracing code runs in ``try`` blocks apart from the user's code. If it fails the function still
runs (untraced, or traced without the failed attribute) and the failure is logged once per kind; the user's
own exceptions pass through unchanged (same object, traceback intact) after being recorded on the span.

Only the OpenTelemetry API is imported here: the SDK and exporters are ``configure()``'s business.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, Status, StatusCode

import agentotel_eval
from agentotel_eval.tracing import state
from agentotel_eval.tracing.capture import DEFAULT_MAX_CHARS
from agentotel_eval.tracing.expectations import tool_names, trajectory_json
from agentotel_eval.tracing.failures import report_failure
from agentotel_eval.tracing.shape import KINDS, MAX_GENERATOR_ITEMS, SpanShape, generator_output

F = TypeVar("F", bound=Callable[..., Any])

# Module-level names for the API functions on the hot path: one global lookup instead of global + attribute.
get_current = otel_context.get_current
set_span_in_context = trace.set_span_in_context
attach = otel_context.attach
detach = otel_context.detach

TRACER_NAME = "agentotel_eval.tracing"
_MAX_CHARS_ENV = "AGENTOTEL_TRACED_MAX_CHARS"
_NO_OP_PROVIDERS = (ProxyTracerProvider, NoOpTracerProvider)


class _TracerSource:
    """The tracer for one decorated function, re-resolved only when the provider it should use changes.

    Provider order: the decorator's ``tracer_provider=``, then the one ``configure()`` chose, then the
    OpenTelemetry global. While that is the API's proxy (nothing configured), there is no tracer and the
    function runs undecorated: no span, no argument capture, nearly no cost.
    """

    __slots__ = ("_cached", "_explicit")

    def __init__(self, explicit: Any) -> None:
        self._explicit = explicit
        self._cached: tuple[Any, Any] = (None, None)

    def get(self) -> Any:
        provider = self._explicit
        if provider is None:
            provider = state.default_provider
            if provider is None:
                provider = trace.get_tracer_provider()
        cached_provider, tracer = self._cached
        if provider is cached_provider:
            return tracer
        if isinstance(provider, _NO_OP_PROVIDERS):
            tracer = None
        else:
            tracer = provider.get_tracer(TRACER_NAME, agentotel_eval.__version__)
            if isinstance(tracer, trace.NoOpTracer):  # e.g. an SDK provider with OTEL_SDK_DISABLED=true
                tracer = None
        self._cached = (provider, tracer)
        return tracer


def _start_span(shape: SpanShape, tracer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(span, parent context)``. The current context is looked up once and passed to the SDK, which would
    otherwise look it up four times (parent span, sampler, trace state, processors)."""
    try:
        attributes = shape.start_attributes(args, kwargs)
    except Exception as exc:
        report_failure("capturing arguments", exc)
        attributes = shape.static_attributes.copy()
    parent = get_current()
    span = tracer.start_span(shape.span_name, context=parent, kind=shape.span_kind, attributes=attributes)
    return span, parent


def _span_context(shape: SpanShape, span: Any, parent: Any) -> Any:
    ctx = set_span_in_context(span, parent)
    if shape.is_agent:
        ctx = otel_context.set_value(state.AGENT_SPAN_KEY, span, ctx)
    return ctx


def _open(shape: SpanShape, source: _TracerSource, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """For generators: start the span (child of the current context); ``(span, its context)`` or None."""
    try:
        tracer = source.get()
        if tracer is None:
            return None
        span, parent = _start_span(shape, tracer, args, kwargs)
        return span, _span_context(shape, span, parent)
    except Exception as exc:
        report_failure("starting a span", exc)
        return None


def _enter(shape: SpanShape, source: _TracerSource, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """For coroutines: start the span and make it current; ``(span, token)`` or None (untraced)."""
    try:
        tracer = source.get()
        if tracer is None:
            return None
        span, parent = _start_span(shape, tracer, args, kwargs)
    except Exception as exc:
        report_failure("starting a span", exc)
        return None
    try:
        return span, attach(_span_context(shape, span, parent))
    except Exception as exc:
        report_failure("attaching the span context", exc)
        return span, None  # still recorded and ended, just not the parent of nested spans


def _close_error(shape: SpanShape, span: Any, exc: BaseException) -> None:
    try:
        if span.is_recording():
            span.set_attributes(shape.error_attributes(exc))
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    except Exception as failure:
        report_failure("recording an exception", failure)
    try:
        span.end()
    except Exception as failure:
        report_failure("ending a span", failure)


def _attach(ctx: Any) -> Any:
    try:
        return otel_context.attach(ctx)
    except Exception as exc:
        report_failure("attaching the span context", exc)
        return None


def _detach(token: Any) -> None:
    if token is not None:
        try:
            otel_context.detach(token)
        except Exception as exc:
            report_failure("detaching the span context", exc)


def _exit_ok(shape: SpanShape, entered: tuple[Any, Any], result: Any) -> None:
    span, token = entered
    if token is not None:
        try:
            otel_context.detach(token)
        except Exception as exc:
            report_failure("detaching the span context", exc)
    try:
        if shape.capture_result and span.is_recording():
            attributes = shape.end_attributes(result)
            if len(attributes) == 1:  # one attribute: set_attribute is cheaper than set_attributes in the SDK
                ((key, value),) = attributes.items()
                span.set_attribute(key, value)
            else:
                span.set_attributes(attributes)
    except Exception as exc:
        report_failure("capturing the result", exc)
    try:
        span.end()
    except Exception as exc:
        report_failure("ending a span", exc)


def _exit_error(shape: SpanShape, entered: tuple[Any, Any], exc: BaseException) -> None:
    span, token = entered
    _detach(token)
    _close_error(shape, span, exc)


def _wrap_function(fn: Callable[..., Any], shape: SpanShape, source: _TracerSource) -> Callable[..., Any]:
    # The hottest path (a plain function, usually a tool): ``_enter``/``_exit_ok`` written out inline, with
    # what depends only on the function read once here, because every Python call and attribute lookup on this
    # path costs a measurable share of a span. Same steps and same failure handling as
    # ``_enter``/``_exit_ok``.
    start_attributes, end_attributes = shape.start_attributes, shape.end_attributes
    span_name, span_kind, is_agent = shape.span_name, shape.span_kind, shape.is_agent
    capture_result = shape.capture_result

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        span = None
        try:
            tracer = source.get()
            if tracer is not None:
                try:
                    attributes = start_attributes(args, kwargs)
                except Exception as exc:
                    report_failure("capturing arguments", exc)
                    attributes = shape.static_attributes.copy()
                parent = get_current()
                span = tracer.start_span(span_name, context=parent, kind=span_kind, attributes=attributes)
        except Exception as exc:
            report_failure("starting a span", exc)
        if span is None:  # untraced: nothing configured, or tracing failed
            return fn(*args, **kwargs)
        try:
            ctx = set_span_in_context(span, parent)
            if is_agent:
                ctx = otel_context.set_value(state.AGENT_SPAN_KEY, span, ctx)
            token = attach(ctx)
        except Exception as exc:
            report_failure("attaching the span context", exc)
            token = None  # still recorded and ended, just not the parent of nested spans
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            _detach(token)
            _close_error(shape, span, exc)
            raise
        if token is not None:
            try:
                detach(token)
            except Exception as exc:
                report_failure("detaching the span context", exc)
        try:
            if capture_result and span.is_recording():
                attributes = end_attributes(result)
                if len(attributes) == 1:  # one attribute: set_attribute is cheaper than set_attributes
                    ((key, value),) = attributes.items()
                    span.set_attribute(key, value)
                else:
                    span.set_attributes(attributes)
        except Exception as exc:
            report_failure("capturing the result", exc)
        try:
            span.end()
        except Exception as exc:
            report_failure("ending a span", exc)
        return result

    return wrapper


def _wrap_coroutine(fn: Callable[..., Any], shape: SpanShape, source: _TracerSource) -> Callable[..., Any]:
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        entered = _enter(shape, source, args, kwargs)
        if entered is None:
            return await fn(*args, **kwargs)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            _exit_error(shape, entered, exc)
            raise
        _exit_ok(shape, entered, result)
        return result

    return wrapper


class _Collected:
    """The items a traced generator yielded so far (bounded), to record as its output."""

    __slots__ = ("items", "keep")

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        if self.keep and len(self.items) < MAX_GENERATOR_ITEMS:
            self.items.append(item)

    def output(self, returned: Any) -> Any:
        return returned if returned is not None and not self.items else generator_output(self.items)


def _wrap_generator(fn: Callable[..., Any], shape: SpanShape, source: _TracerSource) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opened = _open(shape, source, args, kwargs)
        if opened is None:
            return (yield from fn(*args, **kwargs))
        span, ctx = opened
        collected = _Collected(shape.capture_result)
        token = _attach(ctx)
        try:
            generator = fn(*args, **kwargs)
        except BaseException as exc:
            _detach(token)
            _close_error(shape, span, exc)
            raise
        _detach(token)
        to_send: Any = None
        to_throw: BaseException | None = None
        while True:
            token = _attach(ctx)
            try:
                item = generator.throw(to_throw) if to_throw is not None else generator.send(to_send)
            except StopIteration as stop:
                _detach(token)
                _exit_ok(shape, (span, None), collected.output(stop.value))
                return stop.value
            except BaseException as exc:
                _detach(token)
                _close_error(shape, span, exc)
                raise
            finally:
                to_throw = None
            _detach(token)
            collected.add(item)
            try:
                to_send = yield item
            except GeneratorExit:  # the consumer closed us, or dropped us and we are being collected
                token = _attach(ctx)
                try:
                    generator.close()
                except BaseException as exc:
                    _detach(token)
                    _close_error(shape, span, exc)
                    raise
                _detach(token)
                _exit_ok(shape, (span, None), collected.output(None))
                raise
            except BaseException as exc:
                to_throw, to_send = exc, None

    return wrapper


def _wrap_async_generator(
    fn: Callable[..., Any], shape: SpanShape, source: _TracerSource
) -> Callable[..., Any]:
    # No ``async for`` shortcut even when untraced: asend/athrow/aclose must reach the function unchanged.
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        opened = _open(shape, source, args, kwargs)
        span, ctx = opened if opened is not None else (None, None)
        collected = _Collected(shape.capture_result and span is not None)
        token = _attach(ctx) if span is not None else None
        try:
            generator = fn(*args, **kwargs)
        except BaseException as exc:
            _detach(token)
            if span is not None:
                _close_error(shape, span, exc)
            raise
        _detach(token)
        to_send: Any = None
        to_throw: BaseException | None = None
        while True:
            token = _attach(ctx) if span is not None else None
            try:
                if to_throw is not None:
                    item = await generator.athrow(to_throw)
                else:
                    item = await generator.asend(to_send)
            except StopAsyncIteration:
                _detach(token)
                if span is not None:
                    _exit_ok(shape, (span, None), collected.output(None))
                return
            except BaseException as exc:
                _detach(token)
                if span is not None:
                    _close_error(shape, span, exc)
                raise
            finally:
                to_throw = None
            _detach(token)
            collected.add(item)
            try:
                to_send = yield item
            except GeneratorExit:  # the consumer closed us (aclose), or we were dropped and finalised
                token = _attach(ctx) if span is not None else None
                try:
                    await generator.aclose()
                except BaseException as exc:
                    _detach(token)
                    if span is not None:
                        _close_error(shape, span, exc)
                    raise
                _detach(token)
                if span is not None:
                    _exit_ok(shape, (span, None), collected.output(None))
                raise
            except BaseException as exc:
                to_throw, to_send = exc, None

    return wrapper


def _max_chars_default() -> int:
    raw = os.environ.get(_MAX_CHARS_ENV)
    if not raw:
        return DEFAULT_MAX_CHARS
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{_MAX_CHARS_ENV} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{_MAX_CHARS_ENV} must be a positive integer, got {raw!r}")
    return value


@overload
def traced(fn: F, /) -> F: ...


@overload
def traced(
    fn: None = None,
    /,
    *,
    kind: str = "chain",
    name: str | None = None,
    expected_tools: Iterable[Any] | None = None,
    expected_trajectory: Any = None,
    capture_args: bool = True,
    capture_result: bool = True,
    tracer_provider: Any = None,
    max_chars: int | None = None,
) -> Callable[[F], F]: ...


def traced(
    fn: Any = None,
    /,
    *,
    kind: str = "chain",
    name: str | None = None,
    expected_tools: Iterable[Any] | None = None,
    expected_trajectory: Any = None,
    capture_args: bool = True,
    capture_result: bool = True,
    tracer_provider: Any = None,
    max_chars: int | None = None,
) -> Any:
    """Trace every call of the decorated function as an OpenTelemetry GenAI span.

    Use bare (``@traced``: a ``chain`` span) or with options::

        @traced(kind="agent", expected_tools=["search", "summarise"])
        def answer(question: str) -> str: ...

        @traced(kind="tool")
        def search(query: str, tool_call_id: str | None = None) -> list[str]: ...

    kind: ``agent`` (``invoke_agent {name}``), ``tool`` (``execute_tool {name}``), ``llm``
    (``chat {name}``) or
        ``chain`` (a plain span ``{name}``). name: defaults to the function's ``__name__``.
    expected_tools: tool names (or ``ToolCall``s) this agent run should call; recorded as
        ``agentotel.eval.expected_tools`` for scoring. ``set_expected_tools()`` sets it from inside a run.
    expected_trajectory: a trajectory spec for this agent's runs (a dict such as ``{"steps":
    [{"tool": "search"},
        {"tool": "summarise", "optional": True}], "extra": "penalize"}``, a list of steps or JSON text), read
        here (a bad spec raises ``SpecError``) and recorded as ``agentotel.eval.expected_trajectory``;
        ``set_expected_trajectory()`` sets it from inside a run.
    capture_args / capture_result: record the arguments / return value as JSON (secret-named values redacted,
        non-JSON values as truncated ``repr``, at most ``max_chars`` characters each; default 16384 or the
        ``AGENTOTEL_TRACED_MAX_CHARS`` environment variable).
    tracer_provider: the provider to use; default: the one ``configure()`` set up, else the global one. While
        neither exists the function runs untraced at almost no cost.

    Works on functions, ``async def`` functions, generators and async generators (the span covers the whole
    iteration and ends when the consumer stops early), methods, static and class methods (in either decorator
    order). An exception is recorded on the span (``exception`` event, status ERROR, ``error.type``) and
    re-raised unchanged. A failure of the tracing itself never reaches the caller: it is logged
    once and swallowed.
    """
    if kind not in KINDS:
        raise ValueError(f"@traced kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if fn is not None and not callable(fn) and not isinstance(fn, staticmethod | classmethod):
        raise TypeError(f"@traced decorates a function; got {fn!r} (did you mean @traced(name=...)?)")
    expected = tool_names(expected_tools) if expected_tools is not None else None
    trajectory = trajectory_json(expected_trajectory) if expected_trajectory is not None else None
    if (expected is not None or trajectory is not None) and kind != "agent":
        raise ValueError(
            f"expected_tools and expected_trajectory describe an agent run: use them with "
            f"kind='agent', not {kind!r}"
        )
    limit = max_chars if max_chars is not None else _max_chars_default()
    if not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"max_chars must be a positive integer, got {max_chars!r}")

    def decorate(target: Any) -> Any:
        if isinstance(target, staticmethod | classmethod):
            return type(target)(decorate(target.__func__))
        if not callable(target):
            raise TypeError(f"@traced decorates a function; got {target!r}")
        shape = SpanShape(
            target,
            kind=kind,
            name=name,
            expected_tools=expected,
            expected_trajectory=trajectory,
            capture_args=capture_args,
            capture_result=capture_result,
            max_chars=limit,
        )
        source = _TracerSource(tracer_provider)
        if inspect.isasyncgenfunction(target):
            wrapper = _wrap_async_generator(target, shape, source)
        elif inspect.isgeneratorfunction(target):
            wrapper = _wrap_generator(target, shape, source)
        elif inspect.iscoroutinefunction(target):
            wrapper = _wrap_coroutine(target, shape, source)
        else:
            wrapper = _wrap_function(target, shape, source)
        return functools.wraps(target)(wrapper)

    return decorate(fn) if fn is not None else decorate
