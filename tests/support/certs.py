"""Test certificates: a CA, a broker certificate and client certificates, made with the
``openssl`` command (no Python dependency), in every form Kafka's ssl.* settings take.

``make_certs(directory)`` returns a ``Certs`` with paths:
- ``ca`` (PEM certificate, the truststore of everyone), ``ca_p12`` (PKCS12 truststore,
  trusted for Java too);
- per identity (``broker``, ``client``): ``<id>_cert``, ``<id>_key`` (PEM, unencrypted),
  ``<id>_pem`` (PEM keystore: key then certificate), ``<id>_pem_encrypted`` (its key
  encrypted with ``KEY_PASSWORD``), ``<id>_p12`` (PKCS12 keystore, password
  ``STORE_PASSWORD``), and ``broker_jks`` when Java's keytool exists.
The broker certificate names ``localhost`` and ``127.0.0.1``; the client's subject is
``CLIENT_DN`` (its principal is ``User:`` + ``CLIENT_PRINCIPAL``).

``certs`` is the module-scoped pytest fixture of one set (skipped without ``openssl``):
``from tests.support.certs import certs  # noqa: F401 (fixture)``.

Run as a script to write a set: ``python -m tests.support.certs DIR``.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

STORE_PASSWORD = "store-secret"
KEY_PASSWORD = "key-secret"
# openssl -subj order (most significant first); Java prints it reversed (RFC 2253)
CLIENT_SUBJECT = "/C=US/ST=CA/O=kafkapy/OU=test/CN=client-one"
CLIENT_PRINCIPAL = "CN=client-one,OU=test,O=kafkapy,ST=CA,C=US"
BROKER_SUBJECT = "/O=kafkapy/CN=localhost"


@dataclass
class Certs:
    directory: Path
    ca: Path
    ca_p12: Path
    broker_cert: Path
    broker_key: Path
    broker_pem: Path
    broker_pem_encrypted: Path
    broker_p12: Path
    broker_jks: Path | None
    client_cert: Path
    client_key: Path
    client_pem: Path
    client_p12: Path
    other_client_cert: Path      # signed by another CA: not trusted by the broker
    other_client_key: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: Path, name: str, subject: str) -> None:
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
         "-keyout", f"{name}-key.pem", "-out", f"{name}.pem", "-subj", subject,
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def _leaf(d: Path, name: str, subject: str, ca: str, san: str | None) -> None:
    _run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-key.pem",
         "-out", f"{name}.csr", "-subj", subject, cwd=d)
    ext = d / f"{name}.ext"
    lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyEncipherment",
             "extendedKeyUsage=serverAuth,clientAuth"]
    if san:
        lines.append(f"subjectAltName={san}")
    ext.write_text("\n".join(lines) + "\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}-key.pem",
         "-CAcreateserial", "-out", f"{name}-cert.pem", "-days", "30", "-sha256",
         "-extfile", ext.name, cwd=d)
    (d / f"{name}-keystore.pem").write_bytes((d / f"{name}-key.pem").read_bytes()
                                            + (d / f"{name}-cert.pem").read_bytes())
    _run("pkcs12", "-export", "-in", f"{name}-cert.pem", "-inkey", f"{name}-key.pem",
         "-certfile", f"{ca}.pem", "-name", name, "-out", f"{name}.p12",
         "-passout", f"pass:{STORE_PASSWORD}", cwd=d)


def make_certs(directory: Path) -> Certs:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca", "/O=kafkapy/CN=kafkapy-test-ca")
    _ca(d, "other-ca", "/O=elsewhere/CN=other-ca")
    _leaf(d, "broker", BROKER_SUBJECT, "ca", "DNS:localhost,IP:127.0.0.1")
    _leaf(d, "client", CLIENT_SUBJECT, "ca", None)
    _leaf(d, "other-client", "/CN=intruder", "other-ca", None)
    _run("pkcs8", "-topk8", "-in", "broker-key.pem", "-out", "broker-key-enc.pem",
         "-passout", f"pass:{KEY_PASSWORD}", "-v2", "aes-256-cbc", cwd=d)
    (d / "broker-keystore-enc.pem").write_bytes((d / "broker-key-enc.pem").read_bytes()
                                               + (d / "broker-cert.pem").read_bytes())
    jks = None
    keytool = shutil.which("keytool")
    if keytool is None:     # (then Java would not trust it: openssl 3.0 has no -jdktrust)
        _run("pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-out", "truststore.p12",
             "-passout", f"pass:{STORE_PASSWORD}", cwd=d)
    else:
        subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
                        "-keystore", "truststore.p12", "-storetype", "PKCS12",
                        "-storepass", STORE_PASSWORD], cwd=d, check=True,
                       capture_output=True, timeout=60)
        jks = d / "broker.jks"
        subprocess.run([keytool, "-importkeystore", "-noprompt", "-srckeystore", "broker.p12",
                        "-srcstoretype", "PKCS12", "-srcstorepass", STORE_PASSWORD,
                        "-destkeystore", "broker.jks", "-deststoretype", "JKS",
                        "-deststorepass", STORE_PASSWORD], cwd=d, check=True,
                       capture_output=True, timeout=60)
    return Certs(d, d / "ca.pem", d / "truststore.p12", d / "broker-cert.pem",
                 d / "broker-key.pem", d / "broker-keystore.pem", d / "broker-keystore-enc.pem",
                 d / "broker.p12", jks, d / "client-cert.pem", d / "client-key.pem",
                 d / "client-keystore.pem", d / "client.p12", d / "other-client-cert.pem",
                 d / "other-client-key.pem")


def broker_ssl_overrides(certs: Certs, kind: str = "PEM", prefix: str = "") -> dict[str, str]:
    """ssl.* settings of a broker listener with ``certs`` (kind PEM, PEM_ENCRYPTED,
    PKCS12, JKS or INLINE); ``prefix`` e.g. ``listener.name.ssl.``."""
    p = prefix or ""
    if kind == "PEM":
        out = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.broker_pem)}
    elif kind == "PEM_ENCRYPTED":
        out = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.broker_pem_encrypted),
               "ssl.key.password": KEY_PASSWORD}
    elif kind == "PKCS12":
        out = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(certs.broker_p12),
               "ssl.keystore.password": STORE_PASSWORD}
    elif kind == "JKS":
        out = {"ssl.keystore.type": "JKS", "ssl.keystore.location": str(certs.broker_jks),
               "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": STORE_PASSWORD}
    elif kind == "INLINE":
        out = {"ssl.keystore.type": "PEM",
               "ssl.keystore.certificate.chain": certs.broker_cert.read_text().replace("\n", "\\n"),
               "ssl.keystore.key": certs.broker_key.read_text().replace("\n", "\\n")}
    else:
        raise ValueError(kind)
    if kind == "PKCS12":
        out.update({"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(certs.ca_p12),
                    "ssl.truststore.password": STORE_PASSWORD})
    else:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca)})
    return {p + k: v for k, v in out.items()}


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    if shutil.which("openssl") is None:
        pytest.skip("openssl command missing")
    return make_certs(tmp_path_factory.mktemp("certs"))


if __name__ == "__main__":
    made = make_certs(Path(sys.argv[1] if len(sys.argv) > 1 else "certs"))
    print(made)
