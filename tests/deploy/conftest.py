"""Fixtures for the compose deployment: the images (built once per run) and a cluster.

The images come from ``deploy/build-images.sh`` (a debootstrap base, built only when
missing, then cached Docker layers). Each cluster is its own compose project on free
127.0.0.1 ports with its keys in a temporary folder, and is removed (containers,
network, volumes) however the test ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.clusterctl import ComposeCluster, free_port_env
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
COFFER_IMAGE = "coffer:latest"
LB_IMAGE = "coffer-haproxy:latest"


def docker_ready() -> bool:
    if shutil.which("docker") is None or shutil.which("docker-compose") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def base_image_present() -> bool:
    done = subprocess.run(
        ["docker", "image", "inspect", "coffer-base:bookworm", "coffer-haproxy-base:bookworm"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture(scope="session")
def images() -> None:
    require(docker_ready(), "docker, docker-compose and a running Docker daemon are required")
    require(
        base_image_present() or (shutil.which("debootstrap") is not None and os.geteuid() == 0),
        "building the base image needs debootstrap and root",
    )
    _build_images()


def _build_images(*flags: str, tags: dict[str, str] | None = None) -> None:
    """Run deploy/build-images.sh (cached layers make a repeat cheap); fail with its output.
    ``tags``: COFFER_IMAGE / COFFER_LB_IMAGE, to build under other names."""
    env = {**os.environ, "PYTHON": sys.executable, **(tags or {})}
    done = subprocess.run(
        [str(ROOT / "deploy" / "build-images.sh"), *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        check=False,
    )
    sys.stderr.write("".join(line + "\n" for line in done.stderr.splitlines() if "[" in line))
    output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"build-images.sh {' '.join(flags)} failed:\n{output}"


def project_resources(project: str) -> dict[str, list[str]]:
    """Everything Docker still holds for a compose project."""
    label = f"label=com.docker.compose.project={project}"
    found = {}
    for kind, command in (
        ("containers", ["docker", "ps", "-a", "-q", "--filter", label]),
        ("networks", ["docker", "network", "ls", "-q", "--filter", label]),
        ("volumes", ["docker", "volume", "ls", "-q", "--filter", label]),
    ):
        out = subprocess.run(command, capture_output=True, text=True, check=False).stdout
        found[kind] = out.split()
    return found


#: The replication compose test's own image names (deploy/compose.replication.yaml), so
#: that it never rebuilds the tags another run of the compose tests is using.
REPLICATION_IMAGES = {
    "COFFER_IMAGE": "coffer-repl:latest",
    "COFFER_LB_IMAGE": "coffer-repl-haproxy:latest",
}


@pytest.fixture(scope="session")
def replication_images() -> dict[str, str]:
    require(docker_ready(), "docker, docker-compose and a running Docker daemon are required")
    require(
        base_image_present() or (shutil.which("debootstrap") is not None and os.geteuid() == 0),
        "building the base image needs debootstrap and root",
    )
    _build_images(tags=REPLICATION_IMAGES)
    return dict(REPLICATION_IMAGES)


@pytest.fixture
def compose_cluster(images: None, tmp_path: Path) -> Iterator[ComposeCluster]:
    """A running, initialised, unsealed three-node cluster behind HAProxy."""
    yield from _running_cluster("coffertest", tmp_path, seal="shamir")


@pytest.fixture(scope="session")
def hsm_images(images: None) -> None:
    """``coffer:latest-hsm`` (SoftHSM2 base), built once after the plain images; the
    second build-images.sh run reuses every cached layer but the HSM image's."""
    _build_images("--hsm")


@pytest.fixture
def hsm_compose_cluster(hsm_images: None, tmp_path: Path) -> Iterator[ComposeCluster]:
    """The HSM variant (compose.hsm.yaml): initialised with recovery keys, self-unsealed."""
    yield from _running_cluster("cofferhsm", tmp_path, seal="pkcs11")


def _running_cluster(prefix: str, tmp_path: Path, seal: str) -> Iterator[ComposeCluster]:
    """Up a fresh compose project, hand it out, and prove ``down`` left nothing behind."""
    project = f"{prefix}{uuid.uuid4().hex[:10]}"
    cluster = ComposeCluster(
        project=project,
        state_dir=tmp_path / "cluster",
        env={**free_port_env(), "COFFER_IMAGE": COFFER_IMAGE, "COFFER_LB_IMAGE": LB_IMAGE},
        seal=seal,
    )
    try:
        cluster.up(build=False)
        yield cluster
    finally:
        cluster.down()
        left = project_resources(project)
        assert not any(left.values()), f"compose project {project} left behind {left}"
