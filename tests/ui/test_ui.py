"""The web UI in a real browser (Debian's chromium through Playwright) against real servers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.ui.support import PHONE, DevServer, UiCluster, call, idp_emulator

pytestmark = pytest.mark.slow


def sign_in_with_token(page: Any, base: str, token: str) -> None:
    page.goto(f"{base}/")
    page.get_by_label("Token", exact=True).fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Secrets", exact=True).wait_for()


def alert(page: Any) -> str:
    box = page.get_by_role("alert").first
    box.wait_for()
    return str(box.inner_text())


def test_sign_in_with_a_token_keeps_it_in_session_storage_only(page: Any, dev: DevServer) -> None:
    page.goto(f"{dev.base}/")
    assert page.url.endswith("/ui/")
    # A wrong token is refused in words.
    page.get_by_label("Token", exact=True).fill("not-a-token")
    page.get_by_label("Token", exact=True).press("Enter")  # keyboard only
    assert "permission denied" in alert(page)
    page.get_by_label("Token", exact=True).fill(dev.root_token)
    page.get_by_label("Token", exact=True).press("Enter")
    page.get_by_role("heading", name="Secrets", exact=True).wait_for()
    assert page.get_by_role("link", name="secret/").is_visible()
    assert dev.root_token in page.evaluate("sessionStorage.getItem('coffer.session')")
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("document.cookie") == ""
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in to Coffer").wait_for()
    assert page.evaluate("sessionStorage.getItem('coffer.session')") is None
    assert not page.problems


def test_sign_in_with_userpass(page: Any, dev: DevServer) -> None:
    assert dev.call("POST", "/v1/sys/auth/userpass", {"type": "userpass"}).status == 204
    reply = dev.call(
        "POST", "/v1/auth/userpass/users/alice", {"password": "s3cret-pw", "policies": "default"}
    )
    assert reply.status in (200, 204), reply
    page.goto(f"{dev.base}/ui/")
    page.get_by_label("Method").select_option("userpass")
    assert not page.get_by_label("TOTP passcode").is_visible()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    assert re.search(r"invalid|denied", alert(page), re.I)
    page.get_by_label("Password").fill("s3cret-pw")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Secrets", exact=True).wait_for()
    assert "alice" in page.locator(".user").inner_text()
    # A default-policy token may not list policies: the page says so in words.
    page.get_by_role("link", name="Policies").click()
    assert "permission denied" in alert(page)
    assert not page.problems


def test_sign_in_with_the_idp_method_and_a_totp_passcode(page: Any, dev: DevServer) -> None:
    with idp_emulator("api-token-1") as (emulator, origin):
        emulator.add_user("bob", "correct horse", groups=["ops"], totp_passcode="123456")
        assert dev.call("POST", "/v1/sys/auth/idp", {"type": "idp"}).status == 204
        config = {"org_name": "example", "base_url": origin, "api_token": "api-token-1"}
        assert dev.call("POST", "/v1/auth/idp/config", config).status in (200, 204)
        page.goto(f"{dev.base}/ui/")
        page.get_by_label("Method").select_option("idp")
        assert page.get_by_label("Mount path").input_value() == "idp"
        page.get_by_label("Username").fill("bob")
        page.get_by_label("Password").fill("correct horse")
        page.get_by_label("TOTP passcode").fill("000000")
        page.get_by_role("button", name="Sign in").click()
        assert alert(page)  # the provider's refusal, in words
        page.get_by_label("TOTP passcode").fill("123456")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", name="Secrets", exact=True).wait_for()
        assert "bob" in page.locator(".user").inner_text()
        assert not page.problems


def test_kv_v2_round_trip_with_a_version_deleted_and_undeleted(page: Any, dev: DevServer) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="secret/").click()
    page.get_by_role("link", name="Create secret").click()
    page.get_by_label("Path").fill("app/db")
    page.get_by_label("Key", exact=True).nth(0).fill("user")
    page.get_by_label("Value", exact=True).nth(0).fill("admin")
    page.get_by_role("button", name="Add row").click()
    page.get_by_label("Key", exact=True).nth(1).fill("password")
    page.get_by_label("Value", exact=True).nth(1).fill("hunter2")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="app/db").wait_for()
    # Masked until revealed.
    assert "hunter2" not in page.locator("main").inner_text()
    page.get_by_role("button", name="Reveal password").click()
    assert "hunter2" in page.locator("main").inner_text()
    stored = dev.call("GET", "/v1/secret/data/app/db").json["data"]
    assert stored["data"] == {"user": "admin", "password": "hunter2"}

    # Version 2 through the JSON view.
    page.get_by_role("link", name="Edit (new version)").click()
    page.get_by_role("heading", name="Edit app/db").wait_for()
    page.get_by_role("button", name="JSON view").click()
    page.get_by_label("Secret data as JSON").fill('{"user": "admin", "password": "correct horse"}')
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Version 2, created").wait_for()
    assert dev.call("GET", "/v1/secret/data/app/db").json["data"]["metadata"]["version"] == 2

    page.get_by_role("button", name="Delete version 2").click()  # reversible: no confirmation
    page.get_by_role("button", name="Undelete version 2").wait_for()
    meta = dev.call("GET", "/v1/secret/metadata/app/db").json["data"]
    assert meta["versions"]["2"]["deletion_time"]
    assert "Version 2 is deleted" in page.locator("main").inner_text()

    page.get_by_role("button", name="Undelete version 2").click()
    page.get_by_role("button", name="Delete version 2").wait_for()
    data = dev.call("GET", "/v1/secret/data/app/db").json["data"]["data"]
    assert data == {"user": "admin", "password": "correct horse"}

    # Version 1 is still readable by its link.
    page.get_by_role("link", name="View version 1").click()
    page.get_by_text("Version 1, created").wait_for()
    page.get_by_role("button", name="Reveal password").click()
    assert "hunter2" in page.locator("main").inner_text()
    assert not page.problems


def test_kv_v1_create_and_delete(page: Any, dev: DevServer) -> None:
    assert dev.call("POST", "/v1/sys/mounts/kv1", {"type": "kv"}).status == 204
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="kv1/").click()
    page.get_by_role("link", name="Create secret").click()
    page.get_by_label("Path").fill("plain")
    page.get_by_label("Key", exact=True).nth(0).fill("k")
    page.get_by_label("Value", exact=True).nth(0).fill("v")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="plain").wait_for()
    assert dev.call("GET", "/v1/kv1/plain").json["data"] == {"k": "v"}
    page.get_by_role("button", name="Delete", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    page.get_by_text("Nothing here yet.").wait_for()
    assert dev.call("GET", "/v1/kv1/plain").status == 404
    assert not page.problems


def test_policy_edit_shows_the_syntax_error_at_its_line(page: Any, dev: DevServer) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="Policies").click()
    page.get_by_role("link", name="Create policy").click()
    page.get_by_label("Name", exact=True).fill("ops")
    broken = 'path "secret/*" {\n  capabilities = ["read"\n}\n'
    page.get_by_label("Policy (HCL or JSON)").fill(broken)
    page.get_by_role("button", name="Save policy").click()
    message = alert(page)
    assert "The policy was not saved" in message and "line 3" in message
    assert page.get_by_text("Error at line 3:").is_visible()
    assert page.locator(".excerpt li.bad code").inner_text() == "}"
    assert page.get_by_label("Policy (HCL or JSON)").get_attribute("aria-invalid") == "true"
    assert dev.call("GET", "/v1/sys/policies/acl/ops").status == 404

    # A semantic error names the path: shown at the line that declares it.
    wrong = (
        'path "secret/*" {\n  capabilities = ["read"]\n}\n\n'
        'path "sys/*" {\n  capabilities = ["jump"]\n}\n'
    )
    page.get_by_label("Policy (HCL or JSON)").fill(wrong)
    page.get_by_role("button", name="Save policy").click()
    page.get_by_text("Error at line 5:").wait_for()
    assert 'invalid capability "jump"' in alert(page)
    assert page.locator(".excerpt li.bad code").inner_text() == 'path "sys/*" {'

    fixed = 'path "secret/*" {\n  capabilities = ["read"]\n}\n'
    page.get_by_label("Policy (HCL or JSON)").fill(fixed)
    page.get_by_role("button", name="Save policy").click()
    page.get_by_role("heading", name="Policy ops").wait_for()
    assert dev.call("GET", "/v1/sys/policies/acl/ops").json["data"]["policy"] == fixed
    assert not page.problems


def test_tokens_create_lookup_revoke(page: Any, dev: DevServer) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="Tokens").click()
    page.get_by_label("Policies").fill("default")
    page.get_by_label("Display name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    page.get_by_text("Token created.").wait_for()
    page.get_by_role("button", name="Reveal new token").click()
    token = page.locator(".alert.ok .secret code").first.inner_text()
    assert dev.call("GET", "/v1/auth/token/lookup-self", token=token).status == 200
    page.get_by_label("Token or accessor").first.fill(token)
    page.get_by_role("button", name="Look up", exact=True).click()
    page.get_by_text("token-ci").wait_for()
    page.get_by_label("Token or accessor").nth(1).fill(token)
    page.get_by_role("button", name="Revoke").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    page.get_by_text("Token revoked.").wait_for()
    assert dev.call("GET", "/v1/auth/token/lookup-self", token=token).status == 403
    assert not page.problems


def test_usable_at_375_px(page: Any, dev: DevServer) -> None:
    dev.call(
        "POST", "/v1/secret/data/a-rather-long-folder-name/and-a-long-secret", {"data": {"k": "v"}}
    )
    page.set_viewport_size(PHONE)
    sign_in_with_token(page, dev.base, dev.root_token)
    routes = {
        "secrets/secret/a-rather-long-folder-name%2Fand-a-long-secret": (
            "a-rather-long-folder-name/and-a-long-secret"
        ),
        "secrets/secret/a-rather-long-folder-name%2Fand-a-long-secret/edit": (
            "Edit a-rather-long-folder-name/and-a-long-secret"
        ),
        "policies/default": "Policy default",
        "access": "Auth methods & secrets engines",
        "tokens": "Tokens",
        "identity": "Identity",
        "namespaces": "Namespaces",
        "cluster": "Cluster",
        "status": "Seal status",
    }
    for route, heading in routes.items():
        page.goto(f"{dev.base}/ui/#/{route}")
        page.get_by_role("heading", name=heading, exact=True).wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (route, width)
    assert not page.problems


def test_unseal_a_sealed_server_key_by_key(page: Any, tmp_path: Path) -> None:
    nodes = UiCluster(tmp_path, 1)
    try:
        node = nodes.nodes[0]
        node.start()
        page.goto(f"{node.api_addr}/ui/")
        page.get_by_role("heading", name="Coffer is not initialised").wait_for()
        nodes.init(node, shares=3, threshold=2)
        page.reload()
        page.get_by_role("heading", name="Coffer is sealed").wait_for()
        assert page.get_by_text("Key shares entered: 0 of 2").is_visible()
        page.get_by_label("Unseal key share").fill("not-a-key")
        page.get_by_role("button", name="Submit key share").click()
        assert alert(page)  # the server's reason, in words
        page.get_by_label("Unseal key share").fill(nodes.keys[0])
        page.get_by_role("button", name="Submit key share").click()
        page.get_by_text("Key shares entered: 1 of 2").wait_for()
        status = page.get_by_role("region", name="Seal status").inner_text()
        assert "Unseal progress\t1 of 2" in status  # the table follows the form
        page.get_by_label("Unseal key share").fill(nodes.keys[1])
        page.get_by_role("button", name="Submit key share").click()
        page.get_by_role("heading", name="Sign in to Coffer").wait_for()
        assert call(node.api_addr, "GET", "/v1/sys/seal-status").json["sealed"] is False
        assert not page.problems
    finally:
        nodes.close()


def test_cluster_page_shows_three_nodes_and_the_leader(page: Any, tmp_path: Path) -> None:
    nodes = UiCluster(tmp_path, 3)
    try:
        nodes.bootstrap()
        active = nodes.active()
        standby = next(n for n in nodes.nodes if n is not active)
        # Through a standby: the page's API calls are forwarded like any client's.
        sign_in_with_token(page, standby.api_addr, nodes.root_token)
        page.get_by_role("link", name="Cluster").click()
        peers = page.get_by_role("region", name="Raft peers")
        peers.wait_for()
        rows = peers.locator("tbody tr")
        assert rows.count() == 3
        text = peers.inner_text()
        for node in nodes.nodes:
            assert node.name in text
        assert text.count("leader") == 1
        assert f"{active.name}" in rows.filter(has_text="leader").inner_text()
        leader = page.get_by_role("region", name="Leader").inner_text()
        assert "HA enabled\tyes" in leader
        assert active.api_addr in leader
        assert not page.problems
    finally:
        nodes.close()


def test_wrap_a_secret_and_unwrap_it_once(page: Any, dev: DevServer) -> None:
    dev.call("POST", "/v1/secret/data/handover", {"data": {"api-key": "k-42"}})
    sign_in_with_token(page, dev.base, dev.root_token)
    page.goto(f"{dev.base}/ui/#/secrets/secret/handover")
    page.get_by_role("heading", name="handover").wait_for()
    page.get_by_label("Wrapping TTL").fill("2m")
    page.get_by_role("button", name="Wrap", exact=True).click()
    page.get_by_role("button", name="Reveal wrapping token").click()
    wrapping = page.locator(".alert.ok .secret code").first.inner_text()
    assert wrapping and "•" not in wrapping
    page.get_by_role("link", name="Tokens").click()
    page.get_by_role("heading", name="Tokens").wait_for()
    page.get_by_label("Wrapping token", exact=True).fill(wrapping)
    page.get_by_role("button", name="Unwrap").click()
    page.get_by_text("Unwrapped.").wait_for()
    page.get_by_role("button", name="Reveal api-key").click()
    assert "k-42" in page.locator("main").inner_text()
    # Single use: a second unwrap is refused, in words.
    page.get_by_label("Wrapping token", exact=True).fill(wrapping)
    page.get_by_role("button", name="Unwrap").click()
    assert alert(page)
    assert not page.problems


def test_identity_entities_and_groups(page: Any, dev: DevServer) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="Identity").click()
    page.get_by_role("heading", name="Identity").wait_for()
    page.locator("#entity-name").fill("carol")
    page.locator("#entity-policies").fill("default, dev")
    page.get_by_role("button", name="Create entity").click()
    page.get_by_role("button", name="Delete entity carol").wait_for()
    page.locator("#group-name").fill("devs")
    page.locator("#group-members").fill("nobody")
    page.get_by_role("button", name="Create group").click()
    assert "no entity named nobody" in alert(page)
    page.locator("#group-members").fill("carol")
    page.get_by_role("button", name="Create group").click()
    page.get_by_role("button", name="Delete group devs").wait_for()
    group = dev.call("GET", "/v1/identity/group/name/devs").json["data"]
    entity = dev.call("GET", "/v1/identity/entity/name/carol").json["data"]
    assert group["member_entity_ids"] == [entity["id"]]
    assert sorted(entity["policies"]) == ["default", "dev"]
    assert not page.problems


def test_a_revoked_session_says_so(page: Any, dev: DevServer) -> None:
    token = dev.call("POST", "/v1/auth/token/create", {"policies": ["default"]}).json["auth"]
    sign_in_with_token(page, dev.base, token["client_token"])
    assert dev.call("POST", "/v1/auth/token/revoke", {"token": token["client_token"]}).status == 204
    page.get_by_role("link", name="Policies").click()
    page.get_by_role("heading", name="Your session has ended").wait_for()
    assert page.evaluate("sessionStorage.getItem('coffer.session')") is None
    page.get_by_role("link", name="Sign in again").click()
    page.get_by_role("heading", name="Sign in to Coffer").wait_for()
    assert not page.problems


def test_namespace_switch_and_an_engine_enabled_tuned_disabled_there(
    page: Any, dev: DevServer
) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.get_by_role("link", name="Namespaces").click()
    page.get_by_role("heading", name="Namespaces", exact=True).wait_for()
    page.get_by_label("Name", exact=True).fill("team-a")
    page.get_by_role("button", name="Create namespace").click()
    page.get_by_role("button", name="Switch to team-a").click()
    page.get_by_role("heading", name="Secrets", exact=True).wait_for()
    assert page.get_by_label("Namespace").input_value() == "team-a"

    page.get_by_role("link", name="Auth & engines").click()
    page.get_by_role("heading", name="Auth methods & secrets engines").wait_for()
    page.get_by_text("Enable a new secrets engine").click()
    page.locator("#sys-mounts-type").fill("kv-v2")
    page.locator("#sys-mounts-path").fill("team-kv")
    page.locator("#sys-mounts-type").press("Enter")
    page.get_by_role("button", name="Tune team-kv/").click()
    page.get_by_label("Default lease TTL").fill("1h")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_role("button", name="Tune team-kv/").wait_for()
    ns = {"X-Service-Namespace": "team-a"}
    mounts = _ns_call(dev, "GET", "/v1/sys/mounts", ns).json["data"]
    assert mounts["team-kv/"]["options"] == {"version": "2"}
    assert mounts["team-kv/"]["config"]["default_lease_ttl"] == 3600
    assert "team-kv/" not in dev.call("GET", "/v1/sys/mounts").json["data"]  # not in root
    page.get_by_role("button", name="Disable team-kv/").click()
    page.get_by_role("dialog").get_by_role("button", name="Disable").click()
    page.get_by_role("button", name="Tune team-kv/").wait_for(state="detached")
    assert "team-kv/" not in _ns_call(dev, "GET", "/v1/sys/mounts", ns).json["data"]
    assert not page.problems


def _ns_call(dev: DevServer, method: str, path: str, headers: dict[str, str]) -> Any:
    return dev.call(method, path, headers=headers)


_UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter((el) => !el.closest('[hidden]') && el.offsetParent !== null)
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
    && !(el.tagName === 'BUTTON' && el.textContent.trim()))
  .map((el) => el.outerHTML.slice(0, 120))"""


