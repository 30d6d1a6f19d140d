"""TLS for listeners and for the inter-broker client, configured as Kafka configures it.

Settings are Kafka's (DefaultSslEngineFactory), read per listener:
``listener.name.<listener lower-case>.ssl.<key>`` wins over ``ssl.<key>``.

- keystore: ``ssl.keystore.type`` PEM, PKCS12 or JKS (Kafka's default); ``.location``,
  ``.password``, ``ssl.key.password``; or PEM inline in ``ssl.keystore.certificate.chain``
  and ``ssl.keystore.key``.  PKCS12 is read with the ``openssl`` command, JKS is first
  converted to PKCS12 with Java's ``keytool`` (both only at start-up);
- truststore: the same types, or PEM inline in ``ssl.truststore.certificates``;
- ``ssl.client.auth`` none / requested / required (on a SASL_SSL listener only the
  listener-prefixed key counts, else none, as Kafka's ChannelBuilders does);
- ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3), ``ssl.cipher.suites`` (Java / IANA names
  of TLS 1.2 suites mapped to OpenSSL's; TLS 1.3 suites cannot be restricted by Python's
  ssl module and are accepted as given);
- the client checks the broker's host name unless
  ``ssl.endpoint.identification.algorithm`` is empty (Kafka's default is https).

A client certificate's principal is ``User:<subject DN>`` in RFC 2253 form, as Java's
``X500Principal.getName()`` prints it (``ssl.principal.mapping.rules=DEFAULT``).

Invariants: decrypted key material only ever touches disk in a private (0700) temporary
directory that is removed before the context is returned; a configuration the TLS library
refuses raises ``SslConfigError`` naming the listener and the key.
"""
from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile

from kafkapy.api.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

__all__ = ["SslConfigError", "server_context", "client_context", "peer_principal",
           "distinguished_name", "listener_value"]

_DEFAULTS = {
    "ssl.keystore.type": "JKS",
    "ssl.truststore.type": "JKS",
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.protocol": "TLSv1.3",
    "ssl.endpoint.identification.algorithm": "https",
}
_TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


class SslConfigError(ValueError):
    """A listener's TLS settings cannot be used (message names listener and key)."""


def listener_value(config, listener_name: str | None, key: str) -> str | None:
    """``listener.name.<l>.<key>`` if set, else ``<key>``, else Kafka's default (raw text)."""
    originals = config.originals
    if listener_name:
        prefixed = f"listener.name.{listener_name.lower()}.{key}"
        if prefixed in originals:
            return _text(originals[prefixed])
    if key in originals:
        return _text(originals[key])
    return _DEFAULTS.get(key)


def server_context(config, listener_name: str, security_protocol: str = "SSL") -> ssl.SSLContext:
    """The listener's server context; SslConfigError when it cannot be built."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    get = lambda key: listener_value(config, listener_name, key)  # noqa: E731
    where = f"listener {listener_name}"
    _set_protocols(ctx, get, where)
    if not _load_keystore(ctx, get, where):
        raise SslConfigError(f"SSL key store is not specified for {where}: set ssl.keystore.location "
                             "(or ssl.keystore.certificate.chain and ssl.keystore.key)")
    client_auth = _client_auth(config, listener_name, security_protocol)
    if client_auth != "none":
        if not _load_truststore(ctx, get, where):
            raise SslConfigError(f"ssl.client.auth={client_auth} on {where} needs a trust store "
                                 "(ssl.truststore.location or ssl.truststore.certificates)")
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    _set_ciphers(ctx, get, where)
    return ctx


def client_context(config, listener_name: str) -> ssl.SSLContext:
    """The context a broker uses to reach another broker's ``listener_name``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    get = lambda key: listener_value(config, listener_name, key)  # noqa: E731
    where = f"inter-broker listener {listener_name}"
    _set_protocols(ctx, get, where)
    if not _load_truststore(ctx, get, where):
        ctx.load_default_certs()
    _load_keystore(ctx, get, where)        # presented when the other side asks
    ctx.check_hostname = bool((get("ssl.endpoint.identification.algorithm") or "").strip())
    _set_ciphers(ctx, get, where)
    return ctx


def _client_auth(config, listener_name: str, security_protocol: str) -> str:
    prefixed = f"listener.name.{listener_name.lower()}.ssl.client.auth"
    if security_protocol == "SASL_SSL" and prefixed not in config.originals:
        return "none"
    value = (listener_value(config, listener_name, "ssl.client.auth") or "none").strip().lower()
    if value not in ("none", "requested", "required"):
        raise SslConfigError(f"Invalid value {value} for configuration ssl.client.auth: "
                             "String must be one of: required, requested, none")
    return value


# -- protocols and ciphers -------------------------------------------------------------------

