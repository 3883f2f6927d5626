# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The test PKI of `kafka start --secure`, made with the openssl CLI (EC P-256 keys, so it
takes a few tens of milliseconds; valid for 10 years):

  ca.pem, ca.key                   the test CA, which the broker and the clients trust
  broker.pem, broker.key           the broker's certificate (CN=localhost, subjectAltName
                                   DNS:localhost and IP:127.0.0.1), signed by the CA
  broker-keystore.pem              its key and certificate in one file (Kafka's PEM key store)
  client.pem, client.key           a client certificate (CN=kelt, which
                                   ssl.principal.mapping.rules makes User:kelt), signed by the CA
  other-ca.pem, other-ca.key       an unrelated CA that signed nothing here ("untrusted" tests)

Keys (unencrypted PKCS#8) are mode 600; certificates 644."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .common import Fatal

# The files that the broker and the env file refer to.
FILES = ("ca.pem", "ca.key", "broker-keystore.pem", "client.pem", "client.key", "other-ca.pem")

OPENSSL_CNF = """\
# Written by scripts/kafka.sh (kelt_services.tls); the subjects are given with -subj.
[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[broker_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""

NEWKEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def present(tls: Path) -> bool:
    return all((tls / f).is_file() and (tls / f).stat().st_size > 0 for f in FILES)


def make(tls: Path) -> None:
    """(Re)makes DIR/tls. Fatal, with openssl's output, when a step fails."""
    if shutil.which("openssl") is None:
        raise Fatal("openssl not found (--secure makes certificates with it)")
    shutil.rmtree(tls, ignore_errors=True)
    tls.mkdir(parents=True)
    (tls / "openssl.cnf").write_text(OPENSSL_CNF)

    def ca(name: str, subject: str) -> list[list[str]]:
        return [["openssl", "req", "-x509", "-config", "openssl.cnf", "-extensions", "ca_ext",
                 *NEWKEY, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "3650",
                 "-subj", subject]]

    def leaf(name: str, subject: str, extensions: str) -> list[list[str]]:
        return [["openssl", "req", "-new", "-config", "openssl.cnf", *NEWKEY,
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject],
                ["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem",
                 "-CAkey", "ca.key", "-CAserial", "ca.srl", "-CAcreateserial", "-days", "3650",
                 "-extfile", "openssl.cnf", "-extensions", extensions, "-out", f"{name}.pem"]]

    steps = (ca("ca", "/CN=kelt test CA") + leaf("broker", "/CN=localhost", "broker_ext")
             + leaf("client", "/CN=kelt", "client_ext")
             + ca("other-ca", "/CN=kelt other CA (trusted by nothing)"))
    old_umask = os.umask(0o077)
    try:
        for argv in steps:
            p = subprocess.run(argv, cwd=tls, capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                raise Fatal(f"openssl could not make the certificates in {tls}:\n"
                            f"{p.stdout}{p.stderr}".rstrip())
    finally:
        os.umask(old_umask)
    (tls / "broker-keystore.pem").write_text((tls / "broker.key").read_text()
                                             + (tls / "broker.pem").read_text())
    for f in tls.iterdir():
        if f.suffix == ".pem":
            f.chmod(0o644)
        if f.suffix == ".key":
            f.chmod(0o600)
    (tls / "broker-keystore.pem").chmod(0o600)
    for f in ("ca.srl", "openssl.cnf", "broker.csr", "client.csr"):
        (tls / f).unlink(missing_ok=True)
