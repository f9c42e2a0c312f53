"""Certificates for the TLS tests, made in process with trustme (over the cryptography
package): no openssl command line is needed, so these tests run on every machine."""

from __future__ import annotations

from pathlib import Path

import trustme


def self_contained(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, common name ``name``, from a CA of its own.
    ``name.crt`` holds the certificate and then that CA, so the one file is both the chain a
    server presents and the trust anchor a client checks it against; ``name.key`` its key."""
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost", common_name=name)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(b"".join(pem.bytes() for pem in leaf.cert_chain_pems) + ca.cert_pem.bytes())
    leaf.private_key_pem.write_to_path(str(key))
    return cert, key


def server_and_client(directory: Path) -> None:
    """One CA (``ca.pem``) and two certificates it signed: ``server.pem``/``server.key`` for
    127.0.0.1 and ``client.pem``/``client.key`` (common name caldera-test-client)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    for name, identity in (("server", "127.0.0.1"), ("client", "client.caldera.test")):
        leaf = ca.issue_cert(identity, common_name=f"caldera-test-{name}")
        leaf.private_key_pem.write_to_path(str(directory / f"{name}.key"))
        (directory / f"{name}.pem").write_bytes(b"".join(p.bytes() for p in leaf.cert_chain_pems))
