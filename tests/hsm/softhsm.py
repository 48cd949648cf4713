"""A real SoftHSM2 token in a temporary directory, for the PKCS#11 seal's tests.

``SOFTHSM2_CONF`` points at a config whose ``tokendir`` is under the test's
``tmp_path``; tokens are made with ``softhsm2-util --init-token --free`` as an
operator would. Every token gets a unique label: the PKCS#11 library stays
loaded for the whole test process, and a fresh label makes the seal rescan the
slots (re-reading ``SOFTHSM2_CONF``) instead of finding an earlier test's token.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

LIBRARY_CANDIDATES = (
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
)
PIN = "4321-coffer"
SO_PIN = "8765-coffer-so"


def find_library() -> str | None:
    return next((path for path in LIBRARY_CANDIDATES if os.path.isfile(path)), None)


def available() -> bool:
    return find_library() is not None and shutil.which("softhsm2-util") is not None


@dataclass
class SoftHsm:
    """One SoftHSM2 configuration (a token directory); tokens are made on demand."""

    root: Path
    lib: str

    @property
    def conf(self) -> Path:
        return self.root / "softhsm2.conf"

    @property
    def tokendir(self) -> Path:
        return self.root / "tokens"

    def write_conf(self) -> None:
        self.tokendir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            f"directories.tokendir = {self.tokendir}\n"
            "objectstore.backend = file\n"
            "log.level = ERROR\n",
            encoding="utf-8",
        )

    def init_token(self, label: str | None = None, pin: str = PIN) -> str:
        """A new token; returns its label (unique unless given)."""
        label = label or f"coffer-{uuid.uuid4().hex[:10]}"
        subprocess.run(
            [
                "softhsm2-util",
                "--init-token",
                "--free",
                "--label",
                label,
                "--pin",
                pin,
                "--so-pin",
                SO_PIN,
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "SOFTHSM2_CONF": str(self.conf)},
            timeout=30,
        )
        return label

    def options(self, token_label: str, **extra: str) -> dict[str, str]:
        """A ``seal "pkcs11"`` stanza's options for ``token_label``."""
        return {
            "lib": self.lib,
            "token_label": token_label,
            "pin": PIN,
            "key_label": "coffer-root-key",
            "generate_key": "true",
            **extra,
        }

    def stanza(self, token_label: str, **extra: str) -> str:
        """The same options as HCL, for a server's config file."""
        body = "".join(f'  {k} = "{v}"\n' for k, v in self.options(token_label, **extra).items())
        return f'seal "pkcs11" {{\n{body}}}\n'
