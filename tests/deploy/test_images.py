"""The images: non-root, health-checked, data in a volume; the base is reused."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.deploy.conftest import COFFER_IMAGE, LB_IMAGE

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(1500)]


def inspect(image: str) -> dict:
    out = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)[0]


def run(image: str, *args: str, entrypoint: str) -> str:
    return subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", entrypoint, image, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()


def test_coffer_image_runs_as_non_root_with_a_healthcheck_and_a_data_volume(images: None) -> None:
    config = inspect(COFFER_IMAGE)["Config"]
    assert config["User"] == "coffer"
    assert config["Healthcheck"]["Test"] == ["CMD", "/usr/local/bin/coffer-healthcheck"]
    assert "/var/lib/coffer" in config["Volumes"]
    assert config["Entrypoint"][:2] == ["/usr/bin/tini", "--"]
    uid = run(COFFER_IMAGE, "-u", entrypoint="id")
    assert uid != "0"
    # The data directory belongs to that user, so a fresh named volume does too.
    owner = run(COFFER_IMAGE, "-c", "%U %a", "/var/lib/coffer", entrypoint="stat")
    assert owner == "coffer 700"
    assert run(COFFER_IMAGE, "version", entrypoint="coffer").startswith("Coffer v")


def test_load_balancer_image_runs_as_non_root_with_a_healthcheck(images: None) -> None:
    config = inspect(LB_IMAGE)["Config"]
    assert config["User"] == "haproxy"
    assert config["Healthcheck"]["Test"][0] == "CMD"
    version = run(LB_IMAGE, "-v", entrypoint="haproxy")
    assert "HAProxy version 2.6" in version


def test_both_images_sit_on_the_local_debootstrap_base(images: None) -> None:
    base_layers = inspect("coffer-base:bookworm")["RootFS"]["Layers"]
    assert inspect(COFFER_IMAGE)["RootFS"]["Layers"][: len(base_layers)] == base_layers
    lb_base = inspect("coffer-haproxy-base:bookworm")["RootFS"]["Layers"]
    assert inspect(LB_IMAGE)["RootFS"]["Layers"][: len(lb_base)] == lb_base
