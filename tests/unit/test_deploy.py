"""deploy/: the gateway's Collector config against the load-balancing exporter's config schema, and the
compose file and Kubernetes objects around it.

``EXPORTER_SCHEMA`` is transcribed from opentelemetry-collector-contrib's
exporter/loadbalancingexporter/config.go (``Config``, ``Protocol``, ``ResolverSettings`` and its resolvers,
the routing-key constants) and the collector structs it embeds: ``otlpexporter.Config``
(``exporterhelper.TimeoutConfig`` squashed, ``QueueBatchConfig`` as ``sending_queue``,
``configretry.BackOffConfig`` as ``retry_on_failure``, ``configgrpc.ClientConfig`` squashed,
``configtls.ClientConfig`` as ``tls``). The Collector decodes with unknown keys as errors, so every struct is
closed (``additionalProperties: false``); fields kept across releases as deprecated (``blocking``,
``batcher``) are allowed. Checks in Go code are added where they are simple: exactly one resolver
(loadbalancer.go), a non-empty static list and DNS hostname, routing_attributes only with routing_key
attributes, no ``endpoint`` in protocol.otlp (the exporter sets it per backend), no ``wait_for_result`` with
a persistent queue.
"""

from __future__ import annotations

import copy
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

_DURATION = {"type": "string", "pattern": r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"}
_BOOL = {"type": "boolean"}
_INT = {"type": "integer"}
_STR = {"type": "string"}

_BACKOFF = {  # configretry.BackOffConfig
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": _BOOL,
        "initial_interval": _DURATION,
        "randomization_factor": {"type": "number", "minimum": 0, "maximum": 1},
        "multiplier": {"type": "number", "minimum": 0},
        "max_interval": _DURATION,
        "max_elapsed_time": _DURATION,
    },
}

_QUEUE = {  # exporterhelper.QueueBatchConfig (QueueConfig before it)
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": _BOOL,
        "wait_for_result": _BOOL,
        "sizer": {"enum": ["requests", "items", "bytes"]},
        "queue_size": {"type": "integer", "minimum": 1},
        "block_on_overflow": _BOOL,
        "blocking": _BOOL,  # deprecated for block_on_overflow
        "storage": {"type": "string", "minLength": 1},  # a component id: the storage extension
        "num_consumers": {"type": "integer", "minimum": 1},
        "batch": {"type": ["object", "null"]},
    },
    # "`wait_for_result` is not supported with a persistent queue configured with `storage`"
    "not": {"required": ["storage", "wait_for_result"], "properties": {"wait_for_result": {"const": True}}},
}

_TLS = {  # configtls.ClientConfig
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "insecure": _BOOL,
        "insecure_skip_verify": _BOOL,
        "server_name_override": _STR,
        "ca_file": _STR,
        "ca_pem": _STR,
        "cert_file": _STR,
        "cert_pem": _STR,
        "key_file": _STR,
        "key_pem": _STR,
        "include_system_ca_certs_pool": _BOOL,
        "min_version": _STR,
        "max_version": _STR,
        "cipher_suites": {"type": "array", "items": _STR},
        "curve_preferences": {"type": "array", "items": _STR},
        "reload_interval": _DURATION,
        "tpm_config": {"type": "object"},
    },
}

_OTLP = {  # otlpexporter.Config, minus `endpoint` (buildExporterConfig sets it per backend)
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "timeout": _DURATION,
        "sending_queue": _QUEUE,
        "retry_on_failure": _BACKOFF,
        "batcher": {"type": "object"},  # deprecated
        "compression": {
            "enum": ["", "none", "gzip", "zstd", "snappy", "zlib", "deflate", "lz4", "x-snappy-framed"]
        },
        "tls": _TLS,
        "keepalive": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"time": _DURATION, "timeout": _DURATION, "permit_without_stream": _BOOL},
        },
        "read_buffer_size": _INT,
        "write_buffer_size": _INT,
        "wait_for_ready": _BOOL,
        "headers": {"type": "object", "additionalProperties": _STR},
        "balancer_name": {"enum": ["pick_first", "round_robin"]},
        "authority": _STR,
        "auth": {"type": "object", "required": ["authenticator"], "properties": {"authenticator": _STR}},
        "middlewares": {"type": "array"},
    },
}

_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

