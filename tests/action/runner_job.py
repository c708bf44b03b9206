"""A GitHub Actions job on a self-hosted runner, emulated closely enough to attack it.

What the runner does (``actions/runner``, ``src/Runner.Worker``) and this reproduces:

- a runner folder with its registration credentials (``.credentials``, ``.credentials_rsaparams``,
  ``.runner``) and ``_work/`` holding ``_temp`` (``RUNNER_TEMP``), ``_tool`` and the clone
  (``GITHUB_WORKSPACE``); a ``Runner.Worker`` process alive for the whole job, its
  environment holding a secret; a home folder with ``~/.git-credentials``;
- every step as the same OS user, with the runner's variables (``GITHUB_*``, ``RUNNER_*``,
  ``CI``, ``RUNNER_TRACKING_ID``), the job's ``env``, what earlier steps appended to their
  ``GITHUB_ENV`` file, then the step's own ``env`` (``FileCommandManager.cs``:
  ``SetEnvFileCommand`` accepts any name; ``AddPathFileCommand`` prepends to ``PATH``; a step's
  ``env`` wins over both);
- fresh file-command files per step under ``RUNNER_TEMP/_runner_file_commands/``
  (``set_env_<guid>``, ``add_path_<guid>``, ``set_output_<guid>``, ``step_summary_<guid>``),
  read after the step;
- ``run:`` steps through ``bash --noprofile --norc -eo pipefail`` in their working directory;
- JavaScript actions stood in for by Python processes that hold what their node process holds:
  ``actions/checkout`` (``INPUT_TOKEN``; its post step runs git in the clone),
  ``actions/upload-artifact`` (``ACTIONS_RUNTIME_TOKEN``; reads the folder following symbolic
  links, as ``@actions/glob`` does by default); post steps run last, in reverse order.

The workflow file and ``action.yml`` are the project's own; their ``${{ }}`` expressions are
filled in from the contexts a run has (``inputs``, ``steps.<id>.outputs``, ``runner.temp``,
``github.token``, ``github.action_path``). An expression this module does not know is a test error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

#: A JavaScript action's process (the stand-in): reads its role from argv, does what that action
#: does with the files, and stays alive a moment (long enough to be found in /proc).
NODE_STANDIN = r'''
import json, os, subprocess, sys, time
role, record = sys.argv[1], sys.argv[2]
done = {"role": role}
if role == "upload-artifact":
    root = os.environ["INPUT_PATH"]
    uploaded = {}
    for folder, _dirs, names in os.walk(root, followlinks=True):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.exists(path) and not os.path.isfile(path):
                uploaded[os.path.relpath(path, root)] = "not a regular file"   # a FIFO would hang the upload
                continue
            try:
                with open(path, "rb") as fh:   # follows symbolic links, as @actions/glob does
                    uploaded[os.path.relpath(path, root)] = fh.read(1 << 20).decode("utf-8", "replace")
            except OSError as exc:
                uploaded[os.path.relpath(path, root)] = f"unreadable: {exc}"
    done["uploaded"] = uploaded
elif role == "checkout-post":
    ws = os.environ["GITHUB_WORKSPACE"]
    for args in (["config", "--local", "--name-only", "--get-regexp", r"http\..*\.extraheader"], ["status", "--porcelain"]):
        subprocess.run(["git", "-C", ws, *args], capture_output=True, timeout=60)
time.sleep(float(os.environ.get("STANDIN_LINGER", "1.5")))
with open(record, "w") as fh:
    json.dump(done, fh)
'''


@dataclass
class Secrets:
    """Every credential present somewhere on the emulated runner during the job."""

    github_token: str = "ghs_JOBTOKEN" + uuid.uuid4().hex
    runtime_token: str = "ACTIONS_RUNTIME_" + uuid.uuid4().hex
    id_token_request: str = "ACTIONS_ID_REQUEST_" + uuid.uuid4().hex
    runner_credentials: str = "RUNNER_RSA_PARAMS_" + uuid.uuid4().hex
    worker_secret: str = "RUNNER_WORKER_ENV_" + uuid.uuid4().hex
    home_credentials: str = "ghp_HOMECREDENTIAL" + uuid.uuid4().hex

    def all(self) -> dict[str, str]:
        return dict(self.__dict__)

    def found_in(self, text: str) -> list[str]:
        """Names of the secrets that occur in ``text``."""
        return [name for name, value in self.all().items() if value in text]


@dataclass
class Step:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""                                     # what it wrote to GITHUB_STEP_SUMMARY
    record: dict = field(default_factory=dict)            # a JavaScript action's stand-in: what it did


class EmulatedRunner:
    """One self-hosted runner with one job's layout (see the module docstring).

    Args:
        root: an empty folder to build the runner in.
        python: the runner's interpreter (``RunnerPython``): a throwaway venv, since the job's
            steps write into it (``pip install``) and an attacker may try to.
    """

    def __init__(self, root: Path, python: Path, repository: str = "octo/demo"):
        self.root = root
        self.secrets = Secrets()
        self.repository = repository
        name = repository.split("/")[1]
        self.runner_dir = root / "actions-runner"
        self.work = self.runner_dir / "_work"
        self.temp = self.work / "_temp"
        self.workspace = self.work / name / name
        self.home = root / "home"
        self.python = python
        for folder in (self.temp, self.work / "_tool", self.workspace.parent, self.home):
            folder.mkdir(parents=True, exist_ok=True)
        (self.runner_dir / ".credentials_rsaparams").write_text(json.dumps({"d": self.secrets.runner_credentials}))
        (self.runner_dir / ".credentials").write_text(json.dumps({"scheme": "OAuth", "data": {"clientId": "x"}}))
        (self.runner_dir / ".runner").write_text(json.dumps({"agentName": "gpu-1", "gitHubUrl": "https://github.com"}))
        (self.home / ".git-credentials").write_text(f"https://x:{self.secrets.home_credentials}@github.com\n")
        self.tracking_id = f"github_{uuid.uuid4()}"
        self.records = root / "standin-records"
        self.records.mkdir()
        self.steps: list[Step] = []
        self.env_from_files: dict[str, str] = {}
        self.path_from_files: list[str] = []
        self.worker: subprocess.Popen | None = None
        #: More variables of every step (the event, the API URL of the fake GitHub).
        self.extra_env: dict[str, str] = {}
        #: A command prefix every process of the runner runs under (the Kubernetes runner pod's
        #: user, no_new_privs and seccomp profile: tests/deploy/runner_pod.py); empty: as is.
        self.wrap: list[str] = []
        #: (uid, gid) the step command files are given to: the user ``wrap`` runs as.
        self.owner: tuple[int, int] | None = None

    # -- the runner's processes -------------------------------------------------------------
    def __enter__(self) -> "EmulatedRunner":
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "RUNNER_WORKER_SECRET": self.secrets.worker_secret}
        self.worker = subprocess.Popen([*self.wrap, sys.executable, "-c",
                                        "import time; time.sleep(3600)", "Runner.Worker"],
                                       env=env, start_new_session=True)
        return self

    def __exit__(self, *exc) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker.wait()

    def base_env(self) -> dict[str, str]:
        """What the runner gives every step of the job."""
        return {
            "PATH": os.pathsep.join([str(self.python.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.home), "USER": os.environ.get("USER", "runner"), "LANG": "C.UTF-8",
            "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": self.repository,
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp),
            "RUNNER_TOOL_CACHE": str(self.work / "_tool"), "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
            "RUNNER_TRACKING_ID": self.tracking_id, **self.extra_env,
        }

    def _file_commands(self) -> dict[str, Path]:
        folder = self.temp / "_runner_file_commands"
        folder.mkdir(exist_ok=True)
        guid = uuid.uuid4()
        files = {"GITHUB_ENV": folder / f"set_env_{guid}", "GITHUB_PATH": folder / f"add_path_{guid}",
                 "GITHUB_OUTPUT": folder / f"set_output_{guid}", "GITHUB_STEP_SUMMARY": folder / f"step_summary_{guid}",
                 "GITHUB_STATE": folder / f"save_state_{guid}"}
        for path in files.values():
            path.touch()
            if self.owner is not None:
                os.chown(path, *self.owner)
        return files

    def _apply_file_commands(self, files: dict[str, Path]) -> dict[str, str]:
        self.env_from_files.update(parse_key_values(files["GITHUB_ENV"].read_text("utf-8", "replace")))
        added = [line.strip() for line in files["GITHUB_PATH"].read_text("utf-8", "replace").splitlines() if line.strip()]
        self.path_from_files = added[::-1] + self.path_from_files
        return parse_key_values(files["GITHUB_OUTPUT"].read_text("utf-8", "replace"))

    def step_env(self, job_env: dict[str, str], own: dict[str, str], files: dict[str, Path]) -> dict[str, str]:
        env = {**self.base_env(), **job_env, **self.env_from_files, **own}
        if self.path_from_files:
            env["PATH"] = os.pathsep.join([*self.path_from_files, env["PATH"]])
        env.update({k: str(v) for k, v in files.items()})
        return env

    def run_step(self, name: str, script: str, *, job_env: dict[str, str], env: dict[str, str], cwd: Path,
                 timeout: float = 600) -> Step:
        files = self._file_commands()
        bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
        proc = subprocess.run([*self.wrap, *bash], cwd=cwd,
                              env=self.step_env(job_env, env, files), capture_output=True, text=True, timeout=timeout)
        step = Step(name, proc.returncode, proc.stdout, proc.stderr, self._apply_file_commands(files))
        step.summary = files["GITHUB_STEP_SUMMARY"].read_text("utf-8", "replace")
        self.steps.append(step)
        return step

    def node_step(self, name: str, role: str, *, job_env: dict[str, str], env: dict[str, str]) -> Step:
        """A JavaScript action's step: ``node`` with the runner's tokens for actions."""
        files = self._file_commands()
        record = self.records / f"{role}-{uuid.uuid4().hex}.json"
        own = {"ACTIONS_RUNTIME_TOKEN": self.secrets.runtime_token,
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN": self.secrets.id_token_request, **env}
        full = self.step_env(job_env, own, files)
        # The runner starts its own node by absolute path; the stand-in likewise. Like any
        # dynamically linked program it gets LD_PRELOAD and the like from GITHUB_ENV.
        standin = [sys.executable, "-c", NODE_STANDIN, role, str(record)]
        proc = subprocess.run([*self.wrap, *standin], env=full,
                              capture_output=True, text=True, timeout=120)
        step = Step(name, proc.returncode, proc.stdout, proc.stderr, self._apply_file_commands(files))
        step.record = json.loads(record.read_text()) if record.is_file() else {}
        self.steps.append(step)
        return step


class Collector:
    """An attacker's listener on loopback (what a real attacker has: a network): collects one
    JSON document per line from anyone who connects. ``with Collector() as c: ... c.messages``."""

    def __init__(self):
        import socketserver
        import threading

        self.messages: list[dict] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for line in self.rfile:
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    with collector.lock:
                        collector.messages.append(message)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self) -> "Collector":
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def text(self) -> str:
        with self.lock:
            return json.dumps(self.messages)

    def kinds(self, ok: bool | None = None) -> set[str]:
        """The ``kind`` of each message (only those whose ``data.ok`` is ``ok``, when given)."""
        with self.lock:
            return {m.get("kind") for m in self.messages
                    if ok is None or (isinstance(m.get("data"), dict) and m["data"].get("ok") is ok)}


def processes_with(marker: str, where: str = "environ") -> list[int]:
    """PIDs of the processes anywhere on this machine whose ``/proc/<pid>/<where>`` holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / where).read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def parse_key_values(text: str) -> dict[str, str]:
    """``NAME=value`` and ``NAME<<DELIMITER`` … ``DELIMITER`` lines (GITHUB_ENV, GITHUB_OUTPUT)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            try:
                end = lines.index(delimiter, i + 1)
            except ValueError:
                break
            out[key] = "\n".join(lines[i + 1:end])
            i = end + 1
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
            i += 1
        else:
            i += 1
    return out


EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
#: ``a.b == 'x' && 'then' || 'else'``, the one conditional form the project's workflows pass on.
CHOICE = re.compile(r"([\w.-]+)\s*==\s*'([^']*)'\s*&&\s*'([^']*)'\s*\|\|\s*'([^']*)'")


def expand(text: str, contexts: dict[str, str]) -> str:
    """``${{ a.b }}`` replaced from ``contexts`` (keys as written inside the braces), and
    ``${{ a.b == 'x' && 'then' || 'else' }}``."""
    def sub(match):
        key = match.group(1).strip()
        choice = CHOICE.fullmatch(key)
        if choice and choice.group(1) in contexts:
            same = contexts[choice.group(1)] == choice.group(2)
            return choice.group(3) if same else choice.group(4)
        if key not in contexts:
            raise KeyError(f"no value for ${{{{ {key} }}}} in the emulated job")
        return contexts[key]
    return EXPRESSION.sub(sub, str(text))


def condition_holds(condition: str, contexts: dict[str, str]) -> bool:
    """The few ``if:`` forms the project's files use: ``always() && steps.X.outputs.Y != ''``."""
    match = re.fullmatch(r"always\(\)\s*&&\s*(steps\.[\w-]+\.outputs\.[\w-]+)\s*!=\s*''", condition.strip())
    if not match:
        raise ValueError(f"the emulated job does not know the condition {condition!r}")
    return contexts.get(match.group(1), "") != ""


