"""docker-compose.yml: valid against the Compose specification, secrets only from .env, each
service with only what it needs (the web process no App key, the worker no webhook secret), port
8000 on 127.0.0.1 only, Redis over TLS with a password, a one-time migration before web and worker
— and, with no Docker engine here, its services run as processes on 127.0.0.1 with the commands
and environment the file gives them (PostgreSQL and Redis from the system packages, Redis' TLS
files from the ``redis-tls`` service), while signed webhook deliveries go through the whole path
(gunicorn → Redis over TLS → ``perfgate worker`` → the fake GitHub → PostgreSQL)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from testkit import compose, services

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
#: The port each service listens on inside its container: the images' defaults, and for web the
#: Dockerfile's gunicorn bind.
CONTAINER_PORTS = {"postgres": 5432, "redis": 6379, "web": 8000}
#: The image's own environment (Dockerfile ENV), under the service's.
IMAGE_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PERFGATE_HOME": "/data"}
APP_SERVICES = ("redis-tls", "migrate", "web", "worker")


def _dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments and blanks skipped, surrounding quotes removed)."""
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip().strip('"')
    return values


def _check_jsonschema() -> str:
    found = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    if not Path(found).exists():
        pytest.skip("check-jsonschema is not installed (pip install check-jsonschema)")
    return found


