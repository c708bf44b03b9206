"""How many webhook deliveries per second does one web worker take? A bounded load test.

A benchmark, not a test: it starts the App's web process as the Dockerfile does (gunicorn on
``bot:create_app()``, here with ``--workers 1`` and the image's ``--threads 4``) on 127.0.0.1,
sends signed ``pull_request`` ``labeled`` deliveries from a few client threads over keep-alive
connections, and prints the accepted deliveries per second and the latency percentiles. Each
delivery goes the whole way of ``POST /webhook``: signature check, parse, the delivery recorded
in the database, a job enqueued (nothing consumes it: no GitHub call is made). It stops after
``--count`` deliveries or ``--max-seconds``, whichever comes first, and only ever talks to
127.0.0.1.

Usage::

    python evaluation/webhook_load.py                       # SQLite database and queue (defaults)
    python evaluation/webhook_load.py --database-url postgresql://u:p@127.0.0.1:5432/db \\
        --queue-url redis://127.0.0.1:6379/0               # as docker-compose.yml runs it
    python evaluation/webhook_load.py --stages 500          # + the intake's CPU by stage, in process
    python evaluation/webhook_load.py --smoke               # 40 deliveries: the script still runs (CI)

The load generator shares the machine's CPUs with the server, so the figure is a lower bound
for a web pod with a core of its own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.app.core.events import signature  # noqa: E402
from testkit.payloads import private_key  # noqa: E402
from testkit.services import free_port  # noqa: E402


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its live descendants
    (gunicorn's master and its workers), from ``/proc/PID/stat`` (fields 14-15, clock ticks;
    proc(5)); 0.0 where ``/proc`` cannot be read (not Linux). A descendant that exited is
    counted only once its parent reaped it (then in the parent's own figure it is not: reaped
    children's time is in fields 16-17, left out), so take the difference over a span in which
    no worker restarts."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime: fields 14, 15
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def payload(size: int) -> bytes:
    """A ``pull_request`` ``labeled`` delivery of about ``size`` bytes (real ones are 20–30 kB:
    the pull request, both repositories, the sender, the label): GitHub's published example
    (``@octokit/webhooks-examples``, through testkit/payloads.py) completed to its published
    schema — the App refuses (400) a delivery its schema rejects — with the pull request's body
    padded to the size."""
    from testkit.payloads import pull_request

    _, body = pull_request("labeled", head_sha="1" * 40, base_sha="2" * 40, label="performance")
    body["pull_request"]["body"] = ""
    pad = max(0, size - len(json.dumps(body).encode()))
    body["pull_request"]["body"] = "x" * pad
    return json.dumps(body).encode()


def _wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not become healthy")


def drive(port: int, secret: str, body: bytes, count: int, max_seconds: float, clients: int) -> dict:
    """Send up to ``count`` deliveries from ``clients`` threads for at most ``max_seconds``."""
    lock = threading.Lock()
    state = {"sent": 0, "statuses": {}, "latencies": []}
    stop_at = time.monotonic() + max_seconds
    sig = "sha256=" + signature(secret, body)

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop_at:
            with lock:
                if state["sent"] >= count:
                    return
                state["sent"] += 1
            headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
                       "X-Hub-Signature-256": sig, "Content-Type": "application/json"}
            start = time.perf_counter()
            try:
                conn.request("POST", "/webhook", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status = "error"
            elapsed = time.perf_counter() - start
            with lock:
                state["statuses"][status] = state["statuses"].get(status, 0) + 1
                state["latencies"].append(elapsed)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    lat = sorted(state["latencies"])

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")

    accepted = state["statuses"].get(202, 0)
    return {"deliveries": len(lat), "accepted": accepted, "statuses": state["statuses"], "seconds": round(wall, 2),
            "accepted_per_second": round(accepted / wall, 1), "p50_ms": round(pct(0.5), 1),
            "p95_ms": round(pct(0.95), 1), "p99_ms": round(pct(0.99), 1),
            "mean_ms": round(statistics.fmean(lat) * 1000, 1) if lat else None}


def stage_cpu(count: int, database_url: str, queue_url: str, body: bytes, secret: str = "x" * 40) -> dict[str, float]:
    """CPU milliseconds per delivery of each stage of ``POST /webhook`` (``bot.web.intake``), run
    in this process without a server on ``count`` deliveries of ``body`` (``pull_request``
    ``labeled``), each with its own GUID, after 20 of warm-up: ``signature`` (HMAC-SHA256 of the
    body), ``parse`` (``parse_event``: the signature again, the headers, ``json.loads``),
    ``validate`` (the compiled schema), ``relevant``, ``record`` (a session, the insert, the
    commit) and ``enqueue``. ``time.thread_time``: this thread's CPU, not what it waited for."""
    from bot.app.core import handlers, payloads
    from bot.app.store import store as app_store
    from bot.app.core.events import parse_event, verify_signature
    from bot.app.queue import build_queue, make_huey
    from bot.db import normalize_url, open_database

    db = open_database(normalize_url(database_url))
    huey = make_huey(queue_url, Path(tempfile.gettempdir()), key="0123456789abcdef" * 4)
    queue = build_queue(huey, lambda: None)
    payloads.warm_up()
    sig = "sha256=" + signature(secret, body)
    spent = dict.fromkeys(("signature", "parse", "validate", "relevant", "record", "enqueue"), 0.0)
    for i in range(count + 20):
        headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
                   "X-Hub-Signature-256": sig, "Content-Type": "application/json"}
        marks = [time.thread_time()]
        verify_signature(body, sig, secret)
        marks.append(time.thread_time())
        event = parse_event(headers, body, secret)
        marks.append(time.thread_time())
        payloads.validate(event.name, event.action, event.data)
        marks.append(time.thread_time())
        handlers.handled(event.name, event.action) and handlers.relevant(event)
        marks.append(time.thread_time())
        with db.session() as session, session.begin():
            app_store.record_delivery(session, event)
        marks.append(time.thread_time())
        queue.enqueue_delivery(event.delivery_id)
        marks.append(time.thread_time())
        if i >= 20:
            for name, start, end in zip(spent, marks, marks[1:]):
                spent[name] += end - start
    db.dispose()
    return {name: round(seconds * 1000 / count, 3) for name, seconds in spent.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3000, help="deliveries at most (default 3000)")
    parser.add_argument("--max-seconds", type=float, default=60, help="seconds at most (default 60)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client connections (default 8)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker (the image's 4)")
    parser.add_argument("--size", type=int, default=25_000, help="bytes per delivery (default 25000)")
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--queue-url", help="HUEY_URL (default: a fresh SQLite queue)")
    parser.add_argument("--stages", type=int, default=0, metavar="N",
                        help="also: CPU per stage of the intake, in this process, over N deliveries (stage_cpu)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="40 deliveries, 10 s at most (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.count, args.max_seconds, args.clients, args.stages = 40, 10.0, 2, 20

    with tempfile.TemporaryDirectory(prefix="perfgate-load-") as home:
        secret = secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "HUEY_", "REDIS_", "DATABASE_"))}
        env.update(PERFGATE_HOME=home, GITHUB_APP_ID="1", GITHUB_PRIVATE_KEY=private_key(),
                   GITHUB_WEBHOOK_SECRET=secret, GITHUB_API_URL="http://127.0.0.1:9",
                   PYTHONPATH=str(ROOT))
        if args.database_url:
            env["DATABASE_URL"] = args.database_url
        if args.queue_url:
            env["HUEY_URL"] = args.queue_url
        port = free_port()
        gunicorn = Path(sys.executable).parent / "gunicorn"
        proc = subprocess.Popen([str(gunicorn), "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads",
                                 str(args.threads), "--timeout", "30", "bot:create_app()"], cwd=home, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_healthy(port, proc)
            body = payload(args.size)
            drive(port, secret, body, min(100, args.count), min(10, args.max_seconds), args.clients)  # warm-up
            cpu = process_tree_cpu(proc.pid)
            result = drive(port, secret, body, args.count, args.max_seconds, args.clients)
            cpu = process_tree_cpu(proc.pid) - cpu
            result["web_cpu_ms_per_delivery"] = round(cpu * 1000 / max(1, result["deliveries"]), 2)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    if args.stages:
        with tempfile.TemporaryDirectory(prefix="perfgate-stages-") as home:
            result["stage_cpu_ms"] = stage_cpu(args.stages, args.database_url or f"sqlite:///{home}/perfgate.db",
                                               args.queue_url or f"sqlite:///{home}/huey.db", body)
    result.update(database="PostgreSQL" if args.database_url else "SQLite",
                  queue="Redis" if (args.queue_url or "").startswith("redis") else "SQLite",
                  web_workers=1, threads=args.threads, clients=args.clients, bytes=len(body), cpus=os.cpu_count())
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['accepted_per_second']} deliveries/s accepted by one web worker ({result['threads']} threads; "
              f"{result['database']} + {result['queue']} queue; {result['bytes']} B each; {result['clients']} clients; "
              f"{result['cpus']} CPUs shared with the load generator)")
        print(f"  {result['accepted']} of {result['deliveries']} accepted in {result['seconds']} s; latency p50 "
              f"{result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms; statuses {result['statuses']}")
        print(f"  web process CPU {result['web_cpu_ms_per_delivery']} ms per delivery (gunicorn master + worker, /proc)")
        if args.stages:
            stages = result["stage_cpu_ms"]
            print("  intake CPU per delivery by stage, in process (ms): "
                  + ", ".join(f"{name} {ms:.3f}" for name, ms in stages.items())
                  + f"; sum {sum(stages.values()) - stages['signature']:.3f} (parse includes the signature)")
    return 0 if result["accepted"] == result["deliveries"] else 1


if __name__ == "__main__":
    sys.exit(main())