def load_yaml(path: Path) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text())


def run_composite(runner: EmulatedRunner, action_yml: Path, inputs: dict[str, str], *, job_env: dict[str, str],
                  step_id: str | None, contexts: dict[str, str]) -> dict[str, str]:
    """The steps of a composite action (``action.yml``) with ``inputs``; returns its outputs."""
    action = load_yaml(action_yml)
    values = {"runner.temp": str(runner.temp), "github.token": runner.secrets.github_token,
              "github.action_path": str(action_yml.parent)}
    for name, spec in action.get("inputs", {}).items():
        default = str(spec.get("default", ""))
        values[f"inputs.{name}"] = inputs.get(name, expand(default, values) if "${{" in default else default)
    for step in action["runs"]["steps"]:
        if "if" in step and not condition_holds(step["if"], values):
            continue
        if "uses" in step:
            role = step["uses"].split("@")[0].removeprefix("actions/")
            own = {f"INPUT_{k.upper().replace('-', '_')}": expand(v, values) for k, v in (step.get("with") or {}).items()}
            result = runner.node_step(step.get("name", role), role, job_env=job_env, env=own)
        else:
            own = {k: expand(v, values) for k, v in (step.get("env") or {}).items()}
            cwd = Path(expand(step.get("working-directory", str(runner.workspace)), values))
            result = runner.run_step(step["name"], step["run"], job_env=job_env, env=own, cwd=cwd)
        if result.returncode != 0:
            raise StepFailed(result)
        for key, value in result.outputs.items():
            if "id" in step:
                values[f"steps.{step['id']}.outputs.{key}"] = value
    outputs = {name: expand(spec["value"], values) if "${{" in str(spec["value"]) else spec["value"]
               for name, spec in (action.get("outputs") or {}).items()}
    if step_id:
        contexts.update({f"steps.{step_id}.outputs.{k}": v for k, v in outputs.items()})
    return outputs


