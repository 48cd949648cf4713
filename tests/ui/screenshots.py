"""Screenshots of every page for docs/ui.md: ``python -m tests.ui.screenshots``.

Starts a dev server (and a three-node cluster for the cluster page, a sealed node for
the unseal form), fills them with a little data, and saves 1280x800 PNGs (one at
375 px wide) into ``docs/ui/``. Not a test: run it when the pages change.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.ui.support import DESKTOP, PHONE, UiCluster, browser, dev_server

OUT = Path(__file__).resolve().parents[2] / "docs" / "ui"


def shot(page: Any, name: str) -> None:
    page.wait_for_timeout(300)  # let the last render settle before the picture
    page.screenshot(path=str(OUT / f"{name}.png"))
    print(f"docs/ui/{name}.png")


def sign_in(page: Any, base: str, token: str) -> None:
    page.goto(f"{base}/ui/")
    page.get_by_label("Token", exact=True).fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Secrets", exact=True).wait_for()


def visit(page: Any, base: str, route: str, heading: str) -> None:
    page.goto(f"{base}/ui/#/{route}")
    page.get_by_role("heading", name=heading, exact=True).wait_for()


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, browser() as chromium:
        page = chromium.new_page(viewport=DESKTOP)
        with dev_server(Path(tmp)) as dev:
            for password in ("hunter2", "s3"):
                body = {"data": {"username": "app", "password": password}}
                dev.call("POST", "/v1/secret/data/apps/web/db", body)
            dev.call("POST", "/v1/secret/data/apps/web/api-key", {"data": {"key": "k-123"}})
            dev.call("POST", "/v1/secret/data/apps/batch/creds", {"data": {"user": "b"}})
            dev.call("POST", "/v1/sys/mounts/legacy", {"type": "kv", "description": "KV v1"})
            dev.call("POST", "/v1/sys/auth/userpass", {"type": "userpass"})
            dev.call("POST", "/v1/sys/namespaces/team-a", {})
            dev.call("POST", "/v1/sys/namespaces/team-b", {})
            page.goto(f"{dev.base}/")
            page.get_by_role("heading", name="Sign in to Coffer").wait_for()
            page.get_by_label("Method").select_option("idp")
            shot(page, "sign-in")
            sign_in(page, dev.base, dev.root_token)
            shot(page, "secrets-engines")
            visit(page, dev.base, "secrets/secret/apps%2Fweb%2F", "secret/apps/web/")
            shot(page, "secrets-folder")
            visit(page, dev.base, "secrets/secret/apps%2Fweb%2Fdb", "apps/web/db")
            page.get_by_role("button", name="Reveal username").click()
            shot(page, "secret-view")
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            shot(page, "secret-versions")
            visit(page, dev.base, "secrets/secret/apps%2Fweb%2Fdb/edit", "Edit apps/web/db")
            shot(page, "secret-edit")
            visit(page, dev.base, "policies/+new", "Create policy")
            page.get_by_label("Name", exact=True).fill("ops")
            page.get_by_label("Policy (HCL or JSON)").fill(
                'path "secret/data/apps/*" {\n  capabilities = ["read", "list"\n}\n'
            )
            page.get_by_role("button", name="Save policy").click()
            page.get_by_role("alert").wait_for()
            page.evaluate("window.scrollTo(0, 0)")
            shot(page, "policy-error")
            visit(page, dev.base, "access", "Auth methods & secrets engines")
            shot(page, "auth-and-engines")
            visit(page, dev.base, "tokens", "Tokens")
            page.get_by_label("Policies").fill("default")
            page.get_by_role("button", name="Create token").click()
            page.get_by_text("Token created.").wait_for()
            shot(page, "tokens")
            dev.call("POST", "/v1/identity/entity", {"name": "alice", "policies": ["dev"]})
            dev.call("POST", "/v1/identity/entity", {"name": "bob", "policies": ["ops"]})
            alice = dev.call("GET", "/v1/identity/entity/name/alice").json["data"]["id"]
            dev.call(
                "POST",
                "/v1/identity/group",
                {"name": "engineering", "policies": ["eng"], "member_entity_ids": [alice]},
            )
            visit(page, dev.base, "identity", "Identity")
            shot(page, "identity")
            visit(page, dev.base, "namespaces", "Namespaces")
            shot(page, "namespaces")
            phone = chromium.new_page(viewport=PHONE)
            sign_in(phone, dev.base, dev.root_token)
            visit(phone, dev.base, "secrets/secret/apps%2Fweb%2Fdb", "apps/web/db")
            shot(phone, "phone-secret-view")
            phone.close()
        nodes = UiCluster(Path(tmp) / "cluster", 3)
        try:
            nodes.bootstrap()
            sign_in(page, nodes.nodes[0].api_addr, nodes.root_token)
            visit(page, nodes.nodes[0].api_addr, "cluster", "Cluster")
            page.get_by_role("region", name="Raft peers").wait_for()
            shot(page, "cluster")
        finally:
            nodes.close()
        sealed = UiCluster(Path(tmp) / "sealed", 1)
        try:
            node = sealed.nodes[0]
            node.start()
            sealed.init(node, shares=5, threshold=3)
            page.goto(f"{node.api_addr}/ui/")
            page.get_by_label("Unseal key share").fill(sealed.keys[0])
            page.get_by_role("button", name="Submit key share").click()
            page.get_by_text("Key shares entered: 1 of 3").wait_for()
            shot(page, "unseal")
        finally:
            sealed.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