def test_valid_against_the_compose_specification(tmp_path):
    tool = _check_jsonschema()
    ok = subprocess.run([tool, "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_FILE.read_text().replace("condition: service_completed_successfully",
                                                       "condition: after_migrate", 1))
    bad = subprocess.run([tool, "--builtin-schema", "vendor.compose-spec", str(broken)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "after_migrate" in bad.stdout


def test_services_order_health_and_volumes():
    spec = compose.load(COMPOSE_FILE, _dotenv(ENV_EXAMPLE))
    svc = spec["services"]
    assert set(svc) == {"postgres", "redis", "redis-tls", "migrate", "web", "worker"}
    for name in APP_SERVICES:  # the App's image, built from the Dockerfile here
        assert svc[name]["build"] == "." and svc[name]["image"] == svc["web"]["image"]
    assert "command" not in svc["web"]  # the Dockerfile's gunicorn command
    assert compose.image_command(ROOT / "Dockerfile")[0] == "gunicorn"
    assert svc["worker"]["command"] == ["perfgate", "worker"]
    assert svc["migrate"]["command"] == ["perfgate", "migrate"] and svc["migrate"]["restart"] == "no"
    for name in ("web", "worker"):
        assert svc[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert svc[name]["depends_on"]["postgres"] == svc[name]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert svc["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert svc["redis"]["depends_on"] == {"redis-tls": {"condition": "service_completed_successfully"}}
    assert svc["redis-tls"]["command"][:3] == ["perfgate", "queue-tls", "/tls"] and svc["redis-tls"]["restart"] == "no"
    assert all(compose.healthcheck_command(svc[name]) for name in ("postgres", "redis", "web", "worker"))
    named = set(spec["volumes"])
    used = {v.split(":")[0] for s in svc.values() for v in s.get("volumes", [])}
    assert used == named == {"pgdata", "redisdata", "redis-tls", "home"}
    for name in ("redis", "web", "worker"):  # the TLS files: read-only for all but their maker
        assert "redis-tls:/tls:ro" in svc[name]["volumes"]
    env = {name: compose.service_environment(svc[name]) for name in svc}
    password = _dotenv(ENV_EXAMPLE)["REDIS_PASSWORD"]
    assert env["web"]["REDIS_URL"] == env["worker"]["REDIS_URL"] == \
        f"rediss://:{password}@redis:6379/0?ssl_ca_certs=/tls/ca.crt"
    assert env["web"]["DATABASE_URL"] == env["worker"]["DATABASE_URL"] == env["migrate"]["DATABASE_URL"]
    assert env["web"]["DATABASE_URL"].startswith("postgresql://perfgate:")
    # least privilege: the internet-facing web process never holds the App's key, the worker
    # never the webhook secret, the database, Redis and the migration neither
    assert not {"GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_APP_ID"} & set(env["web"])
    assert "GITHUB_WEBHOOK_SECRET" in env["web"] and "GITHUB_WEBHOOK_SECRET" not in env["worker"]
    assert {"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY"} <= set(env["worker"])
    for name in ("postgres", "redis", "redis-tls", "migrate"):
        assert not {"GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"} & set(env[name])
    # Redis: TLS only, a password; the web port on this machine only
    redis = svc["redis"]["command"]
    assert redis[redis.index("--port") + 1] == "0" and redis[redis.index("--tls-port") + 1] == "6379"
    assert redis[redis.index("--requirepass") + 1] == password
    assert svc["web"]["ports"] == ["127.0.0.1:8000:8000"]
    assert "ports" not in svc["worker"] and "ports" not in svc["redis"] and "ports" not in svc["postgres"]


def test_the_example_secrets_are_refused_by_the_app():
    """Copying .env.example without filling it in does not give a live App (security review N8)."""
    from bot.settings import load_settings
    from runner.errors import UserError

    example = _dotenv(ENV_EXAMPLE)
    with pytest.raises(UserError, match="GITHUB_WEBHOOK_SECRET is the example value"):
        load_settings({"GITHUB_WEBHOOK_SECRET": example["GITHUB_WEBHOOK_SECRET"]})
    # the database's and the queue's example passwords too, as the compose file puts them in URLs
    # (they were accepted although .env.example says they are refused)
    web = compose.service_environment(compose.load(COMPOSE_FILE, example)["services"]["web"])
    for name in ("DATABASE_URL", "REDIS_URL", "HUEY_URL"):
        if name in web:
            with pytest.raises(UserError, match=f"{name} holds the example password"):
                load_settings({name: web[name]})
    assert any(name in web for name in ("REDIS_URL", "HUEY_URL")) and "DATABASE_URL" in web
    secret = (ROOT / "deploy" / "kubernetes" / "secret.yaml").read_text()
    redis_url = re.search(r"REDIS_URL: (\S+)", secret).group(1)
    with pytest.raises(UserError, match="REDIS_URL holds the example password"):
        load_settings({"REDIS_URL": redis_url})


def test_secrets_come_only_from_the_env_file():
    text = COMPOSE_FILE.read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    assert {"GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "POSTGRES_PASSWORD", "REDIS_PASSWORD",
            "PERFGATE_PUBLIC_URL"} <= required
    assert required <= set(_dotenv(ENV_EXAMPLE))  # the example names every one of them
    raw = compose.yaml.safe_load(text)
    for service in raw["services"].values():
        for key, value in compose.service_environment(service).items():
            if any(word in key for word in ("KEY", "SECRET", "PASSWORD", "AUTH")) or "@" in value:
                assert "${" in value and ":?" in value, (key, value)  # never a literal
    with pytest.raises(compose.InterpolationError, match="POSTGRES_PASSWORD|GITHUB_"):
        compose.load(COMPOSE_FILE, {})
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", ".env"])
    assert ignored.returncode == 0, ".env must be git-ignored"
    dockerignore = ROOT / ".dockerignore"
    assert dockerignore.exists() and ".env" in dockerignore.read_text().split()


@pytest.mark.parametrize("text, env, expected", [
    ("${A}", {"A": "1"}, "1"), ("$A/x", {"A": "1"}, "1/x"), ("${A:-d}", {"A": ""}, "d"), ("${A-d}", {"A": ""}, ""),
    ("${A:-d}", {}, "d"), ("$${A}", {"A": "1"}, "${A}"), ("${A:+y}", {"A": "1"}, "y"),
])
def test_interpolation_follows_the_compose_specification(text, env, expected):
    assert compose.interpolate(text, env) == expected


# -- the four services as processes -----------------------------------------------------------------

class Localizer:
    """Maps the compose network onto 127.0.0.1: ``service:port`` → ``127.0.0.1:free port``, a
    service's own ``127.0.0.1:port``/``0.0.0.0:port`` → its free port, volume paths → folders."""

    def __init__(self, ports: dict[str, int], folders: dict[str, str]):
        self.ports, self.folders = ports, folders

    def text(self, value: str, own: str | None = None) -> str:
        for name, port in self.ports.items():
            value = value.replace(f"{name}:{CONTAINER_PORTS[name]}", f"127.0.0.1:{port}")
        if own in self.ports:
            for host in ("127.0.0.1", "0.0.0.0"):
                value = value.replace(f"{host}:{CONTAINER_PORTS[own]}", f"127.0.0.1:{self.ports[own]}")
        for path, folder in self.folders.items():  # a volume path, alone or starting a word / URL parameter
            value = re.sub(rf"(^|[\s=]){re.escape(path)}(?=/|$|\s)", lambda m: m.group(1) + folder, value)
        return value

    def argv(self, argv: list[str], own: str) -> list[str]:
        program = {"python": sys.executable}.get(argv[0]) or str(Path(sys.executable).parent / argv[0])
        if not Path(program).exists():
            program = shutil.which(argv[0]) or argv[0]
        return [program, *(self.text(a, own) for a in argv[1:])]

    def env(self, service: dict, own: str, home: Path) -> dict[str, str]:
        env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), **IMAGE_ENV}
        env.update(compose.service_environment(service))
        return {key: self.text(value, own) for key, value in env.items()}


def _healthy(argv: list[str] | None, env: dict | None = None) -> bool:
    return argv is not None and subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode == 0


def _post(url: str, built) -> int:
    from testkit import payloads as P

    name, payload = built
    body = P.encode(payload)
    request = urllib.request.Request(url, data=body, headers=P.headers(name, body), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_the_services_run_as_processes_and_a_labeled_pr_goes_through(tmp_path, github_openapi):
    missing = services.missing_programs()
    if missing:
        pytest.skip(f"needs the system packages postgresql and redis-server ({', '.join(missing)} missing)")
    from testkit import app_fakes
    from testkit import payloads as P
    from testkit.fake_github import FakeGitHub
    from testkit.results_doc import bench, results_doc
    from tests.app.flow import upload

    head, base = "1" * 40, "2" * 40
    scene = app_fakes.AppScene()
    blobs = app_fakes.BlobServer(scene)
    procs: list[subprocess.Popen] = []
    try:
        with FakeGitHub(github_openapi, handlers=app_fakes.handlers(scene)) as gh:
            gh.state.add_repo(P.REPO)
            gh.state.add_token("ghs_nobody")  # only tokens minted for the App's JWT are accepted
            gh.state.add_pull(P.REPO, 7, head_sha=head, base_sha=base, labels=["performance"])
            gh.state.set_permission(P.REPO, "maintainer", "maintain")
            key = P.private_key().replace("\n", "\\n")
            dotenv = {**_dotenv(ENV_EXAMPLE), "GITHUB_PRIVATE_KEY": key,
                      "GITHUB_WEBHOOK_SECRET": P.SECRET, "GITHUB_API_URL": gh.url,
                      "POSTGRES_PASSWORD": secrets.token_urlsafe(16), "REDIS_PASSWORD": secrets.token_hex(24)}
            svc = compose.load(COMPOSE_FILE, dotenv)["services"]
            pg_env = compose.service_environment(svc["postgres"])
            home, tls = tmp_path / "home", tmp_path / "tls"  # the named volumes "home" (/data) and "redis-tls" (/tls)
            home.mkdir()
            folders = {"/data": str(home), "/tls": str(tls)}
            # redis-tls, once, before Redis (as root it hands the key to Redis' account, as in compose)
            make_tls = Localizer({}, folders).argv(svc["redis-tls"]["command"], "redis-tls")
            if os.geteuid() != 0:
                make_tls = make_tls[:make_tls.index("--owner")]
            made = subprocess.run(make_tls, capture_output=True, text=True, timeout=60,
                                  env=Localizer({}, folders).env(svc["redis-tls"], "redis-tls", home))
            assert made.returncode == 0 and "wrote ca.crt" in made.stdout, made.stdout + made.stderr
            redis_command = [Localizer({}, folders).text(a) for a in svc["redis"]["command"]]
            with services.Postgres(pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"]) as pg, \
                    services.Redis(redis_command, tmp_path / "redis", password=dotenv["REDIS_PASSWORD"],
                                   ca=tls / "ca.crt") as redis:
                local = Localizer({"postgres": pg.port, "redis": redis.port, "web": services.free_port()}, folders)
                for name in ("postgres", "redis"):  # the compose health checks, as depends_on waits for them
                    services.wait_for(lambda: _healthy(local.argv(compose.healthcheck_command(svc[name]), name),
                                                       local.env(svc[name], name, home)),
                                      60, f"{name}'s health check")
                # the health check fails without the password: it is a real check
                assert not _healthy(local.argv(compose.healthcheck_command(svc["redis"]), "redis"),
                                    dict(local.env(svc["redis"], "redis", home), REDISCLI_AUTH="wrong"))

                migrate = subprocess.run(local.argv(svc["migrate"]["command"], "migrate"), cwd=home, timeout=180,
                                         env=local.env(svc["migrate"], "migrate", home), capture_output=True, text=True)
                assert migrate.returncode == 0, migrate.stdout + migrate.stderr

                commands = {"web": compose.image_command(ROOT / "Dockerfile"), "worker": svc["worker"]["command"]}
                for name in ("web", "worker"):  # started together, as compose does once migrate has exited 0
                    log = open(tmp_path / f"{name}.log", "wb")
                    procs.append(subprocess.Popen(local.argv(commands[name], name), cwd=home, stdout=log,
                                                  stderr=subprocess.STDOUT, env=local.env(svc[name], name, home)))
                for proc, name in zip(procs, ("web", "worker")):
                    services.wait_for(lambda: _healthy(local.argv(compose.healthcheck_command(svc[name]), name),
                                                       local.env(svc[name], name, home)),
                                      90, f"{name}'s health check", proc, tmp_path / f"{name}.log")

                url = f"http://127.0.0.1:{local.ports['web']}/webhook"
                assert _post(url, P.pull_request("labeled", head_sha=head, base_sha=base, labels=("performance",))) == 202
                services.wait_for(lambda: gh.state.dispatches, 60, "the dispatch by the worker", procs[1],
                                  tmp_path / "worker.log")
                (dispatch,) = gh.state.dispatches
                key = dispatch["inputs"]["run-id"]
                assert (dispatch["inputs"]["base-sha"], dispatch["inputs"]["head-sha"]) == (base, head)

                doc = results_doc([bench("bench_norm[rows=4096]", "regression", 1.10)], base_sha=base, head_sha=head)
                upload(scene, dispatch, doc)  # what the Action uploads on the GPU runner
                gh.state.workflow_runs[dispatch["run_id"]].update(status="completed", conclusion="success")
                completed = P.workflow_run_completed(dispatch["run_id"])
                assert _post(url, completed) == 202
                from bot.app.store import store as app_store
                from bot.db import normalize_url, open_database
                from bot.history.tables import Result

                database = open_database(normalize_url(pg.url()), migrate=False)

                def stored_run():
                    with database.session() as session:
                        run = app_store.get_run(session, key)
                        return run if run is not None and run.status == "completed" else None

                services.wait_for(stored_run, 60, "the stored result", procs[1], tmp_path / "worker.log")
                with database.session() as session:
                    run = app_store.get_run(session, key)
                    assert run.conclusion == "failure"
                    stored = session.get(Result, run.result_id).document
                database.dispose()
                assert stored["benchmarks"][0]["name"] == "bench_norm[rows=4096]" and stored["head"]["sha"] == head
                (check,) = gh.state.check_runs.values()
                assert check["conclusion"] == "failure"
                comments = gh.state.issue_comments(P.REPO, 7)
                assert len(comments) == 1 and "bench_norm[rows=4096]" in comments[0].body
                # the jobs went through Redis: the SQLite queue was never created
                assert not (home / "huey.db").exists()
                stats = subprocess.run(["redis-cli", "--tls", "--cacert", str(tls / "ca.crt"), "-p", str(redis.port),
                                        "info", "commandstats"], capture_output=True, text=True,
                                       env=dict(os.environ, REDISCLI_AUTH=dotenv["REDIS_PASSWORD"])).stdout
                pushed = re.search(r"cmdstat_lpush:calls=(\d+)", stats)
                assert pushed and int(pushed.group(1)) >= 2, stats  # both deliveries were queued in Redis
                for proc in procs:
                    assert proc.poll() is None, "a service exited"
            gh.assert_no_violations()
    finally:
        for proc in reversed(procs):
            services.stop(proc)
        blobs.stop()