EXPORTER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "loadbalancingexporter Config",
    "type": "object",
    "additionalProperties": False,
    "required": ["protocol", "resolver"],
    "properties": {
        "timeout": _DURATION,  # exporterhelper.TimeoutConfig, squashed
        "retry_on_failure": _BACKOFF,
        "sending_queue": _QUEUE,
        "protocol": {
            "type": "object",
            "additionalProperties": False,
            "required": ["otlp"],
            "properties": {"otlp": _OTLP},
        },
        "resolver": {
            "type": "object",
            "additionalProperties": False,
            # errNoResolver / errMultipleResolversProvided
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
                "static": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["hostnames"],
                    "properties": {"hostnames": {"type": "array", "minItems": 1, "items": _STR}},
                },
                "dns": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["hostname"],
                    "properties": {
                        "hostname": {"type": "string", "minLength": 1},
                        "port": {"type": "string", "pattern": r"^[0-9]+$"},
                        "interval": _DURATION,
                        "timeout": _DURATION,
                    },
                },
                "k8s": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["service"],
                    "properties": {
                        "service": {"type": "string", "minLength": 1},
                        "ports": {"type": "array", "items": _PORT},
                        "timeout": _DURATION,
                        "return_hostnames": _BOOL,
                    },
                },
                "aws_cloud_map": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["namespace", "service_name"],
                    "properties": {
                        "namespace": _STR,
                        "service_name": _STR,
                        "health_status": {"enum": ["HEALTHY", "UNHEALTHY", "ALL", "HEALTHY_OR_ELSE_ALL"]},
                        "interval": _DURATION,
                        "timeout": _DURATION,
                        "port": _PORT,
                        "owner_account": _STR,
                    },
                },
            },
        },
        # svcRoutingStr, traceIDRoutingStr, metricNameRoutingStr, resourceRoutingStr, streamIDRoutingStr,
        # attrRoutingStr; empty is the default (traceID for traces)
        "routing_key": {"enum": ["", "service", "traceID", "metric", "resource", "streamID", "attributes"]},
        "routing_attributes": {"type": "array", "items": _STR},
    },
    "allOf": [
        {  # Config.Validate
            "if": {"required": ["routing_key"], "properties": {"routing_key": {"const": "attributes"}}},
            "then": {
                "required": ["routing_attributes"],
                "properties": {"routing_attributes": {"minItems": 1}},
            },
            "else": {"not": {"required": ["routing_attributes"]}},
        }
    ],
}


# -- loading -------------------------------------------------------------------------------------------------


def _load(relative: str) -> Any:
    return yaml.safe_load((DEPLOY / relative).read_text())


def _k8s(relative: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / "kubernetes" / relative).read_text()) if doc]


def _one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [d["metadata"]["name"] for d in found])
    return found[0]


def _gateway_configmap_config() -> dict[str, Any]:
    cm = _one(_k8s("gateway.yaml"), "ConfigMap")
    return yaml.safe_load(cm["data"]["config.yaml"])


GATEWAY_CONFIGS = {
    "compose": lambda: _load("gateway/otelcol.yaml"),
    "kubernetes": _gateway_configmap_config,
}


@pytest.fixture(params=sorted(GATEWAY_CONFIGS))
def gateway(request: pytest.FixtureRequest) -> dict[str, Any]:
    return GATEWAY_CONFIGS[request.param]()


def _type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


# -- the gateway config --------------------------------------------------------------------------------------


def test_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(EXPORTER_SCHEMA)


def test_loadbalancing_exporter_validates_against_schema(gateway: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(EXPORTER_SCHEMA).validate(gateway["exporters"]["loadbalancing"])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda c: c["resolver"].update(static={"hostnames": ["a:4317"]}), "two resolvers"),
        (lambda c: c.update(resolver={}), "no resolver"),
        (lambda c: c.update(routing_key="traceid"), "routing keys are case-sensitive"),
        (lambda c: c["protocol"]["otlp"].update(endpoint="node:4317"), "the exporter sets the endpoint"),
        (lambda c: c.update(unknown=1), "closed struct"),
        (lambda c: c["sending_queue"].update(wait_for_result=True), "wait_for_result with storage"),
        (
            lambda c: c.update(routing_attributes=["service.name"]),
            "attributes without routing_key attributes",
        ),
        (lambda c: c["retry_on_failure"].update(max_interval="30 seconds"), "not a Go duration"),
    ],
)
def test_schema_rejects_invalid_exporter_configs(change: Any, why: str) -> None:
    config = copy.deepcopy(_load("gateway/otelcol.yaml")["exporters"]["loadbalancing"])
    change(config)
    assert not jsonschema.Draft202012Validator(EXPORTER_SCHEMA).is_valid(config), why


