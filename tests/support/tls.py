"""A throwaway self-signed certificate for loopback TLS tests.

Made with the `openssl` command line tool, so the project needs no extra Python dependency;
when it is missing, `TlsUnavailable` tells the caller to skip its TLS tests.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


class TlsUnavailable(RuntimeError):
    """No way to make a certificate here."""


@dataclass(frozen=True)
class CertPair:
    cert: Path  # also the CA file a verifying client trusts
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A verifying client context that trusts only this certificate."""
        return ssl.create_default_context(cafile=str(self.cert))


def self_signed_cert(directory: Path) -> CertPair:
    """A P-256 certificate for 127.0.0.1 and localhost, valid for two days."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsUnavailable("the openssl command is not installed")
    pair = CertPair(directory / "cert.pem", directory / "key.pem")
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(pair.key),
            "-out",
            str(pair.cert),
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return pair
