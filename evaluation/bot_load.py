"""The GitHub App under load and faults: is every accepted delivery's work done, once?

A benchmark, not a test. Everything runs on 127.0.0.1, started by this script in a temporary
folder: a throwaway PostgreSQL (fsync on) and Redis (``--appendonly yes``, as
docker-compose.yml runs it) from the system packages (testkit/services.py), the fake GitHub
(testkit/fake_github, in a process of its own, with its OpenAPI validation) that fails a fraction
``--faults`` of the API calls, ``perfgate migrate``, gunicorn with the Dockerfile's command
(``bot:create_app()``, 2 workers × 4 threads) and two Huey consumers (``perfgate worker``), one of
which is killed with SIGKILL half way through and restarted (compose's ``restart:
unless-stopped``).

The deliveries, signed with the webhook secret, each with its own ``X-GitHub-Delivery``, over
``--prs`` pull requests (each labeled ``performance``): ``pull_request`` ``labeled`` (check
run + dispatch + sticky comment), ``synchronize`` on some PRs (a new run supersedes the first),
``issue_comment`` ``/perf help`` and ``/perf history BENCH`` (a reply each), plain comments
(answered 204: not commands, never stored), events perfgate ignores (``pull_request`` ``edited``/``assigned``,
answered 204), GitHub "Redeliver" of about 1 % of them (same GUID, same body), and — played by
this script as GitHub Actions — ``workflow_run`` ``in_progress`` and ``completed`` for every
workflow the App dispatched, the completed run's results artifact uploaded first. ``C``
client threads with keep-alive connections send them and time each answer; then the script
waits for the queue to drain, running ``perfgate sweep --stale-after S`` (the operator's
recovery of lost work) whenever the queue has been empty and quiet for ``S`` seconds while
deliveries are still ``queued`` or ``failed``.

Counted at the end, from the database (``app_deliveries``, ``app_runs``) and the fake GitHub:

- ``lost``: accepted deliveries (answered 202) whose status is not ``done``/``ignored``;
- ``duplicates_processed``: GitHub writes carried out more than once for one piece of work —
  check runs created beyond one per run key (``external_id``), workflow dispatches beyond one
  per run key (``run-id`` input), sticky comments beyond one per PR, and replies posted more
  than once for one command (the same reply body twice on one PR: each PR gets one ``/perf
  help`` and ``/perf history`` commands with distinct benchmark names); reactions are left
  out (GitHub de-duplicates them);
- ``duplicate_comments``: PRs with more than one perfgate sticky comment, plus replies posted
  twice (as above);
- ``stuck_runs``: runs still ``queued``/``in_progress`` after everything drained although the
  workflow run GitHub has for them (by workflow run id, else by the dispatch's run key) is
  completed;
- ``p50_ms``/``p99_ms``/``max_ms``: time from sending a delivery to its 202, over all 202
  answers; in the open loop (``--rate N``: deliveries due at N per second, Poisson or
  ``--fixed`` arrivals, whatever the answers do) from the time it was due, so waiting for a
  free connection counts;
- ``web_cpu_ms``: CPU time (user + system) of the web process (gunicorn master and workers,
  from ``/proc``) while the deliveries were sent, divided by the deliveries sent.

The last line is ``deliveries=N p50_ms=.. p99_ms=.. max_ms=.. web_cpu_ms=.. lost=..
duplicates_processed=.. duplicate_comments=.. stuck_runs=..``; the lines before it break the
figures down.

Usage::

    python evaluation/bot_load.py --quick                       # 300 deliveries, ~2 minutes
    python evaluation/bot_load.py --smoke                       # 16 deliveries: the script still runs (CI)
    python evaluation/bot_load.py --deliveries 2000 --rate 100 --faults 0.2   # open loop, 100 deliveries/s
    python evaluation/bot_load.py --deliveries 5000 --concurrency 50 --faults 0.2
    python evaluation/bot_load.py --strangers 1000 --prs 20 --concurrency 10   # P4

``--strangers N`` sends N ``/perf`` comments of users without permission (five accounts,
``author_association`` NONE) over ``--prs`` PRs instead, and prints the GitHub calls the App made
for them (every call the fake GitHub answered, installation tokens included) and the dispatches.

The fake GitHub answers a time-out by holding the request ``--hang`` seconds (then carrying
it out), above the App's ``PERFGATE_GITHUB_TIMEOUT`` (``--github-timeout``), so a time-out
costs seconds, not the default 20 s.
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import http.client
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "evaluation"))

from webhook_load import process_tree_cpu  # noqa: E402

REPO = "octo/demo"
BOT = "perfgate[bot]"
MAINTAINER = "maintainer"


# -- the fake GitHub, in a process of its own ------------------------------------------------------
def _github_main(conn, fraction: float, seed: int, hang: float) -> None:
    """Child process: serve the fake GitHub (+ artifact storage) and answer ``(name, args)``
    requests on ``conn`` until ``("stop", ())``."""
    sys.path.insert(0, str(ROOT))
    from runner.report import MARKER
    from testkit import app_fakes
    from testkit.fake_github import FakeGitHub, Faults
    from testkit.results_doc import bench, results_doc

    scene = app_fakes.AppScene()
    blobs = app_fakes.BlobServer(scene)
    faults = Faults(fraction, seed=seed, hang=hang)
    gh = FakeGitHub(handlers=app_fakes.handlers(scene), faults=faults).start()
    state = gh.state

    def setup(prs: list[tuple[int, str, str]]) -> None:
        state.add_repo(REPO)
        state.add_token("ghs_nobody")  # only tokens minted for the App's JWT are accepted
        state.set_permission(REPO, MAINTAINER, "maintain")
        for number, head, base in prs:
            state.add_pull(REPO, number, head_sha=head, base_sha=base, labels=["performance"])

    def comment(number: int, body: str) -> int:
        return state.create_comment(REPO, number, body, MAINTAINER, "User").id

    def dispatches_since(start: int) -> list[dict]:
        with state.lock:
            return [{"run_id": d["run_id"], "key": d["inputs"].get("run-id"), "head": d["inputs"].get("head-sha"),
                     "base": d["inputs"].get("base-sha")} for d in state.dispatches[start:]]

    def start_run(run_id: int) -> None:
        with state.lock:
            state.workflow_runs[run_id]["status"] = "in_progress"

    def complete_run(run_id: int, key: str, base: str, head: str) -> None:
        ratio = 1.0 + (run_id % 7) / 50
        doc = results_doc([bench("bench_norm[rows=4096]", "regression" if ratio > 1.05 else "unchanged", ratio)],
                          base_sha=base, head_sha=head)
        scene.artifacts[run_id] = [(f"perfgate-results-{key}", app_fakes.results_zip(doc))]
        with state.lock:
            state.workflow_runs[run_id].update(status="completed", conclusion="success")

    def snapshot() -> dict:
        with state.lock:
            comments = [(c.issue_number, c.login, c.body.startswith(MARKER), hashlib.sha1(c.body.encode()).hexdigest())
                        for c in state.comments.values()]
            # what the App answered the maintainer's commands (a refusal would be a wrong answer)
            answers = collections.Counter("refusal" if "only takes commands from people with" in c.body else
                                          c.body.strip().splitlines()[0][:24] for c in state.comments.values()
                                          if c.login == BOT and not c.body.startswith(MARKER))
            checks = [(r.get("external_id"), r["status"], r.get("conclusion")) for r in state.check_runs.values()]
            dispatched = [(d["run_id"], d["inputs"].get("run-id")) for d in state.dispatches]
            runs = {i: (r["status"], r["conclusion"]) for i, r in state.workflow_runs.items()}
        requests = list(gh.requests)
        writes = collections.defaultdict(list)  # every attempt at a GitHub write, by what it writes
        for r in requests:
            body = r.body if isinstance(r.body, dict) else {}
            if r.operation_id == "checks/create":
                what = ("check run", body.get("external_id"))
            elif r.operation_id == "issues/create-comment":
                text = str(body.get("body"))
                what = ("comment", r.path, hashlib.sha1(text.encode()).hexdigest()[:8], repr(text[:60]))
            elif r.operation_id == "actions/create-workflow-dispatch":
                what = ("dispatch", (body.get("inputs") or {}).get("run-id"))
            else:
                continue
            writes[what].append((r.fault, r.status, r.at))
        repeated = {" ".join(map(str, what)): attempts for what, attempts in writes.items()
                    if sum(1 for fault, status, _ in attempts if fault in (None, "timeout") and status < 300) > 1}
        return {"comments": comments, "check_runs": checks, "dispatches": dispatched, "workflow_runs": runs,
                "requests": len(requests), "faults": collections.Counter(r.fault for r in requests if r.fault),
                "operations": collections.Counter(r.operation_id for r in requests),
                "statuses": collections.Counter(r.status for r in requests),
                "violations": list(gh.violations[:20]), "repeated_writes": repeated, "replies": answers,
                "open_check_runs": sum(1 for r in state.check_runs.values() if r["status"] != "completed")}

    calls: dict[str, Callable] = {"setup": setup, "comment": comment, "dispatches_since": dispatches_since,
                                  "start_run": start_run, "complete_run": complete_run, "snapshot": snapshot}
    conn.send(gh.url)
    try:
        while True:
            name, args = conn.recv()
            if name == "stop":
                break
            try:
                conn.send(("ok", calls[name](*args)))
            except Exception as exc:  # noqa: BLE001 - reported to the parent
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        gh.stop()
        blobs.stop()


class GitHubProcess:
    """The fake GitHub in a child process (its request handling and validation do not compete
    for the driver's GIL); ``call(name, *args)`` runs one of ``_github_main``'s functions."""

    def __init__(self, fraction: float, seed: int, hang: float):
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_github_main, args=(child, fraction, seed, hang), daemon=True)
        self._proc.start()
        self.url = self._conn.recv()
        self._lock = threading.Lock()

    def call(self, name: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((name, args))
            outcome, value = self._conn.recv()
        if outcome != "ok":
            raise RuntimeError(f"fake GitHub {name}: {value}")
        return value

    def stop(self) -> None:
        with self._lock:
            self._conn.send(("stop", ()))
        self._proc.join(timeout=15)


# -- deliveries ------------------------------------------------------------------------------------
@dataclass
class Delivery:
    """One delivery to send: ``event`` header, GUID, what it is (for the breakdown), and how
    to build its body (built once, before it is sent; a redelivery reuses the body)."""

    event: str
    guid: str
    kind: str
    build: Callable[[], bytes]
    body: bytes | None = None

    def payload(self) -> bytes:
        if self.body is None:
            self.body = self.build()
        return self.body


class Payloads:
    """Signed-delivery bodies from the tests' builders (published examples completed to and
    validated against GitHub's webhook schemas), built once and patched per PR."""

    def __init__(self):
        from testkit import payloads as P

        self.P = P
        self.labeled = P.pull_request("labeled", number=1, head_sha="1" * 40, base_sha="2" * 40,
                                      labels=("performance",))[1]
        self.synchronize = P.pull_request("synchronize", number=1, head_sha="1" * 40, base_sha="2" * 40,
                                          labels=("performance",))[1]
        self.ignored = {action: P.pull_request(action, number=1, head_sha="1" * 40, base_sha="2" * 40,
                                               labels=("performance",))[1] for action in ("edited", "assigned")}
        self.comment = P.issue_comment("created", "/perf help", number=1, login=MAINTAINER)[1]
        self.stranger = P.issue_comment("created", "/perf run", number=1, login="stranger")[1]
        self.stranger["comment"]["author_association"] = "NONE"  # GitHub's word for a stranger
        self.workflow = {action: P.workflow_run(action, 1, display_title="perfgate " + "0" * 20)[1]
                         for action in ("in_progress", "completed")}

    @staticmethod
    def _encode(payload: dict) -> bytes:
        return json.dumps(payload).encode()

    def pull_request(self, template: dict, number: int, head: str, base: str) -> bytes:
        payload = copy.deepcopy(template)
        payload["number"] = number
        pr = payload["pull_request"]
        pr.update(number=number, html_url=f"https://github.com/{REPO}/pull/{number}", id=500_000 + number)
        pr["head"]["sha"], pr["base"]["sha"] = head, base
        if payload["action"] == "synchronize":
            payload["after"] = head
        return self._encode(payload)

    def issue_comment(self, number: int, comment_id: int, body: str,
                      stranger: str | None = None) -> bytes:
        payload = copy.deepcopy(self.comment if stranger is None else self.stranger)
        if stranger is not None:
            payload["sender"]["login"] = payload["comment"]["user"]["login"] = stranger
        payload["comment"].update(id=comment_id, body=body,
                                  html_url=f"https://github.com/{REPO}/pull/{number}#issuecomment-{comment_id}")
        payload["issue"].update(number=number, html_url=f"https://github.com/{REPO}/pull/{number}")
        payload["issue"]["pull_request"].update(url=f"https://api.github.com/repos/{REPO}/pulls/{number}",
                                                html_url=f"https://github.com/{REPO}/pull/{number}")
        return self._encode(payload)

    def workflow_run(self, action: str, run_id: int, key: str, head: str) -> bytes:
        payload = copy.deepcopy(self.workflow[action])
        wr = payload["workflow_run"]
        wr.update(id=run_id, head_sha=head, display_title=f"perfgate {key}", name=f"perfgate {key}",
                  html_url=f"https://github.com/{REPO}/actions/runs/{run_id}")
        return self._encode(payload)

    def headers(self, event: str, body: bytes, guid: str) -> dict[str, str]:
        return self.P.headers(event, body, delivery=guid)


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def plan(payloads: Payloads, github: GitHubProcess, rng: random.Random, prs: int, static: int) -> list[Delivery]:
    """``static`` deliveries over ``prs`` PRs in a random order that keeps each PR's own order
    (labeled first); about 1 % are redelivered later (the same GUID and body)."""
    per_pr: list[list[Delivery]] = []
    numbers = list(range(1, prs + 1))
    github.call("setup", [(n, sha(f"head{n}"), sha(f"base{n}")) for n in numbers])
    for n in numbers:
        head, base = sha(f"head{n}"), sha(f"base{n}")
        events = [Delivery("pull_request", str(uuid.uuid4()), "labeled",
                           lambda n=n, head=head, base=base: payloads.pull_request(payloads.labeled, n, head, base))]
        for kind, text in (("help", "/perf help"), ("history", f"/perf history bench_pr{n}")):
            comment_id = github.call("comment", n, text)
            events.append(Delivery("issue_comment", str(uuid.uuid4()), kind,
                                   lambda n=n, c=comment_id, t=text: payloads.issue_comment(n, c, t)))
        if rng.random() < 0.3:
            new_head = sha(f"head{n}-2")
            events.append(Delivery("pull_request", str(uuid.uuid4()), "synchronize",
                                   lambda n=n, h=new_head, b=base: payloads.pull_request(payloads.synchronize, n, h, b)))
        per_pr.append(events)
    base_count = sum(len(e) for e in per_pr)
    fillers = max(0, static - base_count - static // 100)
    for i in range(fillers):
        n = rng.randrange(prs) + 1
        events = per_pr[n - 1]
        if rng.random() < 0.45:
            comment_id = 10_000_000 + i
            events.append(Delivery("issue_comment", str(uuid.uuid4()), "plain comment",
                                   lambda n=n, c=comment_id: payloads.issue_comment(n, c, "LGTM, thanks!")))
        else:
            action = rng.choice(("edited", "assigned"))
            events.append(Delivery("pull_request", str(uuid.uuid4()), "ignored",
                                   lambda n=n, a=action: payloads.pull_request(payloads.ignored[a], n, sha(f"head{n}"),
                                                                               sha(f"base{n}"))))
    timed = []
    for events in per_pr:
        times = sorted(rng.random() for _ in events)
        times[0] = min(times[0], 0.3)  # the label early in the run
        timed.extend(zip(times, events))
    timed.sort(key=lambda pair: pair[0])
    ordered = [d for _, d in timed]
    for _ in range(static - len(ordered)):  # GitHub's "Redeliver": the same GUID and body, later
        original = ordered[rng.randrange(len(ordered) // 2)]
        ordered.insert(rng.randrange(len(ordered) // 2, len(ordered) + 1),
                       Delivery(original.event, original.guid, "redelivery", original.payload))
    for delivery in ordered:  # built now: the client threads only send
        delivery.payload()
    return ordered


#: What the strangers post (``--strangers``): commands that would run, profile, bisect or answer.
STRANGER_POSTS = ("/perf run", "/perf run --sha " + "a" * 40, "/perf profile bench_norm",
                  "/perf bisect " + "b" * 40 + " " + "c" * 40, "/perf help", "/perf cancel")


def plan_strangers(payloads: Payloads, github: GitHubProcess, rng: random.Random, prs: int,
                   count: int, accounts: int = 5) -> list[Delivery]:
    """``count`` ``/perf`` comments by ``accounts`` users without any permission on the
    repository (``author_association`` NONE), spread over ``prs`` PRs at random (security review
    2026-12-06, P4: what they cost the installation's API budget)."""
    numbers = list(range(1, prs + 1))
    github.call("setup", [(n, sha(f"head{n}"), sha(f"base{n}")) for n in numbers])
    planned = []
    for i in range(count):
        n, who = rng.choice(numbers), f"stranger{rng.randrange(accounts)}"
        text = rng.choice(STRANGER_POSTS)

        def build(n=n, c=30_000_000 + i, t=text, w=who) -> bytes:
            return payloads.issue_comment(n, c, t, w)
        planned.append(Delivery("issue_comment", str(uuid.uuid4()), "stranger /perf", build))
    for delivery in planned:
        delivery.payload()
    return planned


# -- sending ---------------------------------------------------------------------------------------
class Feed:
    """What the client threads send: deliveries of the workflow runs first, then the planned ones."""

    def __init__(self, planned: list[Delivery]):
        self.planned = collections.deque(planned)
        self.dynamic: collections.deque[Delivery] = collections.deque()
        self.lock = threading.Lock()
        self.taken = 0
        self.stop = threading.Event()

    def add(self, delivery: Delivery) -> None:
        with self.lock:
            self.dynamic.append(delivery)

    def extend_planned(self, deliveries: list[Delivery]) -> None:
        with self.lock:
            self.planned.extend(deliveries)

    def empty(self) -> bool:
        with self.lock:
            return not self.planned and not self.dynamic

    def take(self) -> Delivery | None:
        """The next delivery, or None when there is none now."""
        with self.lock:
            if self.dynamic or self.planned:
                self.taken += 1
                return self.dynamic.popleft() if self.dynamic else self.planned.popleft()
        return None

    def next(self) -> Delivery | None:
        """The next delivery, waiting for one; None once stopped and empty."""
        while True:
            delivery = self.take()
            if delivery is not None:
                return delivery
            if self.stop.is_set():
                return None
            time.sleep(0.02)


class Pacer:
    """Open-loop arrivals: the deliveries of ``feed`` are due at ``rate`` per second — Poisson
    arrivals (exponential gaps, mean ``1/rate``) or, with ``fixed``, evenly spaced — whatever
    the server's answers do. :meth:`next` gives a delivery and the ``perf_counter`` time it is
    due; the caller sends it then (or at once when late) and times the answer from the due time,
    so time spent waiting for a free connection counts (no coordinated omission: a slow answer
    cannot hold the next deliveries back unmeasured). When the feed runs dry (waiting for the
    next ``workflow_run``), the schedule starts again from when a delivery is there: idle time
    is not owed as a burst."""

    def __init__(self, feed: Feed, rate: float, rng: random.Random, fixed: bool = False):
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self.feed, self.rate, self.rng, self.fixed = feed, rate, rng, fixed
        self.lock = threading.Lock()
        self.due = time.perf_counter()
        self.idle = True

    def gap(self) -> float:
        return 1 / self.rate if self.fixed else self.rng.expovariate(self.rate)

    def next(self) -> tuple[Delivery | None, float]:
        while True:
            with self.lock:
                delivery = self.feed.take()
                if delivery is not None:
                    now = time.perf_counter()
                    if self.idle:
                        self.due, self.idle = max(self.due, now), False
                    due, self.due = self.due, self.due + self.gap()
                    return delivery, due
                self.idle = True
            if self.feed.stop.is_set():
                return None, time.perf_counter()
            time.sleep(0.01)


@dataclass
class Sent:
    guid: str
    kind: str
    status: int | str
    seconds: float


def client(port: int, feed: Feed, payloads: Payloads, sent: list[Sent], lock: threading.Lock,
           pacer: Pacer | None = None) -> None:
    """One keep-alive connection sending what ``feed`` gives until it is stopped and empty.

    Closed loop (``pacer`` None): the next delivery goes when the answer came; a delivery's time
    is that of its last attempt (a connection gunicorn closed after its keep-alive time is opened
    again and the delivery sent once more, the same GUID). Open loop: each delivery is sent at
    the time ``pacer`` gives (at once when this connection was busy then), and its time runs
    from that due time to the answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while True:
        if pacer is None:
            delivery, due = feed.next(), None
        else:
            delivery, due = pacer.next()
            if delivery is not None:
                time.sleep(max(0.0, due - time.perf_counter()))
        if delivery is None:
            break
        body = delivery.payload()
        headers = payloads.headers(delivery.event, body, delivery.guid)
        for attempt in (1, 2):  # a kept-alive connection the server closed meanwhile: once more, anew
            start = time.perf_counter() if due is None else due
            try:
                conn.request("POST", "/webhook", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status: int | str = response.status
                break
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status = type(exc).__name__
        elapsed = time.perf_counter() - start
        with lock:
            sent.append(Sent(delivery.guid, delivery.kind, status, elapsed))
    conn.close()


class Actions(threading.Thread):
    """GitHub Actions as the App sees it: every dispatched workflow starts (``in_progress``
    delivery) and completes a moment later with a results artifact (``completed`` delivery)."""

    def __init__(self, github: GitHubProcess, payloads: Payloads, feed: Feed, rng: random.Random):
        super().__init__(daemon=True, name="actions")
        self.github, self.payloads, self.feed, self.rng = github, payloads, feed, rng
        self.seen = 0
        self.due: list[tuple[float, str, dict]] = []
        self.halt = threading.Event()
        self.lock = threading.Lock()

    def busy(self) -> bool:
        with self.lock:
            return bool(self.due)

    def run(self) -> None:
        while not self.halt.is_set():
            now = time.monotonic()
            for d in self.github.call("dispatches_since", self.seen):
                self.seen += 1
                if d["key"]:
                    started = now + self.rng.uniform(0.5, 2)
                    with self.lock:
                        self.due += [(started, "in_progress", d), (started + self.rng.uniform(1, 4), "completed", d)]
            with self.lock:
                ready = [item for item in self.due if item[0] <= now]
                self.due = [item for item in self.due if item[0] > now]
            for _, action, d in sorted(ready, key=lambda item: item[0]):
                if action == "in_progress":
                    self.github.call("start_run", d["run_id"])
                else:
                    self.github.call("complete_run", d["run_id"], d["key"], d["base"], d["head"])
                body = self.payloads.workflow_run(action, d["run_id"], d["key"], d["head"])
                self.feed.add(Delivery("workflow_run", str(uuid.uuid4()), f"workflow_run {action}", lambda: body, body))
            time.sleep(0.3)


# -- the App's processes ---------------------------------------------------------------------------
class App:
    """``perfgate migrate``, then gunicorn (the Dockerfile's command, bound to 127.0.0.1) and
    ``consumers`` × ``perfgate worker``, with logs under ``folder``."""

    def __init__(self, env: dict[str, str], folder: Path, consumers: int, worker_nice: int = 0):
        from testkit import compose, services

        self.env, self.folder, self.services = env, folder, services
        self.port = services.free_port()
        self.bin = Path(sys.executable).parent
        argv = compose.image_command(ROOT / "Dockerfile")
        self.web_argv = [str(self.bin / argv[0])] + [a.replace("0.0.0.0:8000", f"127.0.0.1:{self.port}")
                                                     for a in argv[1:]]
        self.consumer_count = consumers
        #: the consumers' command: ``perfgate worker``, under ``nice -n N`` when asked (their CPU
        #: yields to the web process's, as a web container's own CPU share would)
        self.worker_argv = ([*(["nice", "-n", str(worker_nice)] if worker_nice else []), str(self.bin / "perfgate"),
                             "worker"])
        self.web: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.restarts = 0

    def _start(self, argv: list[str], log: str) -> subprocess.Popen:
        return subprocess.Popen(argv, cwd=self.folder, env=self.env, stdout=open(self.folder / log, "ab"),
                                stderr=subprocess.STDOUT)

    def start(self) -> None:
        migrate = subprocess.run([str(self.bin / "perfgate"), "migrate"], cwd=self.folder, env=self.env,
                                 capture_output=True, text=True, timeout=300)
        if migrate.returncode:
            raise SystemExit(f"perfgate migrate failed:\n{migrate.stdout}{migrate.stderr}")
        self.web = self._start(self.web_argv, "web.log")
        self.workers = [self._start(self.worker_argv, f"worker{i}.log")
                        for i in range(self.consumer_count)]

        def healthy() -> bool:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                return conn.getresponse().status == 200
            except OSError:
                return False

        self.services.wait_for(healthy, 90, "gunicorn", self.web, self.folder / "web.log")

    def kill_worker(self, index: int = 0) -> None:
        """SIGKILL one consumer (its jobs in flight are lost), then start its replacement."""
        self.workers[index].send_signal(signal.SIGKILL)
        self.workers[index].wait()
        time.sleep(2)
        self.workers[index] = self._start(self.worker_argv, f"worker{index}.log")
        self.restarts += 1

    def sweep(self, stale_after: float, reconcile_after: float | None = None, timeout: float = 120) -> str:
        """``perfgate sweep`` once; its report line. ``timeout``: seconds (one reconciling sweep over
        every ended run makes two GitHub reads per commit, one by one, each retried under faults)."""
        more = [] if reconcile_after is None else ["--reconcile-after", f"{reconcile_after:g}"]
        try:
            done = subprocess.run([str(self.bin / "perfgate"), "sweep", "--stale-after", f"{stale_after:g}", *more],
                                  cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"perfgate sweep did not finish in {timeout:g} s"
        said = [line for line in done.stdout.splitlines() if line.startswith("perfgate:")]  # not PyGithub's retries
        return said[-1] if said else "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])

    def stop(self) -> None:
        for proc in [*self.workers, self.web]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [*self.workers, self.web]:
            if proc is not None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# -- waiting and counting --------------------------------------------------------------------------
def delivery_states(db) -> dict[str, tuple[str, str | None]]:
    from sqlalchemy import select

    from bot.app.store.tables import Delivery as Row

    with db.session() as session:
        return {d: (s, e) for d, s, e in session.execute(select(Row.delivery_id, Row.status, Row.error))}


def drain(app: App, db, huey, feed: Feed, actions: Actions, stale_after: float, deadline: float,
          log: Callable[[str], None]) -> list[str]:
    """Wait until nothing is left to do: the feed and the Actions sent everything, the queue
    (pending and scheduled retries) is empty, no delivery is ``queued`` or ``failed``. When the
    queue is empty and nothing changed for ``stale_after`` seconds while deliveries are still
    queued/failed, run ``perfgate sweep --stale-after`` (an operator's recovery). Returns the
    sweep reports."""
    sweeps, last, changed = [], None, time.monotonic()
    while time.monotonic() < deadline:
        states = collections.Counter(s for s, _ in delivery_states(db).values())
        pending, scheduled = huey.pending_count(), huey.scheduled_count()
        busy = actions.busy() or not feed.empty()
        now = time.monotonic()
        signature = (pending, scheduled, tuple(sorted(states.items())), busy)
        if signature != last:
            last, changed = signature, now
        if not busy and pending == 0 and scheduled == 0 and not states.get("queued") and not states.get("failed"):
            return sweeps
        if not busy and pending == 0 and scheduled == 0 and now - changed >= stale_after:
            report = app.sweep(stale_after)
            sweeps.append(report)
            log(f"  sweep after {stale_after:g} s quiet ({states.get('queued', 0)} queued, "
                f"{states.get('failed', 0)} failed): {report}")
            changed = time.monotonic()
        time.sleep(1)
    log("  drain: gave up at the deadline")
    return sweeps


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation (``statistics.quantiles``,
    method "inclusive"); nan when empty."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    return cuts[min(len(cuts) - 1, max(0, round(q * 1000) - 1))]


def count(db, snapshot: dict, sent: list[Sent]) -> dict:
    """The figures of the module docstring from the database and the fake GitHub's state."""
    from sqlalchemy import select

    from bot.app.store.tables import Run

    states = delivery_states(db)
    accepted = {s.guid for s in sent if s.status == 202}
    lost = sorted(g for g in accepted if states.get(g, ("missing", None))[0] not in ("done", "ignored"))
    with db.session() as session:
        rows = list(session.scalars(select(Run)))
        runs = [(r.key, r.status, r.workflow_run_id, r.pr_number) for r in rows]
        # every dispatch was valid and every completed workflow had its artifact: a run concluded
        # without results failed on a passing GitHub error
        without = collections.Counter((r.headline or "")[:90] for r in rows
                                      if r.status == "completed" and r.result_id is None)
    workflow_runs = snapshot["workflow_runs"]
    by_key = collections.defaultdict(list)
    for run_id, key in snapshot["dispatches"]:
        by_key[key].append(run_id)

    def workflow_completed(key: str, run_id: int | None) -> bool:
        ids = [run_id] if run_id else by_key.get(key, [])
        return any(workflow_runs.get(i, ("",))[0] == "completed" for i in ids)

    stuck = [key for key, status, run_id, _ in runs if status in ("queued", "in_progress")
             and workflow_completed(key, run_id)]
    never_dispatched = [key for key, status, run_id, _ in runs if status in ("queued", "in_progress")
                        and not run_id and key not in by_key]
    checks = collections.Counter(external_id for external_id, _, _ in snapshot["check_runs"])
    dispatches = collections.Counter(key for _, key in snapshot["dispatches"])
    ours = [c for c in snapshot["comments"] if c[1] == BOT]
    stickies = collections.Counter(number for number, _, sticky, _ in ours if sticky)
    replies = collections.Counter((number, digest) for number, _, sticky, digest in ours if not sticky)
    extra = {"check runs": sum(n - 1 for n in checks.values() if n > 1),
             "dispatches": sum(n - 1 for n in dispatches.values() if n > 1),
             "sticky comments": sum(n - 1 for n in stickies.values() if n > 1),
             "replies": sum(n - 1 for n in replies.values() if n > 1)}
    causes = collections.Counter(_cause(attempts) for attempts in snapshot["repeated_writes"].values())
    examples = {what: [(fault, status, round(at - attempts[0][2], 1)) for fault, status, at in attempts]
                for what, attempts in list(snapshot["repeated_writes"].items())[:6]}
    latencies = [s.seconds * 1000 for s in sent if s.status == 202]
    errors = collections.Counter((e or "")[:120] for s, e in states.values() if s not in ("done", "ignored") and e)
    return {"deliveries": len(sent), "accepted": len(accepted),
            "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
            "max_ms": max(latencies, default=float("nan")),
            "lost": len(lost), "duplicates_processed": sum(extra.values()),
            "duplicate_comments": sum(1 for n in stickies.values() if n > 1) + extra["replies"],
            "stuck_runs": len(stuck), "duplicates_by_kind": extra, "never_dispatched_active_runs": len(never_dispatched),
            "answers": collections.Counter(str(s.status) for s in sent),
            "answers_by_kind": {k: dict(collections.Counter(str(s.status) for s in sent if s.kind == k))
                                for k in sorted({s.kind for s in sent})},
            "delivery_states": collections.Counter(s for s, _ in states.values()),
            "runs": collections.Counter(status for _, status, _, _ in runs),
            "check_runs": len(snapshot["check_runs"]), "workflow_dispatches": len(snapshot["dispatches"]),
            "github_calls": snapshot["requests"], "github_faults": dict(snapshot["faults"]),
            "github_operations": dict(snapshot["operations"]),
            "github_violations": snapshot["violations"], "lost_examples": lost[:5], "stuck_examples": stuck[:5],
            "errors_left": errors.most_common(5), "repeated_write_causes": causes, "repeated_write_examples": examples,
            "runs_concluded_without_results": sum(without.values()), "why_without_results": without.most_common(5),
            "open_check_runs": snapshot["open_check_runs"], "replies": snapshot["replies"]}


def _cause(attempts: list[tuple[str | None, int, float]]) -> str:
    """Why a write was carried out more than once, from its attempts ``(fault, status, time)``:
    the first one carried out had timed out (the App saw a failure, the write was made), or
    not (the work was done again although it had succeeded)."""
    done = [(fault, at) for fault, status, at in attempts if fault in (None, "timeout") and status < 300]
    gap = done[1][1] - done[0][1]
    first = "a write that timed out but was made" if done[0][0] == "timeout" else "a write that succeeded"
    return f"{first}, made again {'within 10 s' if gap < 10 else 'after %d s' % (10 * (gap // 10))}"


def run(args, app: App, github: GitHubProcess, pg, queue_url: str, folder: Path, rng: random.Random,
        log: Callable[[str], None]) -> dict:
    """Start the App, send the deliveries, drain, count (module docstring)."""
    app.start()
    payloads = Payloads()
    # each dispatch brings two workflow_run deliveries: plan the rest
    expected_runs = round(args.prs * 1.3)
    if args.strangers:
        planned = plan_strangers(payloads, github, rng, args.prs, args.deliveries)
    else:
        planned = plan(payloads, github, rng, args.prs,
                       max(args.prs * 4, args.deliveries - 2 * expected_runs))
    loop = f"open loop, {args.rate:g}/s {'fixed' if args.fixed else 'Poisson'}" if args.rate else "closed loop"
    log(f"bot_load: {args.deliveries} deliveries over {args.prs} PRs, {loop}, concurrency {args.concurrency}, "
        f"faults {args.faults:g}, kill a worker: {args.kill_worker}; logs in {folder}")

    from bot.app.queue import make_huey
    from bot.db import normalize_url, open_database

    db = open_database(normalize_url(pg.url()), migrate=False)
    huey = make_huey(queue_url, folder / "home")
    feed = Feed(planned)
    actions = Actions(github, payloads, feed, rng)
    actions.start()
    sent: list[Sent] = []
    sent_lock = threading.Lock()
    pacer = Pacer(feed, args.rate, random.Random(args.seed + 1), fixed=args.fixed) if args.rate else None
    threads = [threading.Thread(target=client, args=(app.port, feed, payloads, sent, sent_lock, pacer), daemon=True)
               for _ in range(args.concurrency)]
    web_cpu = process_tree_cpu(app.web.pid)
    started = time.monotonic()
    for t in threads:
        t.start()
    killed = not args.kill_worker
    while not feed.empty() or actions.busy():
        if not killed and feed.taken >= len(planned) // 2:
            app.kill_worker(0)
            killed = True
            log(f"  SIGKILL worker 0 after {feed.taken} deliveries ({time.monotonic() - started:.0f} s); "
                "restarted")
        time.sleep(0.2)
    log(f"  sent {len(sent)} in {time.monotonic() - started:.0f} s; draining")
    cpu_sent = (process_tree_cpu(app.web.pid) - web_cpu, len(sent))
    deadline = time.monotonic() + args.drain_timeout
    sweeps = drain(app, db, huey, feed, actions, args.stale_after, deadline, log)
    short = args.deliveries - len(sent)
    if short > 0:  # fewer workflow runs than planned for: top up with plain comments
        feed.extend_planned([Delivery("issue_comment", str(uuid.uuid4()), "plain comment",
                                      lambda i=i: payloads.issue_comment(1 + i % args.prs, 20_000_000 + i,
                                                                         "Looks good."))
                             for i in range(short)])
        sweeps += drain(app, db, huey, feed, actions, args.stale_after, deadline, log)
    feed.stop.set()
    for t in threads:
        t.join(timeout=30)
    actions.halt.set()
    actions.join(timeout=10)
    wall = time.monotonic() - started
    open_before = github.call("snapshot")["open_check_runs"]
    # the periodic sweep's last duty, now rather than 15 minutes later: set right what GitHub shows
    # of the ended runs (check runs left open, duplicate stickies;
    # bot.app.job.sweeps.reconcile_ended)
    report = app.sweep(args.stale_after, reconcile_after=0, timeout=1200)
    sweeps.append(report)
    log(f"  reconciling sweep ({open_before} check runs open on GitHub): {report}")
    figures = count(db, github.call("snapshot"), sent)
    figures.update(seconds=round(wall, 1), sweeps=sweeps, worker_restarts=app.restarts,
                   web_cpu_ms_per_delivery=round(cpu_sent[0] * 1000 / max(1, cpu_sent[1]), 2),
                   settings={k: v for k, v in vars(args).items() if k not in ("keep", "json")})
    db.dispose()
    return figures


# -- main ------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=5000, help="deliveries to send (default 5000)")
    parser.add_argument("--concurrency", type=int, default=50,
                        help="client threads (default 50); open loop: the most deliveries in flight")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="open loop: deliveries per second, latency timed from each one's due time (default: "
                             "closed loop, each connection sends when its last answer came)")
    parser.add_argument("--fixed", action="store_true", help="open loop: evenly spaced arrivals (default Poisson)")
    parser.add_argument("--faults", type=float, default=0.0, help="fraction of GitHub API calls that fail (0..1)")
    parser.add_argument("--kill-worker", action=argparse.BooleanOptionalAction, default=True,
                        help="SIGKILL one consumer half way through, then restart it (default on)")
    parser.add_argument("--prs", type=int, default=200, help="pull requests (default 200)")
    parser.add_argument("--quick", action="store_true", help="300 deliveries, 20 PRs, concurrency 10")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker-threads", type=int, default=8, help="PERFGATE_WORKERS of each consumer (default 8)")
    parser.add_argument("--worker-nice", type=int, default=0, metavar="N",
                        help="run the consumers under nice -n N (default 0: the same CPU priority as the web process)")
    parser.add_argument("--github-timeout", type=int, default=2, help="PERFGATE_GITHUB_TIMEOUT, s (default 2)")
    parser.add_argument("--hang", type=float, default=3.0, help="seconds the fake holds a timed-out call (default 3)")
    parser.add_argument("--stale-after", type=float, default=20.0,
                        help="perfgate sweep --stale-after, and the quiet time before a sweep, s (default 20)")
    parser.add_argument("--drain-timeout", type=float, default=900.0, help="seconds to wait for the work (default 900)")
    parser.add_argument("--keep", type=Path, help="keep the logs (web, workers) in this folder")
    parser.add_argument("--json", type=Path, help="write the figures as JSON to this file")
    parser.add_argument("--strangers", type=int, default=0, metavar="N",
                        help="send N /perf comments of users without permission instead "
                             "(P4: the GitHub calls they cost); no worker killed")
    parser.add_argument("--smoke", action="store_true",
                        help="16 deliveries, 2 PRs, open loop at 8/s over 4 connections, no worker killed, sweeps "
                             "after 3 s (CI: ~40 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.deliveries, args.prs, args.concurrency = 300, 20, 10
    if args.smoke:
        args.deliveries, args.prs, args.concurrency, args.kill_worker, args.stale_after = 16, 2, 4, False, 3.0
        args.rate = args.rate or 8.0
    if args.strangers:
        args.deliveries, args.kill_worker = args.strangers, False
    args.prs = max(1, min(args.prs, args.deliveries // 8))

    from testkit import services

    missing = services.missing_programs()
    if missing:
        raise SystemExit(f"needs the system packages postgresql and redis-server ({', '.join(missing)} missing)")

    def log(text: str) -> None:
        print(text, flush=True)

    rng = random.Random(args.seed)
    github = GitHubProcess(args.faults, args.seed, args.hang)
    folder = Path(tempfile.mkdtemp(prefix="perfgate-botload-")) if args.keep is None else args.keep
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with services.Postgres("perfgate", "perfgate", "perfgate", durable=True) as pg, \
                services.Redis(["redis-server", "--appendonly", "yes"], folder / "redis") as redis:
            from testkit.payloads import SECRET, private_key

            queue_url = f"redis://127.0.0.1:{redis.port}/0"
            env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   "HOME": str(folder), "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
                   "PYTHONDONTWRITEBYTECODE": "1", "PERFGATE_HOME": str(folder / "home"),
                   "DATABASE_URL": pg.url(), "REDIS_URL": queue_url, "GITHUB_APP_ID": "12345",
                   "GITHUB_PRIVATE_KEY": private_key(), "GITHUB_WEBHOOK_SECRET": SECRET,
                   "GITHUB_API_URL": github.url, "GITHUB_SERVER_URL": "https://github.com",
                   "PERFGATE_PUBLIC_URL": "https://perfgate.example.org",
                   "PERFGATE_GITHUB_TIMEOUT": str(args.github_timeout), "PERFGATE_WORKERS": str(args.worker_threads)}
            (folder / "home").mkdir(exist_ok=True)
            app = App(env, folder, consumers=2, worker_nice=args.worker_nice)
            try:
                figures = run(args, app, github, pg, queue_url, folder, rng, log)
            finally:
                app.stop()
    finally:
        github.stop()
    for key in ("answers", "answers_by_kind", "delivery_states", "runs", "duplicates_by_kind", "github_faults",
                "errors_left", "lost_examples", "stuck_examples", "github_violations", "sweeps",
                "repeated_write_causes", "repeated_write_examples", "runs_concluded_without_results",
                "why_without_results", "open_check_runs", "replies"):
        log(f"  {key}: {json.dumps(figures[key], default=str)}")
    log(f"  web process CPU {figures['web_cpu_ms_per_delivery']} ms per delivery sent (gunicorn master + workers)")
    log(f"  {figures['accepted']} accepted; {figures['check_runs']} check runs, {figures['workflow_dispatches']} "
        f"dispatches, {figures['github_calls']} GitHub calls; {figures['never_dispatched_active_runs']} active runs "
        f"never dispatched; max {figures['max_ms']:.1f} ms; {figures['seconds']} s in all")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    print(f"deliveries={figures['deliveries']} p50_ms={figures['p50_ms']:.1f} p99_ms={figures['p99_ms']:.1f} "
          f"max_ms={figures['max_ms']:.1f} web_cpu_ms={figures['web_cpu_ms_per_delivery']:.2f} "
          f"lost={figures['lost']} duplicates_processed={figures['duplicates_processed']} "
          f"duplicate_comments={figures['duplicate_comments']} stuck_runs={figures['stuck_runs']}")
    if args.strangers:
        calls = figures["github_calls"]
        print(f"stranger_comments={args.strangers} prs={args.prs} github_calls={calls} "
              f"calls_per_comment={calls / args.strangers:.3f} "
              f"dispatches={figures['workflow_dispatches']} "
              f"operations={json.dumps(figures['github_operations'])}")
    refused = sum(n for status, n in figures["answers"].items() if not status.isdigit() or int(status) >= 500)
    return 1 if refused else 0  # a delivery GitHub would show as failed: the figures above do not hold


if __name__ == "__main__":
    sys.exit(main())