def test_routing_key_is_trace_id(gateway: dict[str, Any]) -> None:
    assert gateway["exporters"]["loadbalancing"]["routing_key"] == "traceID"


def test_traces_and_logs_pipelines_end_in_loadbalancing_without_batching(gateway: dict[str, Any]) -> None:
    pipelines = gateway["service"]["pipelines"]
    assert {"traces", "logs"} <= set(pipelines)
    for name in ("traces", "logs"):
        pipeline = pipelines[name]
        assert pipeline["exporters"] == ["loadbalancing"], name
        # the exporter is the pipeline's last step, so every processor precedes it
        assert not [p for p in pipeline.get("processors", []) if _type(p) == "batch"], name
        assert all(_type(r) == "otlp" for r in pipeline["receivers"])
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in (gateway.get(kind) or {}), f"{name}: {component} is not declared"
    assert not [p for p in gateway.get("processors") or {} if _type(p) == "batch"]


def test_sending_queue_is_persistent_on_a_declared_file_storage(gateway: dict[str, Any]) -> None:
    lb = gateway["exporters"]["loadbalancing"]
    queue = lb["sending_queue"]
    assert queue["enabled"] is True
    storage = queue["storage"]
    assert _type(storage) == "file_storage"
    assert storage in gateway["extensions"] and gateway["extensions"][storage]["directory"]
    assert storage in gateway["service"]["extensions"]
    assert lb["retry_on_failure"]["enabled"] is True
    # the per-node exporters hand failures up, so a retry re-routes on the current ring
    assert lb["protocol"]["otlp"]["sending_queue"]["enabled"] is False
    assert lb["protocol"]["otlp"]["retry_on_failure"]["enabled"] is False
    assert lb["protocol"]["otlp"]["tls"]["insecure"] is True


def test_receiver_listens_on_the_otlp_ports(gateway: dict[str, Any]) -> None:
    protocols = gateway["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"


def test_kubernetes_config_is_the_compose_one_but_for_the_resolver() -> None:
    compose, k8s = _load("gateway/otelcol.yaml"), _gateway_configmap_config()
    assert "dns" in compose["exporters"]["loadbalancing"]["resolver"]
    assert "k8s" in k8s["exporters"]["loadbalancing"]["resolver"]
    for config in (compose, k8s):
        del config["exporters"]["loadbalancing"]["resolver"]
    assert compose == k8s


# -- compose -------------------------------------------------------------------------------------------------


def _compose() -> dict[str, Any]:
    return _load("docker-compose.yaml")


def _dockerfile_cmd() -> list[str]:
    text = (DEPLOY / "Dockerfile").read_text()
    (cmd,) = re.findall(r"^CMD (\[.*\])$", text, re.MULTILINE)
    return yaml.safe_load(cmd)


def test_dockerfile_runs_serve_on_all_interfaces() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.MULTILINE)
    assert _dockerfile_cmd() == [
        "agentotel-eval", "serve", "--grpc", "0.0.0.0:4317", "--http", "0.0.0.0:4318",
        "--config", "/etc/agentotel/agentotel.toml",
    ]  # fmt: skip


def test_compose_services() -> None:
    services = _compose()["services"]
    assert {"gateway", "node-1", "node-2", "node-3", "postgres", "minio", "maintenance"} <= set(services)
    gateway = services["gateway"]
    image, _, tag = gateway["image"].partition(":")
    assert image == "otel/opentelemetry-collector-contrib"
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", tag), "pin the collector version"
    assert "./gateway/otelcol.yaml:/etc/otelcol-contrib/config.yaml:ro" in gateway["volumes"]
    assert gateway["command"] == ["--config=/etc/otelcol-contrib/config.yaml"]
    assert services["postgres"]["image"] == "postgres:15"
    assert "latest" not in services["minio"]["image"] and ":" in services["minio"]["image"]


