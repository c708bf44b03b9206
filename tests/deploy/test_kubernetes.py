"""deploy/kubernetes: every manifest valid against the Kubernetes API schemas (offline, strict:
kubernetes-validate from PyPI ships them), the parts wired to each other (probes, selectors,
Secret keys, the key file's path), and the GPU runner example for actions-runner-controller's
runner scale sets valid as chart values, as a pod template and as a GitHub runner group."""

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


def _manifests() -> dict[str, list[dict]]:
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in sorted(K8S.glob("*.yaml")) if p.name != "kustomization.yaml"}


def _objects() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for docs in _manifests().values() for d in docs}


def _pod(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_kubernetes(version):
    kinds = set()
    for name, docs in _manifests().items():
        for doc in docs:
            kv.validate(doc, version, strict=True)  # raises naming the field
            kinds.add(doc["kind"])
    assert {"Namespace", "ConfigMap", "Secret", "Job", "Deployment", "Service", "Ingress"} <= kinds


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


def test_secrets_stay_in_the_secret_and_the_key_is_a_file():
    objs = _objects()
    secret = objs[("Secret", "perfgate-app")]
    config = objs[("ConfigMap", "perfgate-app")]
    assert {"GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "private-key.pem"} == set(secret["stringData"])
    assert not {"GITHUB_WEBHOOK_SECRET", "GITHUB_PRIVATE_KEY", "DATABASE_URL"} & set(config["data"])
    for obj in objs.values():
        if obj["kind"] not in ("Deployment", "Job"):
            continue
        pod = _pod(obj)
        assert pod["securityContext"]["runAsNonRoot"] is True and pod["automountServiceAccountToken"] is False
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            for env in container.get("env", []):
                if env["name"] in ("GITHUB_WEBHOOK_SECRET", "DATABASE_URL", "GITHUB_APP_ID"):
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


def test_runner_group_is_a_valid_github_request(github_openapi):
    op = github_openapi.operation("actions/create-self-hosted-runner-group-for-org")
    body = json.loads((RUNNERS / "runner-group.json").read_text())
    assert github_openapi.request_errors(op, {"org": "your-org"}, {}, body, True) == []
    assert github_openapi.request_errors(op, {"org": "your-org"}, {}, dict(body, visibility="some"), True)
