"""The ``[[sinks]]`` form of the configuration, exactly as documented, and its errors."""

from __future__ import annotations

import pytest

from agentotel_eval.collector.config import ConfigError, load_config

DOCUMENTED = """
[[sinks]]
kind = "phoenix"                       # spans forwarded over OTLP + one span annotation per evaluation
url = "http://127.0.0.1:6006"
api_key_env = "PHOENIX_API_KEY"        # optional

[[sinks]]
# traces over MLflow's OTLP endpoint + one assessment (feedback) per evaluation
kind = "mlflow"
url = "http://127.0.0.1:5000"
experiment = "agents"                  # created when missing

[[sinks]]
kind = "langfuse"                      # traces over Langfuse's OTLP endpoint + one score per evaluation
url = "https://langfuse.example.com"
public_key_env = "LANGFUSE_PUBLIC_KEY"
secret_key_env = "LANGFUSE_SECRET_KEY"
"""


def test_the_documented_form_loads(tmp_path, monkeypatch) -> None:
    for name in ("PHOENIX_API_KEY", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
        monkeypatch.setenv(name, f"value-of-{name}")
    path = tmp_path / "agentotel.toml"
    path.write_text(DOCUMENTED)
    config = load_config(path).validate()
    assert [(s.kind, s.url) for s in config.sinks] == [
        ("phoenix", "http://127.0.0.1:6006"),
        ("mlflow", "http://127.0.0.1:5000"),
        ("langfuse", "https://langfuse.example.com"),
    ]
    assert config.sinks[1].experiment == "agents"
    assert config.sinks[0].secret("api_key_env") == "value-of-PHOENIX_API_KEY"


@pytest.mark.parametrize(
    "text, key",
    [
        (
            '[[sinks]]\nkind = "phoenix"\nurl = "http://h:6006"\napi_key_env = '
            '"AGENTOTEL_TEST_UNSET_VARIABLE"\n',
            "sinks[0].api_key_env",
        ),
        ('[[sinks]]\nkind = "langfuse"\nurl = "https://h"\n', "sinks[0].public_key_env"),
        ('[[sinks]]\nkind = "phoenix"\nurl = "http://h:6006"\napi_key = "in the file"\n', "sinks[0].api_key"),
        ('[[sinks]]\nkind = "mlflow"\n', "sinks[0]"),
    ],
)
def test_errors_name_the_entry_and_key(tmp_path, text, key) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path).validate()
    assert raised.value.key == key, raised.value