def test_every_control_on_every_page_has_a_name(page: Any, dev: DevServer) -> None:
    dev.call("POST", "/v1/secret/data/x", {"data": {"k": "v"}})
    sign_in_with_token(page, dev.base, dev.root_token)
    routes = {
        "secrets": "Secrets",
        "secrets/secret/": "secret",
        "secrets/secret/x": "x",
        "secrets/secret/x/edit": "Edit x",
        "policies": "Policies",
        "policies/default": "Policy default",
        "access": "Auth methods & secrets engines",
        "tokens": "Tokens",
        "identity": "Identity",
        "namespaces": "Namespaces",
        "cluster": "Cluster",
        "status": "Seal status",
    }
    for route, heading in routes.items():
        page.goto(f"{dev.base}/ui/#/{route}")
        page.get_by_role("heading", name=heading, exact=True).wait_for()
        assert page.evaluate(_UNLABELLED) == [], route
    # Keyboard: the first Tab reaches "Skip to content", which moves focus to the page.
    page.reload()
    page.get_by_role("heading", name="Seal status", exact=True).wait_for()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in to Coffer").wait_for()
    assert page.evaluate(_UNLABELLED) == []
    # The check itself can fail: an unlabelled field is found.
    page.evaluate("document.querySelector('main').append(document.createElement('input'))")
    assert len(page.evaluate(_UNLABELLED)) == 1
    assert not page.problems


