"""What the App's tests add to the shared fake GitHub: workflow runs with artifacts (and the
storage server their downloads redirect to), repository files, the App's identity.

``AppScene`` holds the extra state; ``handlers(scene)`` are ``FakeGitHub(handlers=...)``
overrides, each answering like the REST operation it stands for (validated by the fake).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testkit.fake_github.app import HANDLERS, Ctx, error


@dataclass
class AppScene:
    """Artifacts by workflow run id (``[(name, zip bytes)]``), files by (repo, path), blob URLs."""

    artifacts: dict[int, list[tuple[str, bytes]]] = field(default_factory=dict)
    files: dict[tuple[str, str], str] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    blob_url: str = ""
    slug: str = "perfgate"
    #: operation id → HTTP status it answers instead (e.g. a missing workflow: dispatch → 404)
    failures: dict[str, int] = field(default_factory=dict)


def results_zip(doc: dict, *, folder: str = "") -> bytes:
    """An artifact archive as upload-artifact makes it: results.json (+ a report)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{folder}results.json", json.dumps(doc))
        archive.writestr(f"{folder}report.md", "# report\n")
    return buffer.getvalue()


class BlobServer:
    """Loopback stand-in for the storage host an artifact download redirects to."""

    def __init__(self, scene: AppScene):
        blobs = scene.blobs

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                data = blobs.get(self.path.lstrip("/"))
                if data is None or self.headers.get("Authorization"):
                    # storage URLs are pre-signed: a forwarded token would be a leak (and S3 rejects it)
                    self.send_response(404 if data is None else 400)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scene.blob_url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _run_json(ctx: Ctx, run_id: int) -> dict:
    data = ctx.example("actions/get-workflow-run")
    base = f"{ctx.base_url}/repos/{ctx.repo}/actions/runs/{run_id}"
    run = ctx.state.workflow_runs[run_id]
    data.update(id=run_id, url=base, html_url=f"https://github.com/{ctx.repo}/actions/runs/{run_id}",
                jobs_url=f"{base}/jobs", logs_url=f"{base}/logs", artifacts_url=f"{base}/artifacts",
                cancel_url=f"{base}/cancel", rerun_url=f"{base}/rerun", status=run["status"],
                conclusion=run["conclusion"])
    return data


def handlers(scene: AppScene) -> dict:
    def get_run(ctx: Ctx):
        run = ctx.state.workflow_runs.get(int(ctx.params["run_id"]))
        if run is None or run["repo"] != ctx.repo:
            return error(404, "Not Found")
        return 200, _run_json(ctx, run["id"])

    def list_runs(ctx: Ctx):
        """A workflow's dispatched runs, newest first, named as the App's workflow names them
        (``run-name: perfgate <run-id input>``)."""
        items = []
        for run_id, run in sorted(ctx.state.workflow_runs.items(), reverse=True):
            dispatch = run.get("dispatch") or {}
            if run["repo"] != ctx.repo or dispatch.get("workflow_id") != ctx.params["workflow_id"]:
                continue
            inputs = dispatch.get("inputs") or {}
            items.append(dict(_run_json(ctx, run_id), event="workflow_dispatch",
                              display_title=f"perfgate {inputs.get('run-id') or inputs.get('head-sha')}"))
        return 200, {"total_count": len(items), "workflow_runs": items}

    def list_artifacts(ctx: Ctx):
        run_id = int(ctx.params["run_id"])
        template = ctx.example()["artifacts"][0]
        items = []
        for i, (name, data) in enumerate(scene.artifacts.get(run_id, [])):
            artifact_id = run_id * 100 + i
            items.append(dict(template, id=artifact_id, name=name, size_in_bytes=len(data), expired=False,
                              url=f"{ctx.base_url}/repos/{ctx.repo}/actions/artifacts/{artifact_id}",
                              archive_download_url=f"{ctx.base_url}/repos/{ctx.repo}/actions/artifacts/{artifact_id}/zip"))
            scene.blobs[f"blob/{artifact_id}"] = data
        return 200, {"total_count": len(items), "artifacts": items}

    def download(ctx: Ctx):
        if ctx.token.login == "github-actions[bot]" and ctx.state.tokens:
            return error(401, "Bad credentials")
        key = f"blob/{ctx.params['artifact_id']}"
        if key not in scene.blobs:
            return error(410, "Gone")
        return 302, None, {"Location": f"{scene.blob_url}/{key}"}

    def get_content(ctx: Ctx):
        text = scene.files.get((ctx.repo, ctx.params["path"]))
        if text is None:
            return error(404, "Not Found")
        data = ctx.example()
        if isinstance(data, list):
            data = data[0]
        data.update(type="file", encoding="base64", name=ctx.params["path"], path=ctx.params["path"],
                    content=base64.b64encode(text.encode()).decode(), size=len(text))
        return 200, data

    def get_app(ctx: Ctx):
        data = ctx.example()
        data.update(slug=scene.slug, name=scene.slug)
        return 200, data

    def failing(operation_id: str):
        def handler(ctx: Ctx):
            if operation_id in scene.failures:
                return error(scene.failures[operation_id], "Not Found" if scene.failures[operation_id] == 404
                             else "Server Error")
            return HANDLERS[operation_id](ctx)
        return handler

    return {"actions/create-workflow-dispatch": failing("actions/create-workflow-dispatch"),
            "checks/create": failing("checks/create"), "actions/get-workflow-run": get_run,
            "actions/list-workflow-runs": list_runs, "actions/list-workflow-run-artifacts": list_artifacts,
            "actions/download-artifact": download, "repos/get-content": get_content,
            "apps/get-authenticated": get_app}


