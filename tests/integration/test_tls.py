"""The TLS listener: trust, and in-place certificate reload on SIGHUP."""

from __future__ import annotations

import signal
import socket
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trustme

from conftest_tls_helpers import (  # noqa: F401  (placeholder, replaced below)
    nothing,
)

if TYPE_CHECKING:
    from conftest import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
