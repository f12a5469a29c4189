"""The Kafka loader's client options: where they come from, which are secret, what Spark gets.

Client options come from ``--kafka-config`` (a properties file) and ``--kafka-option k=v``; a
value ``env:NAME`` or ``file:PATH`` is read from the environment or a file so secrets stay out of
the command line and the repository. Values of secret-looking keys and every resolved secret are
masked in anything the loader prints. The subscription (``--topics``, ``--topic-pattern``) names
the checkpoint, and with the safety knobs and the client options makes the options of Spark's
Kafka source.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lakehouse.kafka_loader import LoaderError

#: Option keys whose values are never printed (case-insensitive substring match).
SECRET_KEY_WORDS = ("password", "secret", "jaas", "key", "token", "credential")
MASK = "****"

#: Client options Spark's Kafka source manages itself and rejects; the hint says what to use.
_SPARK_MANAGED = {
    "auto.offset.reset": "use --starting-offsets",
    "enable.auto.commit": "progress is kept in the checkpoint, not in Kafka",
    "key.deserializer": "keys are landed as bytes",
    "value.deserializer": "values are landed as bytes",
    "interceptor.classes": "not supported by Spark's Kafka source",
}

#: Consumer settings the loader uses unless ``--kafka-option`` / ``--kafka-config`` say otherwise.
#: Spark's consumer reads one partition per task and waits for each fetch in turn, so Kafka's
#: 1 MB per partition and fetch makes a large landing mostly waiting: 4 MB here.
#: ``receive.buffer.bytes=-1``: the OS' (auto-tuned) socket buffer instead of 64 KB, which caps
#: every fetch on a link with any latency.
#: ``fetch.max.wait.ms=10``: a task reads a known offset range and its last fetch reaches the end
#: of the partition, where the broker holds the request for new data up to this long (500 ms by
#: default), a wait per topic partition and micro-batch that adds up with many partitions on
#: few cores; Spark's source never long-polls for new records, it plans them by offset.
CONSUMER_DEFAULTS = {
    "max.partition.fetch.bytes": str(4 * 1024 * 1024),
    "receive.buffer.bytes": "-1",
    "fetch.max.wait.ms": "10",
}



def is_secret_key(key: str) -> bool:
    """Whether the value of option ``key`` must never be printed."""
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


def parse_properties(text: str, origin: str) -> dict[str, str]:
    """Parse Java-style ``key=value`` / ``key: value`` lines (``#`` and ``!`` comment lines).

    The usual client config files (``client.properties``) have this shape, so a file written for
    ``kafka-console-consumer --consumer.config`` works as is. Line continuations are supported
    because JAAS configs are often wrapped with a trailing backslash.
    """
    options: dict[str, str] = {}
    logical: list[str] = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        start = number
        line = lines[number].strip()
        number += 1
        if not line or line[0] in "#!":
            continue
        logical = [line]
        while logical[-1].endswith("\\") and number < len(lines):
            logical[-1] = logical[-1][:-1]
            logical.append(lines[number].strip())
            number += 1
        joined = "".join(logical)
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", joined)
        if not match:
            raise LoaderError(f"{origin}:{start + 1}: expected key=value")
        options[match.group(1)] = match.group(2)
    return options


def resolve_value(key: str, value: str) -> tuple[str, bool]:
    """``env:NAME`` / ``file:PATH`` -> the secret; returns (value, came from env or file).

    Errors name the option and the variable or file, never the value.
    """
    if value.startswith("env:"):
        name = value[4:]
        if name not in os.environ:
            raise LoaderError(f"Kafka option {key}: environment variable {name} is not set")
        return os.environ[name], True
    if value.startswith("file:"):
        path = Path(value[5:]).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise LoaderError(f"Kafka option {key}: cannot read {path}: {exc.strerror}") from exc
        return text.rstrip("\r\n"), True
    return value, False


@dataclass
class ClientOptions:
    """Resolved Kafka client options (without Spark's ``kafka.`` prefix) and what to mask."""

    options: dict[str, str]
    secrets: set[str] = field(default_factory=set)

    def masked(self) -> dict[str, str]:
        """The options as they may be printed."""
        return {k: self.mask_value(k, v) for k, v in self.options.items()}

    def mask_value(self, key: str, value: str) -> str:
        """``value`` itself, or :data:`MASK` when the key or the value is secret."""
        return MASK if is_secret_key(key) or value in self.secrets else value

    def scrub(self, text: str) -> str:
        """``text`` with every secret value replaced by :data:`MASK` (for error messages)."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret:
                text = text.replace(secret, MASK)
        return text


def client_options(args: argparse.Namespace) -> ClientOptions:
    """Kafka client options from ``--kafka-config`` then ``--kafka-option`` (later wins).

    ``--bootstrap-servers`` always wins over a ``bootstrap.servers`` in a file or option.
    """
    raw: dict[str, str] = {}
    if args.kafka_config:
        path = Path(args.kafka_config).expanduser()
        try:
            raw.update(parse_properties(path.read_text(), str(path)))
        except OSError as exc:
            raise LoaderError(f"--kafka-config: cannot read {path}: {exc.strerror}") from exc
    for item in args.kafka_option or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LoaderError(f"--kafka-option expects KEY=VALUE, got {item.split('=')[0]!r}")
        raw[key] = value
    resolved = ClientOptions({})
    for key, value in raw.items():
        bare = key[len("kafka.") :] if key.startswith("kafka.") else key
        if bare in _SPARK_MANAGED:
            raise LoaderError(f"Kafka option {bare} cannot be set: {_SPARK_MANAGED[bare]}")
        plain, from_secret_store = resolve_value(bare, value)
        resolved.options[bare] = plain
        if from_secret_store or is_secret_key(bare):
            resolved.secrets.add(plain)
            # A JAAS config also leaks if only its password shows up in some message.
            resolved.secrets.update(re.findall(r'password\s*=\s*"([^"]+)"', plain))
    resolved.options["bootstrap.servers"] = args.bootstrap_servers
    return resolved


def parse_topics(raw: str | None) -> list[str]:
    """``"a, b,,a"`` -> ``["a", "b"]``: order kept, blanks and repeats dropped."""
    topics: list[str] = []
    for name in (raw or "").split(","):
        name = name.strip()
        if name and name not in topics:
            topics.append(name)
    return topics


def checkpoint_name(topics: list[str] | None, pattern: str | None) -> str:
    """A stable directory name for one subscription: readable part plus a hash of the exact one.

    The same topics in any order give the same name, so a restart finds its checkpoint. A
    different subscription gets a fresh checkpoint: Spark's Kafka source cannot drop a topic from
    a checkpoint (it reports the missing partitions as data loss), so reusing one is unsafe.
    """
    if topics:
        unique = sorted(set(topics))
        spec, kind, readable = "topics:" + ",".join(unique), "topics", "+".join(unique)
    elif pattern:
        spec, kind, readable = "pattern:" + pattern, "pattern", pattern
    else:
        raise LoaderError("give --topics T1,T2 or --topic-pattern REGEX")
    digest = hashlib.sha256(spec.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._+-]+", "_", readable).strip("._")[:80] or "x"
    return f"kafka-{kind}-{readable}-{digest}"


def source_options(
    args: argparse.Namespace, client: ClientOptions, topics: list[str]
) -> dict[str, str]:
    """Options of Spark's Kafka source: subscription, safety knobs, ``kafka.``-prefixed client."""
    if args.max_offsets_per_trigger is not None and args.max_offsets_per_trigger < 1:
        raise LoaderError("--max-offsets-per-trigger must be at least 1")
    options = {
        "startingOffsets": args.starting_offsets,
        "failOnDataLoss": args.fail_on_data_loss,
        "includeHeaders": "true",
    }
    if args.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    if topics:
        options["subscribe"] = ",".join(topics)
    else:
        options["subscribePattern"] = args.topic_pattern
    for key, value in {**CONSUMER_DEFAULTS, **client.options}.items():
        options[f"kafka.{key}"] = value
    return options