def test_compose_nodes_answer_the_gateway_resolver() -> None:
    services = _compose()["services"]
    dns = _load("gateway/otelcol.yaml")["exporters"]["loadbalancing"]["resolver"]["dns"]
    assert dns["port"] == "4317"
    config_path = _dockerfile_cmd()[-1]
    data_volumes = set()
    for name in ("node-1", "node-2", "node-3"):
        node = services[name]
        assert node["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert "command" not in node  # the Dockerfile's CMD
        assert dns["hostname"] in node["networks"]["default"]["aliases"]
        assert f"./node/agentotel.toml:{config_path}:ro" in node["volumes"]
        assert "AGENTOTEL_AUTH_TOKEN" in node["environment"]
        assert "ports" not in node
        data_volumes |= {v.split(":")[0] for v in node["volumes"] if v.endswith(":/var/lib/agentotel")}
    assert len(data_volumes) == 3  # a DuckDB file each
    assert "AGENTOTEL_AUTH_TOKEN" in services["gateway"]["environment"]
    declared = set(_compose()["volumes"])
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith(".") or source in declared, source


def test_compose_runs_lake_maintenance_periodically() -> None:
    maintenance = _compose()["services"]["maintenance"]
    (script,) = maintenance["command"]
    assert "agentotel-eval lake maintain --config /etc/agentotel/agentotel.toml" in script
    assert "while true" in script and "sleep" in script
    assert maintenance["image"] == _compose()["services"]["node-1"]["image"]


def test_node_config_lake_matches_compose() -> None:
    config = tomllib.loads((DEPLOY / "node" / "agentotel.toml").read_text())
    lake = config["lake"]
    assert lake["catalog"] == "postgres://agentotel:agentotel@postgres:5432/lake"
    assert lake["data"] == "s3://agentotel-lake/data/"
    assert lake["flush_interval"] == "5s"
    assert set(lake["s3"]) == {"endpoint", "key_id", "secret", "url_style", "use_ssl"}
    services = _compose()["services"]
    catalog = urlsplit(lake["catalog"])
    pg = services["postgres"]["environment"]
    assert (catalog.username, catalog.password, catalog.hostname, catalog.path) == (
        pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], "postgres", "/" + pg["POSTGRES_DB"],
    )  # fmt: skip
    minio = services["minio"]["environment"]
    assert (lake["s3"]["key_id"], lake["s3"]["secret"]) == (
        minio["MINIO_ROOT_USER"],
        minio["MINIO_ROOT_PASSWORD"],
    )
    assert lake["s3"]["endpoint"] == "minio:9000" and lake["s3"]["url_style"] == "path"
    bucket = urlsplit(lake["data"]).netloc
    assert f"local/{bucket}" in services["minio-setup"]["command"][0]


# -- kubernetes ----------------------------------------------------------------------------------------------