class StepFailed(AssertionError):
    def __init__(self, step: Step):
        super().__init__(f"step {step.name!r} failed ({step.returncode}):\n{step.stdout}\n{step.stderr}")
        self.step = step


def run_workflow_job(runner: EmulatedRunner, workflow: Path, job: str, dispatch_inputs: dict[str, str],
                     *, action_overrides: dict[str, str] | None = None) -> dict[str, str]:
    """Run one job of a workflow file as the runner would (its ``uses: perfgate/perfgate@…`` is
    this repository's ``action.yml``, with ``action_overrides`` on top of its ``with:``);
    returns the contexts (step outputs) at the end. Post steps run last, in reverse order."""
    document = load_yaml(workflow)
    spec = document["jobs"][job]
    job_env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
    # A declared workflow_dispatch input the dispatch leaves out reads as its default, else ''
    # (as GitHub evaluates ``inputs.<name>``); YAML 1.1 reads the key ``on`` as True.
    triggers = document.get("on", document.get(True)) or {}
    declared = ((triggers.get("workflow_dispatch") or {}).get("inputs") or {}) if isinstance(triggers, dict) else {}
    contexts = {f"inputs.{k}": str((v or {}).get("default", "")).lower() if isinstance((v or {}).get("default"), bool)
                else str((v or {}).get("default", "")) for k, v in declared.items()}
    contexts.update({f"inputs.{k}": v for k, v in dispatch_inputs.items()})
    contexts["github.token"] = runner.secrets.github_token
    posts = []
    for step in spec["steps"]:
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/checkout@"):
            token = {"INPUT_TOKEN": runner.secrets.github_token,
                     **{f"INPUT_{k.upper().replace('-', '_')}": str(v) for k, v in (step.get("with") or {}).items()}}
            runner.node_step("checkout", "checkout", job_env=job_env, env=token)
            posts.append(("Post checkout", "checkout-post", token))
        elif uses.startswith("perfgate/perfgate@"):
            inputs = {k: expand(v, contexts) for k, v in (step.get("with") or {}).items()}
            inputs = {k: v.lower() if v in ("True", "False") else v for k, v in inputs.items()}
            inputs.update(action_overrides or {})
            run_composite(runner, REPO_ROOT / "action.yml", inputs, job_env=job_env, step_id=step.get("id"),
                          contexts=contexts)
        elif "run" in step:
            own = {k: expand(v, contexts) for k, v in (step.get("env") or {}).items()}
            result = runner.run_step(step.get("name", "run"), step["run"], job_env=job_env, env=own,
                                     cwd=runner.workspace)
            if result.returncode != 0:
                raise StepFailed(result)
        else:
            raise ValueError(f"the emulated job does not know the step {step}")
    for name, role, env in reversed(posts):
        runner.node_step(name, role, job_env=job_env, env=env)
    return contexts


def runner_python(folder: Path) -> Path:
    """A throwaway interpreter for the emulated runner: a venv whose site-packages sees this
    checkout (perfgate) and the test environment's packages (torch), and whose ``pip`` only
    records what it was asked to install (no network here; action.yml's install step runs as is)."""
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    site = Path(sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})["purelib"])
    ours = sysconfig.get_paths()
    (site / "_perfgate_checkout.pth").write_text(f"{REPO_ROOT}\n{ours['purelib']}\n{ours['platlib']}\n")
    pip = site / "pip"
    pip.mkdir()
    (pip / "__init__.py").write_text("")
    (pip / "__main__.py").write_text("import sys, os\nopen(os.path.join(os.path.dirname(__file__), 'asked.txt'), 'a')"
                                     ".write(' '.join(sys.argv[1:]) + '\\n')\n")
    return folder / "bin" / "python"
