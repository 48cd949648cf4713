"""``?help=1`` / ``HELP`` and ``sys/internal/specs/openapi`` over HTTP, plus the
regex-to-template rendering and document building behind them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from openapi_spec_validator import validate

from node.framework import Field, FieldType, FrameworkBackend, Path
from node.framework.openapi import DocumentBuilder, render_pattern
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.version import VERSION
from tests.api.helpers import token_with

if TYPE_CHECKING:
    from tests.conftest import DevServer

ROOT = "<root>"
METHODS = ("get", "post", "put", "patch", "delete")


async def call(
    dev: DevServer,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = ROOT,
) -> tuple[int, Any]:
    headers = dict(dev.auth) if token == ROOT else {"X-Service-Token": token} if token else {}
    resp = await dev.client.request(method, f"/v1/{path}", json=body, headers=headers)
    text = await resp.text()
    return resp.status, (json.loads(text) if text else None)


async def restricted_token(dev: DevServer, policy: str) -> str:
    return await token_with(dev, limited=policy)


def operation_ids(doc: dict[str, Any]) -> list[str]:
    return [
        item[method]["operationId"]
        for item in doc["paths"].values()
        for method in METHODS
        if method in item
    ]


def methods(doc: dict[str, Any], url: str) -> set[str]:
    return {m for m in METHODS if m in doc["paths"][url]}


def checked(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` validates as OpenAPI 3 and has unique operation ids."""
    validate(doc)
    assert doc["openapi"] == "3.0.2"
    assert doc["info"]["title"] == "Coffer API"
    assert doc["info"]["version"] == VERSION
    ids = operation_ids(doc)
    assert ids and len(ids) == len(set(ids)), ids
    return doc


# -- ?help=1 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected", "words"),
    [
        ("sys/mounts", {"/", "/{path}", "/{path}/tune"}, ["System endpoints", "`sys/mounts`"]),
        (
            "secret/",
            {"/config", "/data/{path}", "/metadata/{path}", "/delete/{path}"},
            ["key-value (version 2)", "`secret/data/{path}`"],
        ),
        ("secret/data/foo", {"/"}, ["key-value (version 2)", "`secret/data/{path}`"]),
        ("auth/token/create", {"/", "/{role_name}"}, ["token store", "| `policies` |"]),
        ("sys/policies/acl/x", {"/"}, ["System endpoints", "| `policy` |"]),
    ],
)
async def test_help_documents_the_path_and_below_it(
    dev: DevServer, path: str, expected: set[str], words: list[str]
) -> None:
    status, body = await call(dev, "GET", f"{path}?help=1")
    assert status == 200, body
    assert set(body) == {"help", "see_also", "openapi"}
    assert body["see_also"] is None
    assert isinstance(body["help"], str)
    for word in words:
        assert word in body["help"], (word, body["help"])
    doc = checked(body["openapi"])
    paths = set(doc["paths"])
    assert expected <= paths, paths
    # Relative to the queried path: nothing repeats the mount or the queried segments.
    queried = path.rstrip("/")
    assert all(not p.lstrip("/").startswith(queried) for p in paths if queried), paths
    assert all(p.startswith("/") for p in paths)


