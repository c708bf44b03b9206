"""Properties of the job queue's message format (security review N3): whatever bytes are in
the queue, reading them runs nothing — no unpickling, no import, no call — and only a
well-formed message of one of the App's tasks comes out; everything perfgate writes reads back
as written."""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from bot.app import queue
from bot.app.queue import TASK_ARGS, JobSerializer, RefusedMessage, decode_message, sign
from huey.registry import Message
from tests.security.strategies import json_values

#: Huey's task names as ``build_queue`` registers them (``module.name``).
TASKS = {f"bot.app.queue.{name}": args for name, args in TASK_ARGS.items()}
SIDE_EFFECTS: list[str] = []
#: The queue key of these tests, and the time they read messages at (epoch seconds).
KEY, NOW = b"0123456789abcdef" * 4, 1_800_000_000.0


class Plant:
    """What an attacker pickles: unpickling it calls ``SIDE_EFFECTS.append``."""

    def __init__(self, note: str):
        self.note = note

    def __reduce__(self):
        return SIDE_EFFECTS.append, (self.note,)


@pytest.fixture(autouse=True)
def no_unpickling(monkeypatch):
    """Any use of pickle while a message is read fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("pickle used to read a queue message")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    SIDE_EFFECTS.clear()
    yield
    assert SIDE_EFFECTS == []


def _well_formed(message: Message) -> None:
    """What anything that comes out of the reader must be."""
    assert isinstance(message, Message) and message.name in TASKS
    assert isinstance(message.args, tuple) and len(message.args) == len(TASKS[message.name])
    for kind, value in zip(TASKS[message.name], message.args):
        assert kind == "delivery" and isinstance(value, str) and 1 <= len(value) <= 100
    assert message.kwargs == {} and message.on_complete is message.on_error is message.chord_config is None
    assert message.expires is message.expires_resolved is message.timeout is None
    assert message.eta is None or (isinstance(message.eta, dt.datetime) and message.eta.tzinfo is None)


def _read(data, signed: bool = True) -> Message | None:
    """``data`` read back, signed with the queue key first (so its fields are what is checked)."""
    try:
        message = decode_message(sign(data, KEY) if signed else data, TASKS, KEY, NOW)
    except RefusedMessage as exc:
        event(f"refused: {str(exc).split(' (')[0][:40]}")
        return None
    _well_formed(message)
    event("accepted")
    return message


@given(st.binary(max_size=600), st.booleans())
def test_random_bytes_run_nothing(data, signed):
    _read(data, signed)


_PICKLE = pickle.dumps  # taken before the fixture forbids pickle's readers (dumps stays allowed)


@given(st.sampled_from([Plant("reduce"), {"args": (Plant("nested"),)}, [Plant("list")]]),
       st.integers(min_value=0, max_value=pickle.HIGHEST_PROTOCOL))
def test_pickled_objects_are_refused_unread(obj, protocol):
    with pytest.raises(RefusedMessage):
        decode_message(_PICKLE(obj, protocol), TASKS, KEY, NOW)
    with pytest.raises(RefusedMessage):
        decode_message(sign(_PICKLE(obj, protocol), KEY), TASKS, KEY, NOW)


_keys = sorted(queue.MESSAGE_KEYS)
shaped = st.fixed_dictionaries({
    "v": st.one_of(st.just(queue.WIRE_VERSION), json_values),
    "id": st.one_of(st.uuids().map(str), json_values),
    "name": st.one_of(st.sampled_from(sorted(TASKS)), st.sampled_from(["os.system", "builtins.eval", "perfgate.x"]),
                      json_values),
    "eta": st.one_of(st.none(), st.datetimes().map(dt.datetime.isoformat), json_values),
    "retries": st.one_of(st.integers(-3, 12), json_values),
    "retry_delay": st.one_of(st.integers(-1, 100_000), st.floats(allow_nan=False), json_values),
    "priority": st.one_of(st.none(), st.integers(-200, 200), json_values),
    "args": st.one_of(st.lists(st.text(max_size=120), max_size=2), st.lists(json_values, max_size=2), json_values),
    "retry_backoff": st.one_of(st.none(), st.integers(0, 200), json_values),
    "sent": st.one_of(st.floats(NOW - 3 * queue.MAX_AGE, NOW + 1000), json_values),
})
mutated = st.tuples(shaped, st.sets(st.sampled_from(_keys)), st.dictionaries(st.text(max_size=8), json_values, max_size=2)
                    ).map(lambda t: {**{k: v for k, v in t[0].items() if k not in t[1]}, **t[2]})


@given(st.one_of(shaped, mutated, json_values))
def test_any_json_gives_a_well_formed_message_or_a_refusal(value):
    _read(json.dumps(value).encode())


@given(st.sampled_from(sorted(TASKS)), st.text(min_size=1, max_size=100).filter(str.isprintable),
       st.integers(0, 2), st.sampled_from([0, 30]), st.one_of(st.none(), st.datetimes(min_value=dt.datetime(2000, 1, 1))))
def test_what_perfgate_writes_reads_back_as_written(name, delivery, retries, delay, eta):
    args = (delivery,) if TASKS[name] else ()
    message = Message("3729bfce-5a87-4f17-9ebd-feadced798ea", name, eta, retries, delay, None, args, {}, None, None,
                      None, None, None, None, 0)
    serializer = JobSerializer(TASKS, key=KEY, clock=lambda: NOW)
    data = serializer.serialize(message)
    assert data[65:].startswith(b"{") and len(data) <= queue.MAX_MESSAGE
    assert serializer.deserialize(data) == message


def test_the_serializer_writes_nothing_else():
    serializer = JobSerializer(TASKS, key=KEY)
    with pytest.raises(TypeError):
        serializer.serialize(42)  # a task's result: the App stores none
    with pytest.raises(TypeError):
        serializer.serialize((None, True))  # a revocation: the App revokes nothing
    unknown = Message("i", "os.system", None, 0, 0, None, ("ls",), {}, None, None, None, None, None, None, 0)
    with pytest.raises(RefusedMessage):
        serializer.serialize(unknown)
    wrong_shape = Message("i", "bot.app.queue.perfgate.process_delivery", None, 0, 0, None, (["a"],), {},
                          None, None, None, None, None, None, 0)
    with pytest.raises(RefusedMessage):
        serializer.serialize(wrong_shape)
    with pytest.raises(RefusedMessage):  # nothing is accepted before the tasks are registered
        JobSerializer(key=KEY).deserialize(JobSerializer(TASKS, key=KEY).serialize(unknown._replace(
            name="bot.app.queue.perfgate.expire_runs", args=())))


def test_a_message_runs_only_signed_with_the_queue_key_and_while_it_is_fresh():
    """Whoever holds the queue's password writes no message the worker takes (review P10): an
    unsigned one in the App's own shape (the review's probe), one signed with another key or
    changed after it was signed, one older than ``MAX_AGE``; Huey's revocations are never read."""
    name = "bot.app.queue.perfgate.process_delivery"
    message = Message("i", name, None, 0, 0, None, ("d-1",), {}, None, None, None, None, None, None,
                      0)
    data = JobSerializer(TASKS, key=KEY, clock=lambda: NOW).serialize(message)
    assert decode_message(data, TASKS, KEY, NOW + 60) == message
    body = data[65:]
    refused = {"unsigned": body, "another key": sign(body, b"k" * 64),
               "changed": data.replace(b"d-1", b"d-2"), "no separator": data[:64] + b";" + body}
    for what, forged in refused.items():
        with pytest.raises(RefusedMessage, match="not signed with the queue key"):
            decode_message(forged, TASKS, KEY, NOW)
    with pytest.raises(RefusedMessage, match="written more than"):
        decode_message(data, TASKS, KEY, NOW + queue.MAX_AGE + 1)
    with pytest.raises(RefusedMessage, match="written more than"):
        decode_message(data, TASKS, KEY, NOW - 3600)  # from the future
    huey = queue.JobHuey("t", immediate=True, serializer=JobSerializer(key=KEY))
    assert huey.is_revoked(object()) is False