def _all_k8s() -> list[dict[str, Any]]:
    return [doc for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")) for doc in _k8s(path.name)]


_API_VERSIONS = {
    "Namespace": "v1",
    "Service": "v1",
    "ServiceAccount": "v1",
    "ConfigMap": "v1",
    "StatefulSet": "apps/v1",
    "Deployment": "apps/v1",
    "CronJob": "batch/v1",
    "Role": "rbac.authorization.k8s.io/v1",
    "RoleBinding": "rbac.authorization.k8s.io/v1",
}


def test_kubernetes_objects_kinds_and_api_versions() -> None:
    docs = _all_k8s()
    for doc in docs:
        assert _API_VERSIONS[doc["kind"]] == doc["apiVersion"], doc["kind"]
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "agentotel"
    assert _one(docs, "Namespace")["metadata"]["name"] == "agentotel"


def test_node_statefulset() -> None:
    docs = _k8s("nodes.yaml")
    svc, sts = _one(docs, "Service"), _one(docs, "StatefulSet")
    assert svc["spec"]["clusterIP"] == "None"
    assert sts["spec"]["serviceName"] == svc["metadata"]["name"]
    assert sts["spec"]["replicas"] == 3
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (container,) = sts["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 4318}
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/var/lib/agentotel"
    assert mounts["config"] == str(Path(_dockerfile_cmd()[-1]).parent)
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["config"]["secret"]["secretName"] == "agentotel-node-config"
    (token,) = [e for e in container["env"] if e["name"] == "AGENTOTEL_AUTH_TOKEN"]
    assert token["valueFrom"]["secretKeyRef"] == {"name": "agentotel-auth", "key": "token"}
    assert {p["containerPort"] for p in container["ports"]} == {4317, 4318}


def test_gateway_rbac_binds_its_service_account_to_endpointslice_reads() -> None:
    docs = _k8s("gateway.yaml")
    account, role, binding = _one(docs, "ServiceAccount"), _one(docs, "Role"), _one(docs, "RoleBinding")
    deployment = _one(docs, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"],
    }  # fmt: skip
    assert {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": "agentotel",
    } in binding["subjects"]

    def grants(group: str, resource: str) -> set[str]:
        return {
            verb
            for rule in role["rules"]
            if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]
        }

    assert {"get", "list", "watch"} <= grants("discovery.k8s.io", "endpointslices")
    assert {"get", "list", "watch"} <= grants("", "endpoints")


def test_gateway_resolves_the_node_service() -> None:
    nodes, gateway = _k8s("nodes.yaml"), _k8s("gateway.yaml")
    svc = _one(nodes, "Service")
    k8s = _gateway_configmap_config()["exporters"]["loadbalancing"]["resolver"]["k8s"]
    assert k8s["service"] == f"{svc['metadata']['name']}.{svc['metadata']['namespace']}"
    assert k8s["ports"] == [4317] and 4317 in {p["port"] for p in svc["spec"]["ports"]}
    deployment = _one(gateway, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["image"] == _compose()["services"]["gateway"]["image"]
    config_volume = next(v for v in spec["volumes"] if v["name"] == "config")
    assert config_volume["configMap"]["name"] == _one(gateway, "ConfigMap")["metadata"]["name"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "config"]
    assert container["args"] == [f"--config={mount['mountPath']}/config.yaml"]
    queue_dir = _gateway_configmap_config()["extensions"]["file_storage/queue"]["directory"]
    assert queue_dir in {m["mountPath"] for m in container["volumeMounts"]}
    agents = next(d for d in gateway if d["kind"] == "Service")
    assert agents["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {p["port"] for p in agents["spec"]["ports"]} == {4317, 4318}


def test_maintenance_cronjob_runs_lake_maintain() -> None:
    cron = _one(_k8s("maintenance-cronjob.yaml"), "CronJob")
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert len(cron["spec"]["schedule"].split()) == 5
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert (
        shlex.join(container["command"])
        == "agentotel-eval lake maintain --config /etc/agentotel/agentotel.toml"
    )
    assert {v["secret"]["secretName"] for v in pod["volumes"]} == {"agentotel-node-config"}


def test_postgres_and_s3_note_names_the_secrets_the_manifests_use() -> None:
    note = (DEPLOY / "kubernetes" / "postgres-and-s3.md").read_text()
    for secret in ("agentotel-node-config", "agentotel-auth"):
        assert secret in note
    assert "managed PostgreSQL" in note


def test_node_config_loads_with_the_collector_loader() -> None:
    from agentotel_eval.collector import config as collector_config

    if not hasattr(collector_config, "LakeConfig"):
        pytest.skip("the collector's config has no [lake] section yet")
    loaded = collector_config.load_config(DEPLOY / "node" / "agentotel.toml")
    assert loaded.lake.catalog == "postgres://agentotel:agentotel@postgres:5432/lake"
    assert loaded.lake.flush_interval == 5.0
    assert loaded.lake.s3.url_style == "path" and loaded.lake.s3.use_ssl is False


def test_the_lake_ui_and_maintenance_commands_are_ones_the_cli_takes() -> None:
    """The web UI over the lake and the maintenance job, in compose and Kubernetes, run commands this
    version's command line accepts, on the node config (which this version's config loader
    takes, [lake] and all)."""
    from agentotel_eval.cli import build_parser
    from agentotel_eval.collector.config import load_config

    services = _compose()["services"]
    ui = services["ui"]
    k8s_ui = _one(_k8s("lake-ui.yaml"), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    cron = _one(_k8s("maintenance-cronjob.yaml"), "CronJob")
    cron_command = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    maintain = re.search(r"agentotel-eval (lake maintain [^;]+);", services["maintenance"]["command"][0])
    assert maintain
    for command in (
        ui["command"],
        k8s_ui["command"],
        cron_command,
        ["agentotel-eval", *maintain.group(1).split()],
    ):
        assert command[0] == "agentotel-eval", command
        args = build_parser().parse_args(command[1:])
        assert args.command == "lake" and args.config == "/etc/agentotel/agentotel.toml", command
    assert build_parser().parse_args(ui["command"][1:]).http == "0.0.0.0:4320"
    assert ui["ports"] == ["127.0.0.1:4320:4320"] and "AGENTOTEL_AUTH_TOKEN" in ui["environment"]
    assert {e["name"] for e in k8s_ui["env"]} == {"AGENTOTEL_AUTH_TOKEN"}
    config = load_config(DEPLOY / "node" / "agentotel.toml").validate()
    assert config.lake is not None and config.lake.reconcile_interval == 10.0
