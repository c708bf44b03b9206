"""The App's job queue (Huey): the webhook view enqueues, ``perfgate worker`` consumes.

Backends (``HUEY_URL`` / ``REDIS_URL``):

- unset: SQLite on ``$PERFGATE_HOME/huey.db`` (one machine, nothing to install);
- ``sqlite:///PATH``: SQLite on PATH;
- ``rediss://:PASSWORD@HOST:PORT/0`` (Redis with AUTH over TLS; ``?ssl_ca_certs=FILE`` for a
  private CA), ``redis://...``, ``unix://...``: Redis (several machines; needs the ``redis``
  package); a ``redis://`` URL to another machine or without a password is logged as a warning
  at start (:func:`queue_warning`);
- ``memory://``: in-process and *immediate* (jobs run inside ``enqueue``): tests only.

Messages are JSON, never pickle (security review N3: Huey's default serializer unpickles
whatever is in the queue, so whoever could write to Redis ran code in the worker, which holds
the App's private key). :class:`JobSerializer` writes and reads one message shape — a task name
of :data:`TASK_ARGS` with its arguments (one delivery id, or none) and Huey's scheduling fields —
and refuses anything else before Huey looks at it; :class:`JobHuey` logs a refused message and
drops it, and the worker goes on with the next one. No results are stored (nothing reads them).

Whoever holds the queue's password still cannot make the App work (security review P10): each
message is signed (HMAC-SHA256) with the queue key that the web process and the worker share —
``PERFGATE_QUEUE_KEY``, else the file ``$PERFGATE_HOME/queue.key`` made on first use (one
machine, or compose's shared volume) — never the Redis password; a message is refused unsigned,
signed with another key, or older than :data:`MAX_AGE`, and a delivery's message runs once (its
id and retry count recorded in the App's database, ``bot.app.job.executor``): a replay of one
read from the queue runs nothing. Huey's revocation keys are never read (:meth:`JobHuey.is_revoked`:
the App revokes nothing), so a value written under one stops no job.

Tasks are registered per queue (no module-level Huey): ``process_delivery(delivery_id)``
(retried twice, 30 s apart; run again after :data:`BUSY_DELAY` when another job of the same PR
holds its lease), ``expire_runs`` every 5 minutes (with ``bot.app.job.sweeps.reconcile_ended``) and
``sweep_deliveries`` every 10 (deliveries whose work was lost — failed, or queued for 15
minutes — are processed again; ``bot.app.job.sweeps.lost_deliveries``), ``forget_deliveries`` once
a day
(retention: ``PERFGATE_DELIVERY_RETENTION``). The runtime they need
(database, GitHub gateway) is built lazily, once per process, by ``runtime_factory``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from huey import Huey
from huey.registry import Message
from huey.serializer import Serializer

from runner.errors import UserError

from ..db import SQLITE_BUSY_TIMEOUT, private_file
from .job.shell import MESSAGE_VALID, RETRIES, RETRY_DELAY, Busy

log = logging.getLogger("perfgate.bot")

#: Seconds before a job that found its PR busy (``bot.app.job.shell.Busy``) runs again; it does
#: not count as a retry.
BUSY_DELAY = 2


#: The App's tasks (Huey's ``name=``) and the arguments each takes: ``delivery`` is one
#: ``X-GitHub-Delivery`` id (a string of 1 to :data:`MAX_DELIVERY_ID` printable characters, as
#: ``bot.app.core.events.parse_event`` accepts it).
TASK_ARGS: dict[str, tuple[str, ...]] = {
    "perfgate.process_delivery": ("delivery",),
    "perfgate.expire_runs": (),
    "perfgate.sweep_deliveries": (),
    "perfgate.forget_deliveries": (),
}
MAX_DELIVERY_ID = 100
#: The largest message read (bytes): a real one is ~300.
MAX_MESSAGE = 4096
#: Bounds of Huey's scheduling fields in a message read back.
MAX_RETRIES, MAX_DELAY = 10, 86400
#: A message's fields as written (``huey.registry.Message`` less those the App never sets:
#: ``on_complete``, ``on_error``, ``chord_config``, ``expires``, ``expires_resolved``, ``timeout``).
MESSAGE_KEYS = frozenset({"v", "id", "name", "eta", "retries", "retry_delay", "priority", "args",
                          "retry_backoff", "sent"})
WIRE_VERSION = 2
#: Seconds a message stays valid after it was written (``sent``, signed): the longest delay a
#: message is scheduled for (:data:`MAX_DELAY`) and as long again for a queue that waited.
MAX_AGE = MESSAGE_VALID
#: The signature's length (hex digits of HMAC-SHA256) and what separates it from the message.
SIGNATURE, SEPARATOR = 64, b":"


class RefusedMessage(ValueError):
    """A queue message perfgate did not write: not JSON of :data:`MESSAGE_KEYS`, an unknown
    task, or arguments of the wrong shape. Nothing of it is run."""


class JobSerializer(Serializer):
    """Huey's serializer for the App's queue: JSON of one :class:`huey.registry.Message` shape,
    signed with ``key`` (:func:`sign`).

    ``tasks`` maps Huey's full task names (``module.name``, as ``huey.registry`` spells them)
    to their arguments (:data:`TASK_ARGS`' values); :meth:`expect` adds one. Only messages are
    written and read: results and revocations (which the App never uses) are refused too.
    ``clock``: the time (epoch seconds) a message is written and read at.
    """

    def __init__(self, tasks: dict[str, tuple[str, ...]] | None = None, *, key: bytes,
                 clock=time.time):
        super().__init__()
        self.tasks: dict[str, tuple[str, ...]] = dict(tasks or {})
        self.key, self.clock = key, clock

    def expect(self, name: str, args: tuple[str, ...]) -> None:
        """Accept messages of task ``name`` with ``args`` (see :data:`TASK_ARGS`)."""
        self.tasks[name] = tuple(args)

    def serialize(self, data: Any) -> bytes:
        """``data`` (a ``Message`` of a known task) as JSON bytes.

        Raises:
            TypeError: ``data`` is not a ``Message``, or uses a field the App never sets.
            RefusedMessage: its task or arguments are not the expected ones.
        """
        if not isinstance(data, Message):
            raise TypeError(f"the App's queue stores task messages only, not {type(data).__name__}")
        unused = [f for f in ("on_complete", "on_error", "chord_config", "expires", "expires_resolved", "timeout")
                  if getattr(data, f) is not None]
        if unused or (data.kwargs or {}):
            raise TypeError(f"the App's tasks take no {', '.join(unused) or 'keyword arguments'}")
        wire = {"v": WIRE_VERSION, "id": data.id, "name": data.name,
                "eta": data.eta.isoformat() if data.eta is not None else None, "retries": data.retries,
                "retry_delay": data.retry_delay, "priority": data.priority, "args": list(data.args or ()),
                "retry_backoff": data.retry_backoff, "sent": round(self.clock(), 3)}
        encoded = sign(json.dumps(wire, separators=(",", ":"), allow_nan=False).encode(), self.key)
        decode_message(encoded, self.tasks, self.key, self.clock())  # never write what is refused
        return encoded

    def deserialize(self, data: bytes) -> Message:
        """:func:`decode_message` with this serializer's tasks, key and clock.

        Raises:
            RefusedMessage: anything but a message this serializer would write.
        """
        return decode_message(data, self.tasks, self.key, self.clock())


def _number(value: Any, low: float, high: float) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and low <= value <= high)


def _refuse_constant(name: str):
    raise RefusedMessage(f"not JSON: {name}")


def sign(body: bytes, key: bytes) -> bytes:
    """``body`` as the queue holds it: its hex HMAC-SHA256 under ``key``, ``:``, ``body``."""
    return hmac.new(key, body, hashlib.sha256).hexdigest().encode() + SEPARATOR + body


def _signed_body(data: bytes, key: bytes) -> bytes:
    """The body of a message :func:`sign` wrote with ``key``, its size and signature checked
    before anything reads it (a part of :func:`decode_message`).

    Raises:
        RefusedMessage: more than :data:`MAX_MESSAGE` bytes, or not signed with ``key``.
    """
    if len(data) > MAX_MESSAGE:
        raise RefusedMessage(f"{len(data)} bytes, more than {MAX_MESSAGE}")
    signature, body = data[:SIGNATURE], data[SIGNATURE + 1:]
    expected = hmac.new(key, body, hashlib.sha256).hexdigest().encode()
    if data[SIGNATURE:SIGNATURE + 1] != SEPARATOR or not hmac.compare_digest(signature, expected):
        raise RefusedMessage("not signed with the queue key (the web process and the worker need "
                             "the same PERFGATE_QUEUE_KEY)")
    return body


def decode_message(data: Any, tasks: dict[str, tuple[str, ...]], key: bytes, now: float) -> Message:
    """One queue message read back at ``now`` (epoch seconds): bytes as
    :meth:`JobSerializer.serialize` writes them (:func:`sign` of JSON) → a
    ``huey.registry.Message`` of a task in ``tasks`` with its arguments; pure.

    Raises:
        RefusedMessage: not bytes of at most :data:`MAX_MESSAGE`, not signed with ``key`` (checked
            before the JSON is read), not UTF-8 JSON (NaN and Infinity included), not an object of
            exactly :data:`MESSAGE_KEYS`, another wire version, written more than :data:`MAX_AGE`
            seconds before ``now`` (or in the future), an unknown task name, arguments not of that
            task's shape, an ``eta`` that is not an ISO time, ``retries``/``retry_delay``/
            ``priority``/``retry_backoff`` out of bounds. The message says which, without echoing
            the data.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise RefusedMessage(f"not bytes but {type(data).__name__}")
    data = _signed_body(bytes(data), key)
    try:
        wire = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RefusedMessage(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(wire, dict) or set(wire) != MESSAGE_KEYS:
        raise RefusedMessage("not a perfgate job message (fields)")
    if wire["v"] != WIRE_VERSION or isinstance(wire["v"], bool):
        raise RefusedMessage("another message version")
    if not _number(wire["sent"], now - MAX_AGE, now + 300):
        raise RefusedMessage(f"written more than {MAX_AGE} s ago, or in the future")
    name = wire["name"]
    if not isinstance(name, str) or name not in tasks:
        raise RefusedMessage("not one of the App's tasks")
    if not isinstance(wire["id"], str) or not 1 <= len(wire["id"]) <= 64 or not wire["id"].isprintable():
        raise RefusedMessage("bad task id")
    args = wire["args"]
    if not isinstance(args, list) or len(args) != len(tasks[name]):
        raise RefusedMessage(f"{name} takes {len(tasks[name])} argument(s)")
    for kind, value in zip(tasks[name], args):
        if kind == "delivery" and not (isinstance(value, str) and 1 <= len(value) <= MAX_DELIVERY_ID
                                       and value.isprintable()):
            raise RefusedMessage("the delivery id is not a string of 1 to 100 printable characters")
    if not (isinstance(wire["retries"], int) and _number(wire["retries"], 0, MAX_RETRIES)):
        raise RefusedMessage("retries out of bounds")
    if not _number(wire["retry_delay"], 0, MAX_DELAY):
        raise RefusedMessage("retry_delay out of bounds")
    if wire["priority"] is not None and not (isinstance(wire["priority"], int) and _number(wire["priority"], -100, 100)):
        raise RefusedMessage("priority out of bounds")
    if wire["retry_backoff"] is not None and not _number(wire["retry_backoff"], 0, 100):
        raise RefusedMessage("retry_backoff out of bounds")
    eta = wire["eta"]
    if eta is not None:
        try:
            eta = _dt.datetime.fromisoformat(eta) if isinstance(eta, str) and len(eta) <= 40 else None
        except ValueError:
            eta = None
        if eta is None or eta.tzinfo is not None:
            raise RefusedMessage("eta is not a naive ISO time (Huey keeps UTC times naive)")
    return Message(wire["id"], name, eta, wire["retries"], wire["retry_delay"], wire["priority"], tuple(args), {},
                   None, None, None, None, None, None, wire["retry_backoff"])


class JobHuey(Huey):
    """Huey with :class:`JobSerializer`: a message it refuses is logged (one line, no data)
    and dropped, and the next one is read (Huey itself would log a traceback and pause the
    worker); the scheduled ones likewise. No task is ever revoked (:meth:`is_revoked`)."""

    def is_revoked(self, task, timestamp=None, peek=True) -> bool:
        """False: the App revokes nothing, so Huey's revocation keys (``rt:<task>`` in its result
        store) are never read — a value someone wrote there under the queue's password would
        otherwise stop every job of that task (security review P10)."""
        return False

    def dequeue(self):
        while True:
            data = self.storage.dequeue()
            if data is None:
                return None
            try:
                return self.deserialize_task(data)
            except RefusedMessage as exc:
                log.warning("dropped a queue message perfgate did not write (%s; %d bytes)", exc, len(data))

    def read_schedule(self, timestamp=None):
        if timestamp is None:
            timestamp = self._get_timestamp()
        tasks = []
        for data in self.storage.read_schedule(timestamp):
            try:
                tasks.append(self.deserialize_task(data))
            except RefusedMessage as exc:
                log.warning("dropped a scheduled message perfgate did not write (%s; %d bytes)", exc, len(data))
        return tasks


def queue_warning(queue_url: str | None) -> str | None:
    """What is unsafe about ``queue_url`` (None: nothing): a ``redis://`` URL (no TLS) to
    another machine, or any Redis URL without a password. Whoever can write to the queue can make
    the worker process any stored delivery again; whoever can read it sees delivery ids."""
    if not queue_url or not queue_url.startswith(("redis://", "rediss://")):
        return None
    parts = urlsplit(queue_url)
    problems = []
    if not parts.password:
        problems.append("no password (Redis AUTH)")
    if parts.scheme == "redis" and (parts.hostname or "") not in ("localhost", "127.0.0.1", "::1"):
        problems.append("no TLS (use rediss://)")
    return f"the job queue at {parts.hostname} has {' and '.join(problems)}" if problems else None


@dataclass
class JobQueue:
    huey: Any
    process_delivery: Any
    expire_runs: Any
    sweep_deliveries: Any = None
    runtime: Callable[[], Any] | None = None

    def enqueue_delivery(self, delivery_id: str) -> None:
        """Queue the job of one stored delivery (runs at once in immediate mode)."""
        self.process_delivery(delivery_id)


def queue_key(home: Path) -> bytes:
    """The queue key kept in ``home/queue.key`` (64 random hex digits, mode 0600), made on first
    use; processes that share ``home`` share it (the first one to make it wins)."""
    path = home / "queue.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        made = path.with_name(f".queue.key.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(made, path)
        except FileExistsError:
            pass
        finally:
            made.unlink()
    return path.read_bytes().strip()


def make_huey(queue_url: str | None, home: Path, name: str = "perfgate", key: str | None = None):
    """A Huey instance for ``queue_url`` (see the module docstring) whose messages are signed with
    ``key`` (``PERFGATE_QUEUE_KEY``), else with :func:`queue_key` of ``home``.

    Raises:
        UserError: Redis is asked for but the ``redis`` package is missing.
    """
    from huey.storage import MemoryStorage, SqliteStorage

    secret = key.encode() if key else queue_key(home)
    options = dict(results=False, serializer=JobSerializer(key=secret))
    if queue_url and queue_url.startswith("memory://"):
        return JobHuey(name, immediate=True, storage_class=MemoryStorage, **options)
    if queue_url and queue_url.startswith(("redis://", "rediss://", "unix://")):
        from huey.exceptions import ConfigurationError
        from huey.storage import RedisStorage

        try:
            return JobHuey(name, storage_class=RedisStorage, url=queue_url, **options)
        except (ImportError, ConfigurationError):
            raise UserError("HUEY_URL/REDIS_URL is a Redis URL but the Python package 'redis' is not installed "
                            "(pip install redis)") from None
    path = private_file((Path(queue_url[len("sqlite:///"):]) if queue_url else home / "huey.db").expanduser())
    return JobHuey(name, storage_class=SqliteStorage, filename=str(path), timeout=SQLITE_BUSY_TIMEOUT, **options)


def build_queue(huey, runtime_factory: Callable[[], Any]) -> JobQueue:
    """Register the App's tasks on ``huey``; ``runtime_factory()`` →
    ``bot.app.job.shell.Runtime``."""
    from huey import crontab

    from .job import executor, sweeps

    cache: dict[str, Any] = {}

    def runtime():
        if "rt" not in cache:
            cache["rt"] = runtime_factory()
        return cache["rt"]

    @huey.task(retries=RETRIES, retry_delay=RETRY_DELAY, name="perfgate.process_delivery",
               context=True)
    def process_delivery(delivery_id: str, task=None) -> int:
        message = f"{task.id}:{task.retries}" if task is not None else None  # this message, once
        try:
            return len(executor.handle_delivery(runtime(), delivery_id, message=message))
        except Busy:  # another job of the same PR runs: this one goes after it
            process_delivery.schedule((delivery_id,), delay=BUSY_DELAY)
            return 0

    @huey.periodic_task(crontab(minute="*/5"), name="perfgate.expire_runs")
    def expire_runs() -> int:
        return len(sweeps.expire_runs(runtime())) + len(sweeps.reconcile_ended(runtime()))

    @huey.periodic_task(crontab(minute="*/10"), name="perfgate.sweep_deliveries")
    def sweep_deliveries() -> int:
        lost = sweeps.lost_deliveries(runtime())
        for delivery_id in lost:
            process_delivery(delivery_id)
        return len(lost)

    @huey.periodic_task(crontab(minute="17", hour="3"), name="perfgate.forget_deliveries")
    def forget_deliveries() -> int:
        return sweeps.forget_deliveries(runtime())

    registered = {"perfgate.process_delivery": process_delivery, "perfgate.expire_runs": expire_runs,
                  "perfgate.sweep_deliveries": sweep_deliveries, "perfgate.forget_deliveries": forget_deliveries}
    if isinstance(huey.serializer, JobSerializer):
        for name, task in registered.items():
            huey.serializer.expect(f"{task.task_class.__module__}.{task.task_class.__name__}", TASK_ARGS[name])
    return JobQueue(huey, process_delivery, expire_runs, sweep_deliveries, runtime)
