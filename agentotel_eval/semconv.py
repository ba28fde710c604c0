"""Attribute and event names of every convention we read or write, in one place.

The GenAI names follow the OpenTelemetry GenAI semantic conventions (v1.41.1 docs; they moved to the
semantic-conventions-genai repository with the strings unchanged). Our own extension keys live under
``agentotel.`` and are documented here, next to the constants they extend.
"""

from __future__ import annotations

# --- OpenTelemetry GenAI ------------------------------------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_SYSTEM = "gen_ai.system"  # deprecated alias of gen_ai.provider.name
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_ID = "gen_ai.agent.id"
GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
GEN_AI_AGENT_VERSION = "gen_ai.agent.version"
GEN_AI_WORKFLOW_NAME = "gen_ai.workflow.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ERROR_TYPE = "error.type"

OP_CHAT = "chat"
OP_GENERATE_CONTENT = "generate_content"
OP_TEXT_COMPLETION = "text_completion"
OP_INVOKE_AGENT = "invoke_agent"
OP_INVOKE_WORKFLOW = "invoke_workflow"
OP_CREATE_AGENT = "create_agent"
OP_EXECUTE_TOOL = "execute_tool"
LLM_OPERATIONS = frozenset({OP_CHAT, OP_GENERATE_CONTENT, OP_TEXT_COMPLETION})
RUN_OPERATIONS = frozenset({OP_INVOKE_AGENT, OP_INVOKE_WORKFLOW})

# GenAI events (span events or log records).
EVENT_CHOICE = "gen_ai.choice"
EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"
EVENT_USER_MESSAGE = "gen_ai.user.message"
EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"
EVENT_TOOL_MESSAGE = "gen_ai.tool.message"
EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
EXCEPTION_EVENT = "exception"
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_STACKTRACE = "exception.stacktrace"

# Evaluation results (event attributes).
GEN_AI_EVALUATION_NAME = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"

# --- OpenInference ------------------------------------------------------------------------------------------
OI_SPAN_KIND = "openinference.span.kind"
OI_KIND_AGENT = "AGENT"
OI_KIND_TOOL = "TOOL"
OI_KIND_LLM = "LLM"
OI_KIND_CHAIN = "CHAIN"
OI_INPUT_VALUE = "input.value"
OI_INPUT_MIME_TYPE = "input.mime_type"
OI_OUTPUT_VALUE = "output.value"
OI_OUTPUT_MIME_TYPE = "output.mime_type"
OI_TOOL_NAME = "tool.name"
OI_TOOL_DESCRIPTION = "tool.description"
OI_TOOL_PARAMETERS = "tool.parameters"
OI_TOOL_ID = "tool.id"
OI_TOOL_CALL_ID = "tool_call.id"
OI_AGENT_NAME = "agent.name"
OI_LLM_INPUT_MESSAGES = "llm.input_messages"  # prefix of flattened keys
OI_LLM_OUTPUT_MESSAGES = "llm.output_messages"  # prefix of flattened keys
OI_LLM_TOOLS = "llm.tools"  # prefix: llm.tools.N.tool.json_schema

# --- OpenLLMetry / Traceloop --------------------------------------------------------------------------------
TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
TRACELOOP_WORKFLOW_NAME = "traceloop.workflow.name"
TRACELOOP_PROMPT_PREFIX = "gen_ai.prompt"  # gen_ai.prompt.N.* (history)
TRACELOOP_COMPLETION_PREFIX = "gen_ai.completion"  # gen_ai.completion.N.tool_calls.M.{id,name,arguments}
TRACELOOP_FUNCTIONS_PREFIX = "llm.request.functions"  # llm.request.functions.N.{name,description,parameters}

# --- Langfuse -----------------------------------------------------------------------------------------------
LANGFUSE_OBSERVATION_TYPE = "langfuse.observation.type"
LANGFUSE_OBSERVATION_INPUT = "langfuse.observation.input"
LANGFUSE_OBSERVATION_OUTPUT = "langfuse.observation.output"
LANGFUSE_OBSERVATION_LEVEL = "langfuse.observation.level"