@contextlib.contextmanager
def labelled_pr_github(openapi, handlers: dict, head_sha: str, base_sha: str):
    """A fake GitHub with ``handlers``, the demo repository and its PR #7 (labeled, ``head_sha`` on
    ``base_sha``) on which ``maintainer`` may write; fails at the end on any request that broke
    GitHub's OpenAPI description."""
    from testkit.fake_github import FakeGitHub

    from . import payloads as P

    with FakeGitHub(openapi, handlers=handlers) as gh:
        gh.state.add_repo("octo/demo")
        gh.state.add_token("ghs_nobody")
        gh.state.add_pull(P.REPO, 7, head_sha=head_sha, base_sha=base_sha, labels=["performance"])
        gh.state.set_permission(P.REPO, "maintainer", "write")
        yield gh
        gh.assert_no_violations()


def losing_handlers(scene: AppScene, operations, lose: dict[str, int], down: dict[str, int] | None = None) -> dict:
    """:func:`handlers` where each of ``operations`` can *lose its answer*: while ``lose[op]`` > 0
    the call is carried out and then answered 502 (GitHub timing out after doing the work, or the
    worker dying before it recorded the answer); while ``down[op]`` is set it answers that status
    without doing anything (403: a secondary rate limit)."""
    base = handlers(scene)

    def losing(operation_id: str):
        def handler(ctx: Ctx):
            if down and operation_id in down:
                if down[operation_id] == 403:  # GitHub's secondary rate limit
                    return 403, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes.",
                                 "documentation_url": "https://docs.github.com/rest"}, {"Retry-After": "1"}
                return error(down[operation_id], "Server Error")
            answer = (base.get(operation_id) or HANDLERS[operation_id])(ctx)
            if lose.get(operation_id):
                lose[operation_id] -= 1
                return error(502, "Server Error")
            return answer
        return handler

    return {**base, **{op: losing(op) for op in operations}}


class WebhookReceiver:
    """A Slack-compatible incoming webhook on 127.0.0.1 over TLS (a private CA's certificate for
    ``127.0.0.1``, ``bot.tls``): every JSON body posted to it is kept in ``messages``; ``fail``
    answers that many requests 500 first (after reading them: a message that may have arrived).
    ``ca_file`` is the CA to trust, ``url`` the hook's address."""

    def __init__(self, folder):
        import ssl
        from pathlib import Path

        from bot.tls import CA_FILE, CERT_FILE, KEY_FILE, make_tls_files

        folder = Path(folder)
        make_tls_files(folder, ["127.0.0.1"])
        self.ca_file = str(folder / CA_FILE)
        self.messages: list[dict] = []
        self.fail = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if receiver.fail:
                    receiver.fail -= 1
                    self.send_response(500)
                else:
                    receiver.messages.append({"path": self.path, "host": self.headers.get("Host"),
                                              "body": json.loads(data)})
                    self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(folder / CERT_FILE), str(folder / KEY_FILE))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_port}/services/T0/B0/secret"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