def _set_protocols(ctx: ssl.SSLContext, get, where: str) -> None:
    names = _list(get("ssl.enabled.protocols")) or [get("ssl.protocol") or "TLSv1.3"]
    versions = [_TLS_VERSIONS[n] for n in names if n in _TLS_VERSIONS]
    if not versions:
        raise SslConfigError(f"ssl.enabled.protocols of {where} names no protocol kafkapy "
                             f"supports ({', '.join(names)}); use TLSv1.2 and/or TLSv1.3")
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)


# Java (IANA) names of common TLS 1.2 suites -> OpenSSL's.
_IANA_TO_OPENSSL = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
}
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                 "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}


def _set_ciphers(ctx: ssl.SSLContext, get, where: str) -> None:
    names = _list(get("ssl.cipher.suites"))
    if not names:
        return
    tls12 = [_IANA_TO_OPENSSL.get(n, n) for n in names if n not in _TLS13_SUITES]
    if not tls12:
        return          # only TLS 1.3 suites: Python cannot narrow those; all stay
    try:
        ctx.set_ciphers(":".join(tls12))
    except ssl.SSLError as err:
        raise SslConfigError(f"ssl.cipher.suites of {where}: no usable suite in "
                             f"{', '.join(names)} ({err})") from None


# -- key and trust material ---------------------------------------------------------------------

def _load_keystore(ctx: ssl.SSLContext, get, where: str) -> bool:
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    location = get("ssl.keystore.location")
    kind = (get("ssl.keystore.type") or "JKS").upper()
    if chain or key:
        if not (chain and key):
            raise SslConfigError(f"{where}: ssl.keystore.certificate.chain and ssl.keystore.key "
                                 "must both be set")
        with _private_dir() as tmp:
            path = _write(tmp, "keystore.pem", _pem(key) + _pem(chain))
            _use_chain(ctx, path, get("ssl.key.password"), where)
        return True
    if not location:
        return False
    if not os.path.isfile(location):
        raise SslConfigError(f"Failed to load SSL keystore {location} of type {kind} ({where}): "
                             "file not found")
    if kind == "PEM":
        _use_chain(ctx, location, get("ssl.key.password"), where)
        return True
    password = get("ssl.keystore.password") or ""
    with _private_dir() as tmp:
        p12 = _jks_to_pkcs12(location, password, tmp, where) if kind == "JKS" else location
        if kind not in ("JKS", "PKCS12"):
            raise SslConfigError(f"ssl.keystore.type {kind} of {where} is not supported "
                                 "(PEM, PKCS12, JKS)")
        leaf = _openssl_pkcs12(p12, password, ["-clcerts", "-nokeys"], where)
        cas = _openssl_pkcs12(p12, password, ["-cacerts", "-nokeys"], where)
        key = _openssl_pkcs12(p12, password, ["-nocerts", "-nodes"], where)
        path = _write(tmp, "keystore.pem", key + leaf + cas)
        _use_chain(ctx, path, None, where)
    return True


def _load_truststore(ctx: ssl.SSLContext, get, where: str) -> bool:
    inline = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    kind = (get("ssl.truststore.type") or "JKS").upper()
    try:
        if inline:
            ctx.load_verify_locations(cadata=_pem(inline).decode("ascii"))
            return True
        if not location:
            return False
        if not os.path.isfile(location):
            raise SslConfigError(f"Failed to load SSL truststore {location} of type {kind} "
                                 f"({where}): file not found")
        if kind == "PEM":
            ctx.load_verify_locations(cafile=location)
            return True
        if kind not in ("JKS", "PKCS12"):
            raise SslConfigError(f"ssl.truststore.type {kind} of {where} is not supported "
                                 "(PEM, PKCS12, JKS)")
        password = get("ssl.truststore.password") or ""
        with _private_dir() as tmp:
            p12 = _jks_to_pkcs12(location, password, tmp, where) if kind == "JKS" else location
            certs = _openssl_pkcs12(p12, password, ["-nokeys"], where)
        ctx.load_verify_locations(cadata=certs.decode("ascii", errors="replace"))
        return True
    except ssl.SSLError as err:
        raise SslConfigError(f"Failed to load SSL truststore of {where}: {err}") from None


def _use_chain(ctx: ssl.SSLContext, path: str, key_password: str | None, where: str) -> None:
    try:
        ctx.load_cert_chain(path, password=key_password or None)
    except (ssl.SSLError, OSError) as err:
        raise SslConfigError(f"Failed to load SSL keystore of {where}: {err} (a PEM keystore holds "
                             "the private key, encrypted with ssl.key.password or not, and its "
                             "certificate chain)") from None