# --- agentotel extensions -----------------------------------------------------------------------------------
#: string[] on an agent run span: the tools this run is expected to call (``@traced(expected_tools=...)``)
AGENTOTEL_EXPECTED_TOOLS = "agentotel.eval.expected_tools"
#: string (JSON) on an agent run span: the trajectory spec this run should follow
#: (``@traced(expected_trajectory=...)``, ``set_expected_trajectory(...)``)
AGENTOTEL_EXPECTED_TRAJECTORY = "agentotel.eval.expected_trajectory"
#: prefix of score attributes written back on the run span: ``agentotel.eval.<metric>.score|success|reason``
AGENTOTEL_EVAL_PREFIX = "agentotel.eval"
#: JSON input / output of a ``@traced`` agent or chain span (GenAI has no attribute for a
#: plain function's I/O)
AGENTOTEL_INPUT = "agentotel.input"
AGENTOTEL_OUTPUT = "agentotel.output"
#: the ``@traced`` kind of a span: agent | tool | llm | chain
AGENTOTEL_KIND = "agentotel.kind"


def score_attribute(metric: str, field: str) -> str:
    """``agentotel.eval.<metric>.<field>`` for field in score|success|reason."""
    return f"{AGENTOTEL_EVAL_PREFIX}.{metric}.{field}"


# --- Read by the reconstruction (agentotel_eval/reconstruct) ------------------------------------------------
# Observed in real captures (docs/reconstruction.md); grouped here so the reconstruction holds
# no string literals.

# GenAI, and vendor extensions under gen_ai.* that frameworks emit.
GEN_AI_TOOL_STATUS = "gen_ai.tool.status"  # strands: success | error
GEN_AI_TOOL_JSON_SCHEMA = "gen_ai.tool.json_schema"  # strands: the executed tool's parameter schema
GEN_AI_AGENT_TOOLS = "gen_ai.agent.tools"  # strands: JSON array of tool names offered to the agent
GEN_AI_HANDOFF_FROM_AGENT = "gen_ai.handoff.from_agent"  # OpenLLMetry openai-agents
GEN_AI_HANDOFF_TO_AGENT = "gen_ai.handoff.to_agent"
GEN_AI_PROMPT = "gen_ai.prompt"  # attribute of the obsolete gen_ai.content.prompt span event
GEN_AI_COMPLETION = "gen_ai.completion"  # attribute of the obsolete gen_ai.content.completion span event
EVENT_CONTENT_PROMPT = "gen_ai.content.prompt"
EVENT_CONTENT_COMPLETION = "gen_ai.content.completion"
OP_EMBEDDINGS = "embeddings"
OP_HANDOFF = "handoff"  # gen_ai.operation.name (and traceloop.span.kind) of OpenAI Agents handoff spans
#: ids some instrumentations put where the call id is unknown (ADK); never an identity
TOOL_CALL_ID_PLACEHOLDERS = frozenset({"<not specified>", "<unknown>", "unknown", "none", "null", "None"})

# pydantic-ai (native / logfire).
PYDANTIC_AI_ALL_MESSAGES = "pydantic_ai.all_messages"
PYDANTIC_AI_FINAL_RESULT = "final_result"
PYDANTIC_AI_MODEL_REQUEST_PARAMETERS = "model_request_parameters"  # JSON {"function_tools": [...]}

# OpenInference extras.
OI_TOOL_JSON_SCHEMA = "tool.json_schema"
OI_METADATA = "metadata"
OI_LLM_FUNCTION_CALL = (
    "llm.function_call"  # older single function call on an LLM span, JSON {name, arguments}
)

# OpenLLMetry / Traceloop extras.
TRACELOOP_LLM_REQUEST_TYPE = "llm.request.type"  # chat | completion on legacy LLM spans
TRACELOOP_KIND_AGENT = "agent"
TRACELOOP_KIND_WORKFLOW = "workflow"
TRACELOOP_KIND_TOOL = "tool"

# Langfuse extras.
LANGFUSE_TYPE_AGENT = "agent"
LANGFUSE_TYPE_TOOL = "tool"
LANGFUSE_TYPE_GENERATION = "generation"
LANGFUSE_OBSERVATION_STATUS_MESSAGE = "langfuse.observation.status_message"

# Our own @traced kinds (agentotel.kind).
AGENTOTEL_KIND_AGENT = "agent"
AGENTOTEL_KIND_TOOL = "tool"
AGENTOTEL_KIND_LLM = "llm"