async def test_help_at_a_concrete_path_has_its_operations(dev: DevServer) -> None:
    _, body = await call(dev, "GET", "secret/data/foo?help=1")
    doc = body["openapi"]
    assert set(doc["paths"]) == {"/"}
    item = doc["paths"]["/"]
    assert {"get", "post", "delete"} <= methods(doc, "/")
    assert item["x-vault-createSupported"] is True
    assert "parameters" not in item  # {path} was given by the query
    schema_ref = item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = doc["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]
    assert schema["properties"]["data"]["type"] == "object"


async def test_help_below_keeps_unfilled_parameters(dev: DevServer) -> None:
    _, body = await call(dev, "GET", "auth/token/create?help=1")
    doc = body["openapi"]
    assert methods(doc, "/") == {"post"}
    params = doc["paths"]["/{role_name}"]["parameters"]
    assert [(p["name"], p["in"], p["required"]) for p in params] == [("role_name", "path", True)]
    body_ref = doc["paths"]["/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    props = doc["components"]["schemas"][body_ref["$ref"].rsplit("/", 1)[1]]["properties"]
    assert props["policies"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Policies of the token.",
    }


async def test_help_for_list_only_path_is_get_with_required_list(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/policies/acl?help=1")
    assert status == 200, body
    doc = checked(body["openapi"])
    get = doc["paths"]["/"]["get"]
    [list_param] = [p for p in get["parameters"] if p["name"] == "list"]
    assert list_param["in"] == "query" and list_param["required"] is True
    assert list_param["schema"]["enum"] == ["true"]


@pytest.mark.parametrize("mount", ["sys/", "secret/", "cubbyhole/", "auth/token/"])
async def test_help_at_every_mount_root_validates(dev: DevServer, mount: str) -> None:
    status, body = await call(dev, "GET", f"{mount}?help=1")
    assert status == 200, body
    doc = checked(body["openapi"])
    assert len(doc["paths"]) >= 1
    assert not any(p.startswith("/" + mount) for p in doc["paths"])


@pytest.mark.parametrize("path", ["sys/mounts", "secret/data/foo", "auth/token/create"])
async def test_help_verb_equals_help_query(dev: DevServer, path: str) -> None:
    status, by_verb = await call(dev, "HELP", path)
    assert status == 200, by_verb
    _, by_query = await call(dev, "GET", f"{path}?help=1")
    assert by_verb == by_query
    checked(by_verb["openapi"])


@pytest.mark.parametrize(("method", "suffix"), [("GET", "?help=1"), ("HELP", "")])
@pytest.mark.parametrize("token", [None, "not-a-real-token"])
async def test_help_needs_a_valid_token(
    dev: DevServer, method: str, suffix: str, token: str | None
) -> None:
    status, body = await call(dev, method, f"sys/mounts{suffix}", token=token)
    assert status == 403, body
    assert body == {"errors": ["permission denied"]}


async def test_help_is_allowed_where_the_token_has_no_access(dev: DevServer) -> None:
    token = await restricted_token(dev, 'path "secret/data/allowed" { capabilities = ["read"] }')
    # The token really is restricted ...
    status, _ = await call(dev, "GET", "sys/mounts", token=token)
    assert status == 403
    status, _ = await call(dev, "GET", "secret/data/other", token=token)
    assert status == 403
    # ... yet help works everywhere, sudo paths included.
    for path in ("sys/mounts", "secret/data/other", "sys/seal", "auth/token/accessors"):
        status, body = await call(dev, "GET", f"{path}?help=1", token=token)
        assert status == 200, (path, body)
        checked(body["openapi"])
    status, body = await call(dev, "HELP", "sys/policies/acl/x", token=token)
    assert status == 200, body


@pytest.mark.parametrize("path", ["secret/nope", "sys/nope", "auth/token/nope/deeper"])
async def test_help_on_unknown_path_under_a_mount_is_404(dev: DevServer, path: str) -> None:
    status, body = await call(dev, "GET", f"{path}?help=1")
    assert status == 404, body
    assert body["errors"] and all(isinstance(e, str) for e in body["errors"])


async def test_help_on_a_path_deeper_than_its_template(dev: DevServer) -> None:
    """``data/a/b`` is served by ``data/{path}``: documented at ``/``."""
    status, body = await call(dev, "GET", "secret/data/a/b/c?help=1")
    assert status == 200, body
    doc = checked(body["openapi"])
    assert set(doc["paths"]) == {"/"}
    assert "post" in doc["paths"]["/"]


# -- sys/internal/specs/openapi --------------------------------------------------------


async def test_openapi_document_for_root(dev: DevServer) -> None:
    status, doc = await call(dev, "GET", "sys/internal/specs/openapi")
    assert status == 200, doc
    checked(doc)
    assert doc["info"]["license"] == {"name": "Mozilla Public License 2.0"}
    paths = doc["paths"]
    assert {"get", "post", "delete"} <= methods(doc, "/secret/data/{path}")
    assert methods(doc, "/sys/mounts") == {"get"}
    assert methods(doc, "/auth/token/create") == {"post"}
    assert "post" in paths["/sys/mounts/{path}"] and "delete" in paths["/sys/mounts/{path}"]
    assert paths["/sys/seal"]["x-vault-sudo"] is True
    assert paths["/sys/internal/specs/openapi"]["x-vault-unauthenticated"] is True
    assert paths["/sys/generate-root/attempt"]["x-vault-unauthenticated"] is True
    assert "x-vault-unauthenticated" not in paths["/sys/mounts"]
    assert paths["/secret/data/{path}"]["x-vault-createSupported"] is True
    assert "/sys/rotate" in paths and "/sys/rotate/keyring" in paths
    params = paths["/secret/data/{path}"]["parameters"]
    assert [p["name"] for p in params] == ["path"]
    tags = {t["name"] for t in doc["tags"]}
    assert {"system", "token", "kv", "cubbyhole"} <= tags
    assert paths["/auth/token/create"]["post"]["tags"] == ["token"]
    # Every schema a request body refers to exists.
    for item in paths.values():
        for method in METHODS:
            ref = (
                item.get(method, {})
                .get("requestBody", {})
                .get("content", {})
                .get("application/json", {})
                .get("schema", {})
                .get("$ref")
            )
            if ref:
                assert ref.rsplit("/", 1)[1] in doc["components"]["schemas"]


async def test_openapi_document_is_bare_json_not_an_envelope(dev: DevServer) -> None:
    status, doc = await call(dev, "GET", "sys/internal/specs/openapi")
    assert status == 200
    assert "data" not in doc and "request_id" not in doc
    assert "/sys/mounts" in doc["paths"]  # root sees everything


async def test_openapi_generic_mount_paths(dev: DevServer) -> None:
    status, doc = await call(dev, "GET", "sys/internal/specs/openapi?generic_mount_paths=true")
    assert status == 200, doc
    checked(doc)
    paths = doc["paths"]
    assert "/{kv_mount_path}/data/{path}" in paths
    assert "/secret/data/{path}" not in paths
    assert "/auth/{token_mount_path}/create" in paths
    assert "/auth/token/create" not in paths
    assert "/sys/mounts" in paths  # sys keeps its path
    [mount_param] = [
        p for p in paths["/{kv_mount_path}/data/{path}"]["parameters"] if p["name"] != "path"
    ]
    assert mount_param["name"] == "kv_mount_path"
    assert mount_param["in"] == "path" and mount_param["required"] is True
    assert mount_param["schema"]["default"] == "secret"

    status, plain = await call(dev, "GET", "sys/internal/specs/openapi?generic_mount_paths=false")
    assert status == 200
    assert "/secret/data/{path}" in plain["paths"]


async def test_openapi_document_follows_the_mount_table(dev: DevServer) -> None:
    status, body = await call(dev, "POST", "sys/mounts/team-kv", {"type": "kv"})
    assert status == 204, body
    _, doc = await call(dev, "GET", "sys/internal/specs/openapi")
    checked(doc)
    assert "/team-kv/{path}" in doc["paths"]
    assert {"get", "post", "delete"} <= methods(doc, "/team-kv/{path}")
    _, help_body = await call(dev, "GET", "team-kv/?help=1")
    checked(help_body["openapi"])
    assert "/{path}" in help_body["openapi"]["paths"]


async def test_openapi_document_filtered_by_the_token_acl(dev: DevServer) -> None:
    token = await restricted_token(
        dev,
        'path "secret/data/app/*" { capabilities = ["read"] }\n'
        'path "sys/policies/acl/limited" { capabilities = ["read"] }',
    )
    status, doc = await call(dev, "GET", "sys/internal/specs/openapi", token=token)
    assert status == 200, doc
    checked(doc)
    paths = set(doc["paths"])
    assert "/secret/data/{path}" in paths
    assert "/sys/policies/acl/{name}" in paths
    assert "/sys/mounts" not in paths
    assert "/secret/config" not in paths
    assert "/auth/token/create-orphan" not in paths
    # Unauthenticated rows are always shown.
    assert "/sys/generate-root/attempt" in paths
    assert "/sys/internal/specs/openapi" in paths
    # The default policy (added to every token) grants lookup-self.
    assert "/auth/token/lookup-self" in paths

    _, full = await call(dev, "GET", "sys/internal/specs/openapi")
    assert paths < set(full["paths"])


async def test_openapi_document_without_a_token_names_no_mount(dev: DevServer) -> None:
    """An anonymous caller learns no mount path (issue 14, item 7): only the public
    rows of ``sys/`` and the mounts listed with ``listing_visibility = "unauth"``."""
    for body in (
        {"type": "kv"},
        {"type": "kv", "config": {"listing_visibility": "hidden"}},
    ):
        status, reply = await call(dev, "POST", f"sys/mounts/team-{len(body)}-kv", body)
        assert status == 204, reply
    for token in (None, "not-a-token"):
        status, doc = await call(dev, "GET", "sys/internal/specs/openapi", token=token)
        assert status == 200, doc
        checked(doc)
        paths = set(doc["paths"])
        assert {"/sys/internal/specs/openapi", "/sys/generate-root/attempt"} <= paths
        assert "/sys/mounts" not in paths and "/sys/policies/acl" not in paths
        leaked = [p for p in paths if "secret" in p or "team" in p or "cubbyhole" in p]
        assert leaked == [], leaked
        assert not any(p.startswith("/auth/token/") for p in paths)
        generic = await call(
            dev, "GET", "sys/internal/specs/openapi?generic_mount_paths=true", token=token
        )
        assert not any("kv_mount_path" in p for p in generic[1]["paths"])


# -- rendering and building, without HTTP -------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "templates"),
    [
        (r"data/(?P<path>.+)", ["data/{path}"]),
        (r"metadata/?(?P<path>.*)", ["metadata/{path}"]),
        ("policy/?", ["policy"]),
        ("rotate(/keyring)?", ["rotate", "rotate/keyring"]),
        (r"mounts/(?P<path>.+?)/tune/?", ["mounts/{path}/tune"]),
        (r"create/(?P<role_name>[^/]+)", ["create/{role_name}"]),
        (r"^keys/(?:rotate|config)$", ["keys/rotate", "keys/config"]),
        (r"a\-b/(?P<name>\w(([\w-.@]+)?\w)?)", ["a-b/{name}"]),
        (r"x$|y/?$", ["x", "y"]),
    ],
)
def test_render_pattern(pattern: str, templates: list[str]) -> None:
    rendered = render_pattern(pattern)
    assert [t.text for t in rendered] == templates
    assert all(not t.synthetic for t in rendered)


@pytest.mark.parametrize(
    ("pattern", "template", "regex"),
    [
        ("raw/.*", "raw/{param}", ".*"),
        (r"v/\d+/x", "v/{param}/x", r"\d+"),
        ("a/[)|]+/b", "a/{param}/b", "[)|]+"),
        ("(a|b)(c|d)(e|f)(g|h)(i|j)", "{param}", "(a|b)(c|d)(e|f)(g|h)(i|j)"),
    ],
)
def test_render_unrenderable_pattern_as_a_parameter(
    pattern: str, template: str, regex: str
) -> None:
    [rendered] = render_pattern(pattern)
    assert rendered.text == template
    assert rendered.synthetic == {"param": regex}


async def _noop(request: Request, data: Any) -> Response | None:
    return None


class _Odd(FrameworkBackend):
    type = "odd"
    help_text = "A backend with awkward patterns."

    def __init__(self) -> None:
        super().__init__(
            [
                Path(
                    r"items/(?P<name>\w+)/(a|b)",
                    {Operation.READ: _noop, Operation.LIST: _noop, Operation.PATCH: _noop},
                    {
                        "ttl": Field(FieldType.DURATION, "A TTL | with a pipe.", 0),
                        "tags": Field(FieldType.COMMA_STRING_LIST, "Tags.", ""),
                        "name": Field(FieldType.STRING, "The item."),
                    },
                    summary="Items.",
                ),
                Path(r"raw/.*", {Operation.DELETE: _noop}, summary="Raw."),
                Path("only-query", {Operation.READ: _noop}, {"n": Field(FieldType.INT, "N.")}),
            ]
        )


def test_awkward_backend_still_gives_a_valid_document() -> None:
    backend = _Odd()
    request = Request(operation=Operation.HELP, path="", mount_point="odd/")
    raw = backend.help(request).raw
    doc = checked(raw["openapi"])
    assert set(doc["paths"]) == {
        "/items/{name}/a",
        "/items/{name}/b",
        "/raw/{param}",
        "/only-query",
    }
    patch = doc["paths"]["/items/{name}/a"]["patch"]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    get = doc["paths"]["/items/{name}/a"]["get"]
    assert [p["name"] for p in get["parameters"]] == ["list"]
    assert get["parameters"][0]["required"] is False  # get also reads
    [query] = doc["paths"]["/only-query"]["get"]["parameters"]
    assert (query["name"], query["in"], query["schema"]["type"]) == ("n", "query", "integer")
    assert (
        "Matches the regular expression"
        in doc["paths"]["/raw/{param}"]["parameters"][0]["description"]
    )
    assert r"A TTL \| with a pipe." in raw["help"]


def test_operation_ids_stay_unique_when_names_collide() -> None:
    builder = DocumentBuilder("9.9.9")
    entry = Path("a", {Operation.READ: _noop})
    builder.add(entry, "/one", name="a", tag="t")
    builder.add(entry, "/two", name="a", tag="t")
    doc = builder.document()
    validate(doc)
    assert sorted(operation_ids(doc)) == ["read-a", "read-a-2"]
    assert doc["info"]["version"] == "9.9.9"


async def test_every_operation_declares_its_error_responses(dev: DevServer) -> None:
    """Issue 14, item 6: so schemathesis' conformance checks test something."""
    _, doc = await call(dev, "GET", "sys/internal/specs/openapi")
    checked(doc)
    schemas = doc["components"]["schemas"]
    assert schemas["ErrorResponse"]["required"] == ["errors"]
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for url, item in doc["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            responses = item[method]["responses"]
            for code in ("400", "403", "404", "405"):
                assert responses[code]["content"]["application/json"]["schema"] == error_ref
            if method in ("post", "patch", "delete"):
                assert "409" in responses, (method, url)
            if method == "patch":
                assert "415" in responses, url
    listed = doc["paths"]["/sys/policies/acl"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["schema"]["$ref"].endswith("/ListResponse")
    read = doc["paths"]["/sys/mounts"]["get"]["responses"]["200"]
    assert read["content"]["application/json"]["schema"]["$ref"].endswith("/Envelope")
    fields = doc["components"]["schemas"]["WriteAuthTokenCreateRequest"]["properties"]
    assert fields["num_uses"]["maximum"] == 2**63 - 1