def _openssl_pkcs12(path: str, password: str, options: list[str], where: str) -> bytes:
    env = dict(os.environ, KAFKAPY_P12_PASS=password)
    last = ""
    for legacy in ([], ["-legacy"]):
        try:
            done = subprocess.run(["openssl", "pkcs12", "-in", path, "-passin", "env:KAFKAPY_P12_PASS",
                                   *legacy, *options], capture_output=True, env=env, timeout=30)
        except FileNotFoundError:
            raise SslConfigError(f"reading the PKCS12 store {path} ({where}) needs the openssl "
                                 "command, which is not installed") from None
        if done.returncode == 0:
            return done.stdout
        last = done.stderr.decode(errors="replace").strip().splitlines()[:1]
    raise SslConfigError(f"Failed to load SSL keystore {path} of type PKCS12 ({where}): "
                         f"{last[0] if last else 'openssl pkcs12 failed'}")


def _jks_to_pkcs12(path: str, password: str, tmp: str, where: str) -> str:
    out = os.path.join(tmp, "store.p12")
    keytool = shutil.which("keytool")
    if keytool is None:
        raise SslConfigError(f"a JKS store ({path}, {where}) needs Java's keytool to be read; "
                             "use ssl.keystore.type=PKCS12 or PEM instead")
    done = subprocess.run([keytool, "-importkeystore", "-noprompt", "-srckeystore", path,
                           "-srcstoretype", "JKS", "-srcstorepass", password,
                           "-destkeystore", out, "-deststoretype", "PKCS12",
                           "-deststorepass", password or "changeit"],
                          capture_output=True, timeout=60)
    if done.returncode != 0:
        raise SslConfigError(f"Failed to load SSL store {path} of type JKS ({where}): "
                             f"{done.stdout.decode(errors='replace').strip()}")
    return out


class _private_dir:
    def __enter__(self) -> str:
        self._path = tempfile.mkdtemp(prefix="kafkapy-tls-")
        return self._path

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self._path, ignore_errors=True)


def _write(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _pem(text: str) -> bytes:
    """Inline PEM as Kafka takes it (one line or many); always newline-terminated."""
    data = text.strip().replace("\\n", "\n")
    return (data + "\n").encode("ascii")


def _text(value) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(getattr(value, "value", value))


def _list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


# -- principals ------------------------------------------------------------------------------------

_RFC2253_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L",
    "stateOrProvinceName": "ST", "organizationName": "O", "organizationalUnitName": "OU",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}
# Attributes Java prints as OID=#<DER hex>: (OID, DER string tag).
_HEX_ATTRIBUTES = {
    "emailAddress": ("1.2.840.113549.1.9.1", 0x16),
    "serialNumber": ("2.5.4.5", 0x13),
    "title": ("2.5.4.12", 0x0C),
    "surname": ("2.5.4.4", 0x0C),
    "givenName": ("2.5.4.42", 0x0C),
    "initials": ("2.5.4.43", 0x0C),
    "generationQualifier": ("2.5.4.44", 0x0C),
    "pseudonym": ("2.5.4.65", 0x0C),
    "dnQualifier": ("2.5.4.46", 0x13),
    "businessCategory": ("2.5.4.15", 0x0C),
    "postalCode": ("2.5.4.17", 0x0C),
}


def peer_principal(ssl_object) -> KafkaPrincipal:
    """The SSL client's principal: ``User:<DN>`` with a certificate, else ANONYMOUS."""
    if ssl_object is None:
        return ANONYMOUS
    try:
        cert = ssl_object.getpeercert()
    except (ValueError, ssl.SSLError):
        return ANONYMOUS
    if not cert or not cert.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, distinguished_name(cert["subject"]))


def distinguished_name(subject) -> str:
    """Python's ``getpeercert()['subject']`` (RDNs most significant first) as RFC 2253
    text the way Java's X500Principal prints it: least significant RDN first, ``,``
    between RDNs and ``+`` inside one, known keywords, other attributes ``OID=#hex``."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(_ava(name, value) for name, value in rdn))
    return ",".join(rdns)


def _ava(name: str, value: str) -> str:
    keyword = _RFC2253_KEYWORDS.get(name)
    if keyword is not None:
        return f"{keyword}={_escape(value)}"
    oid, tag = _HEX_ATTRIBUTES.get(name, (name, 0x0C))
    raw = value.encode("utf-8")
    return f"{oid}=#{_der(tag, raw).hex()}"


def _der(tag: int, content: bytes) -> bytes:
    size = len(content)
    if size < 0x80:
        head = bytes([size])
    else:
        octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
        head = bytes([0x80 | len(octets)]) + octets
    return bytes([tag]) + head + content


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;':
            out.append("\\" + ch)
        elif (ch == "#" and i == 0) or (ch == " " and (i == 0 or i == len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)