def test_values_that_are_not_text_are_edited_as_json_and_keep_their_types(
    page: Any, dev: DevServer
) -> None:
    typed = {"port": 5432, "hosts": ["a", "b"], "tls": True}
    dev.call("POST", "/v1/secret/data/typed", {"data": typed})
    sign_in_with_token(page, dev.base, dev.root_token)
    page.goto(f"{dev.base}/ui/#/secrets/secret/typed/edit")
    page.get_by_role("heading", name="Edit typed").wait_for()
    assert page.get_by_role("button", name="JSON view").get_attribute("aria-pressed") == "true"
    page.get_by_role("button", name="JSON view").click()  # to rows: refused, in words
    assert "only be edited in the JSON view" in alert(page)
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Version 2, created").wait_for()
    assert dev.call("GET", "/v1/secret/data/typed").json["data"]["data"] == typed
    assert not page.problems


def test_cubbyhole_is_browsable_like_kv_v1(page: Any, dev: DevServer) -> None:
    sign_in_with_token(page, dev.base, dev.root_token)
    page.goto(f"{dev.base}/ui/#/secrets/cubbyhole/")
    page.get_by_role("heading", name="cubbyhole").wait_for()
    page.get_by_role("link", name="Create secret").click()
    page.get_by_label("Path").fill("note")
    page.get_by_label("Key", exact=True).fill("text")
    page.get_by_label("Value", exact=True).fill("mine only")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("heading", name="note").wait_for()
    assert dev.call("GET", "/v1/cubbyhole/note").json["data"] == {"text": "mine only"}
    assert not page.problems


def test_copy_puts_the_value_on_the_clipboard_without_revealing_it(
    page: Any, dev: DevServer
) -> None:
    dev.call("POST", "/v1/secret/data/clip", {"data": {"pin": "8264"}})
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=dev.base)
    sign_in_with_token(page, dev.base, dev.root_token)
    page.goto(f"{dev.base}/ui/#/secrets/secret/clip")
    page.get_by_role("heading", name="clip").wait_for()
    page.get_by_role("button", name="Copy pin").click()
    # A locator assertion, not wait_for_function: the page's CSP forbids eval.
    from playwright.sync_api import expect

    expect(page.locator("#live")).to_have_text("pin copied")
    assert page.evaluate("navigator.clipboard.readText()") == "8264"
    assert "8264" not in page.locator("main").inner_text()
    assert not page.problems
