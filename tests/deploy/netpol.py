"""Kubernetes NetworkPolicy semantics, for tests that ask of the manifests "may this pod connect
to that pod or address on that port?" (the API reference, "NetworkPolicy" and the concepts page
"Network Policies"):

- a pod is isolated for ingress (egress) when a policy of its namespace selects it and lists
  ``Ingress`` (``Egress``) in ``policyTypes``; an isolated pod accepts (opens) a connection only
  when a rule of one of those policies allows it; a pod no policy isolates allows everything;
- a connection needs both: the source's egress and the destination's ingress;
- a peer is a ``podSelector`` (this policy's namespace), a ``namespaceSelector``, both (AND), or
  an ``ipBlock`` (``cidr`` minus ``except``), which is matched here against the address only;
- ``ports`` missing: every port; a namespace carries its ``kubernetes.io/metadata.name`` label.

Only ``matchLabels`` selectors are supported (the manifests use nothing else; a
``matchExpressions`` raises).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict = field(default_factory=dict, hash=False)
    ip: str = "10.1.0.1"


@dataclass(frozen=True)
class Address:
    """An address outside every namespace (the internet, the metadata endpoint, a node)."""

    ip: str


def _selects(selector: dict | None, labels: dict) -> bool:
    if selector is None:
        return False
    if selector.get("matchExpressions"):
        raise NotImplementedError("matchExpressions")
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _peer_matches(peer: dict, policy_namespace: str, other) -> bool:
    if "ipBlock" in peer:
        address = ipaddress.ip_address(other.ip)
        block = peer["ipBlock"]
        network = ipaddress.ip_network(block["cidr"])
        return (address.version == network.version and address in network
                and not any(address in ipaddress.ip_network(e) for e in block.get("except", [])
                            if ipaddress.ip_network(e).version == address.version))
    if not isinstance(other, Pod):
        return False
    if "namespaceSelector" in peer:
        if not _selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": other.namespace}):
            return False
        return "podSelector" not in peer or _selects(peer["podSelector"], other.labels)
    return other.namespace == policy_namespace and _selects(peer.get("podSelector"), other.labels)


def _port_matches(ports: list | None, port: int, protocol: str) -> bool:
    return not ports or any(p.get("port") in (None, port) and p.get("protocol", "TCP") == protocol for p in ports)


def _allowed(policies: list[dict], pod: Pod, other, port: int, protocol: str, direction: str) -> bool:
    kind, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    selecting = [p for p in policies if p["metadata"]["namespace"] == pod.namespace
                 and _selects(p["spec"]["podSelector"], pod.labels)
                 and direction in p["spec"].get("policyTypes", ["Ingress"])]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get(kind) or []:
            peers = rule.get(peers_key)
            if (peers is None or any(_peer_matches(peer, policy["metadata"]["namespace"], other) for peer in peers)) \
                    and _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def connects(policies: list[dict], source, destination, port: int, protocol: str = "TCP") -> bool:
    """May ``source`` (a :class:`Pod`, or an :class:`Address` coming in) open a connection to
    ``destination`` (a :class:`Pod` or an :class:`Address`) on ``port``? ``policies``: every
    NetworkPolicy, each with ``metadata.namespace`` set."""
    out = not isinstance(source, Pod) or _allowed(policies, source, destination, port, protocol, "Egress")
    into = not isinstance(destination, Pod) or _allowed(policies, destination, source, port, protocol, "Ingress")
    return out and into
