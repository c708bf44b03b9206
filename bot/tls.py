"""``perfgate queue-tls DIR``: the TLS files of the job queue's Redis (``docker-compose.yml``'s
``redis-tls`` service runs it once before Redis starts; security review N3).

It writes a private certificate authority's certificate ``ca.crt`` and a server certificate
``redis.crt`` with its key ``redis.key``, for the host names given (and ``localhost``,
``127.0.0.1``). The CA's own key is never written: nothing else can be signed with it, and a new
pair is made by deleting the folder's files. Files that exist are left as they are, so the
command is safe to run at every ``docker compose up``. Clients verify the server with ``ca.crt``
(``rediss://...?ssl_ca_certs=DIR/ca.crt``); they authenticate with Redis' password, not a
certificate. Keys are ECDSA P-256, certificates SHA-256, valid :data:`VALID_DAYS` days
(``cryptography``'s X.509 builder, as its tutorial "Creating a self-signed certificate" does).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import ipaddress
import os
from pathlib import Path

#: How long the certificates are valid (days); delete the files and run again for new ones.
VALID_DAYS = 3650
CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "redis.crt", "redis.key"


def make_tls_files(folder: Path, hosts: list[str], owner: tuple[int, int] | None = None) -> list[Path]:
    """Write ``ca.crt``, ``redis.crt`` and ``redis.key`` (mode 0600) into ``folder`` unless all
    three exist; the certificate names ``hosts``, ``localhost`` and ``127.0.0.1``.

    Args:
        owner: ``(uid, gid)`` given to the key file (the Redis server's account), or None.
    Returns:
        the files written (empty when they existed).
    Raises:
        ValueError: no host name, or a name that is neither a DNS name nor an IP address.
        OSError: the folder cannot be written.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / CA_FILE, folder / CERT_FILE, folder / KEY_FILE]
    if all(p.exists() for p in paths):
        return []
    names = list(dict.fromkeys([*hosts, "localhost", "127.0.0.1"]))
    if not hosts or any(not h or len(h) > 253 or any(c.isspace() or c in "/:@" for c in h) for h in hosts):
        raise ValueError(f"host names for the certificate: {hosts!r}")
    alt_names: list[x509.GeneralName] = []
    for name in names:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            alt_names.append(x509.DNSName(name))
    now = _dt.datetime.now(_dt.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "perfgate queue CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5))
          .not_valid_after(now + _dt.timedelta(days=VALID_DAYS))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    for path in paths:
        path.unlink(missing_ok=True)
    pem = serialization.Encoding.PEM
    _write(paths[2], key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600,
           owner)
    _write(paths[1], cert.public_bytes(pem), 0o644, owner)
    _write(paths[0], ca.public_bytes(pem), 0o644, None)
    return paths


def _write(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    if owner is not None:
        os.chown(path, *owner)


def main_queue_tls(args: argparse.Namespace) -> int:
    """``perfgate queue-tls DIR [--host NAME ...] [--owner UID:GID]``: :func:`make_tls_files`,
    then one line saying what it did.

    Raises:
        runner.errors.UserError: a bad ``--owner`` or host name, or the folder cannot be written (exit 2).
    """
    from runner.errors import UserError

    owner = None
    if args.owner:
        uid, _, gid = args.owner.partition(":")
        if not (uid.isdigit() and (gid or uid).isdigit()):
            raise UserError(f"--owner must be UID:GID (numbers), got {args.owner!r}")
        owner = (int(uid), int(gid or uid))
    try:
        written = make_tls_files(Path(args.dir), args.host or ["redis"], owner)
    except (ValueError, OSError) as exc:
        raise UserError(f"queue-tls: {exc}") from None
    print(f"perfgate: {'wrote' if written else 'kept'} {CA_FILE}, {CERT_FILE} and {KEY_FILE} in {args.dir}")
    return 0
