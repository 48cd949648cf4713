"""schemathesis against the OpenAPI document of a real dev server (issue 14, item 6).

Every operation the document lists is called with generated inputs (valid and
invalid ones) three times: as root, with no token, and with a token holding only
the ``default`` policy. No answer may be a 5xx; every
4xx must carry a JSON ``errors`` array; status codes, content types and bodies
must match what the document declares. The operations that would end the run
(sealing the server, revoking the fuzzer's own token, restoring a snapshot,
joining a cluster) are left out here and tested with plain requests below.

Bounded for ``make test`` on two cores: a few examples per operation, derandomized
(the same inputs every run, so a failure reproduces), no example database. The
generation loop is written out (not ``schemathesis.pytest``, whose fixture loader
does not work with pytest 9).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from harness.server import ServerProcess
from harness.server import dev_server as module_dev_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: Random, so the fuzzer cannot guess it (and revoke it through ``auth/token/revoke``).
ROOT = "hvs." + secrets.token_hex(12)
EXAMPLES = int(os.environ.get("COFFER_FUZZ_EXAMPLES", "20"))

#: (method, path) of the operations that would stop the run; each has a plain test below.
RUN_ENDERS = {
    ("POST", "/sys/seal"),
    ("POST", "/auth/token/revoke-self"),
    ("POST", "/sys/storage/raft/snapshot"),
    ("POST", "/sys/storage/raft/snapshot-force"),
    ("POST", "/sys/storage/raft/remove-peer"),
    ("POST", "/sys/step-down"),
    ("POST", "/sys/leases/revoke-prefix/{prefix}"),
    ("POST", "/sys/leases/revoke-force/{prefix}"),
    # An audit device with generated options records nothing, and then every request is
    # refused (fail closed): tested in tests/integration/test_audit.py.
    ("POST", "/sys/audit/{path}"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with module_dev_server(tmp_path_factory.mktemp("openapi-fuzz"), ROOT) as process:
        yield process


def fetch(server: ServerProcess, path: str, token: str | None = ROOT) -> Any:
    reply = server.request("GET", f"/v1/{path}", token=token, timeout=30)
    assert reply.status == 200, reply
    return reply.json


@pytest.fixture(scope="module")
def document(server: ServerProcess) -> dict[str, Any]:
    doc: dict[str, Any] = fetch(server, "sys/internal/specs/openapi")
    doc["servers"] = [{"url": f"{server.base_url}/v1"}]
    return doc


@pytest.fixture(scope="module")
def api_schema(document: dict[str, Any]) -> Any:
    schema = schemathesis.openapi.from_dict(document)
    schema.config.update(base_url=document["servers"][0]["url"])
    for method, path in RUN_ENDERS:
        schema = schema.exclude(method=method, path=path)
    return schema


def errors_array(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx is ``{"errors": [str, ...]}``."""
    if 400 <= response.status_code < 500:
        body = json.loads(response.content)
        assert isinstance(body, dict) and isinstance(body.get("errors"), list), body
        assert all(isinstance(e, str) for e in body["errors"]), body
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    ignored_auth,
    errors_array,
]
Callers = dict[str, dict[str, str]]


def fuzz(operation: Any, mode: GenerationMode, callers: Callers, failures: dict[str, str]) -> None:
    """``EXAMPLES`` generated calls of ``operation`` per caller; the first failure of each
    (operation, caller) is recorded rather than raised, so Hypothesis does not spend the
    run shrinking it and one finding does not hide the others."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        for caller, headers in callers.items():
            label = f"{operation.label} [{caller}, {mode.value}]"
            if label in failures:
                continue
            try:
                case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - reported below
                failures[label] = f"{type(exc).__name__}: {str(exc)[:1500]}"

    with contextlib.suppress(Unsatisfiable):  # nothing to make invalid: no parameters
        run()


def test_every_operation_as_root_and_anonymous(server: ServerProcess, api_schema: Any) -> None:
    """Also as a token with only the ``default`` policy: the ACL's 403s are checked too."""
    status, created = send(server, "POST", "auth/token/create", {"policies": ["default"]})
    assert status == 200, created
    callers: Callers = {
        "root": {"X-Vault-Token": ROOT},
        "anonymous": {},
        "default-policy": {"X-Vault-Token": created["auth"]["client_token"]},
    }
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) > 100
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz(operation, mode, callers, failures)
    report = "\n\n".join(f"{label}\n{text}" for label, text in sorted(failures.items()))
    assert not failures, f"{len(failures)} failing operations:\n{report}"


def test_the_document_declares_error_responses(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert schemas["ErrorResponse"]["required"] == ["errors"]
    for url, item in document["paths"].items():
        for method in ("get", "post", "patch", "delete"):
            if method in item:
                responses = item[method]["responses"]
                assert {"400", "403", "404", "405"} <= set(responses), (method, url)
                error = responses["400"]["content"]["application/json"]["schema"]
                assert error == {"$ref": "#/components/schemas/ErrorResponse"}


# -- the operations left out of the run, with plain requests -------------------------


def send(
    server: ServerProcess, method: str, path: str, body: Any = None, token: str | None = ROOT
) -> tuple[int, Any]:
    reply = server.request(method, f"/v1/{path}", body, token=token, timeout=30)
    return reply.status, reply.doc


@pytest.mark.parametrize(("method", "path"), sorted(RUN_ENDERS))
@pytest.mark.parametrize("body", [None, {"x": 1}, [1], "text", {"prefix": 1e300}])
def test_run_enders_refuse_anonymous_and_malformed_calls(
    server: ServerProcess, method: str, path: str, body: Any
) -> None:
    concrete = path.replace("{prefix}", "auth/token").replace("{path}", "fuzz")
    status, reply = send(server, method, concrete, body, token=None)
    assert 400 <= status < 500, (status, reply)
    assert isinstance(reply["errors"], list)
    status, reply = send(server, method, concrete, body, token="not-a-token")
    assert 400 <= status < 500, (status, reply)
    assert isinstance(reply["errors"], list)


def test_revoke_self_ends_only_that_token(server: ServerProcess) -> None:
    status, created = send(server, "POST", "auth/token/create", {"policies": ["default"]})
    assert status == 200, created
    token = created["auth"]["client_token"]
    status, reply = send(server, "POST", "auth/token/revoke-self", {"junk": [1e300]}, token=token)
    assert status == 200 and reply["warnings"], reply  # the unknown parameter is warned about
    status, reply = send(server, "GET", "auth/token/lookup-self", token=token)
    assert status == 403 and reply["errors"]
    assert send(server, "GET", "auth/token/lookup-self")[0] == 200  # root is untouched


def test_a_restore_of_garbage_is_a_400_and_changes_nothing(server: ServerProcess) -> None:
    for path in ("sys/storage/raft/snapshot", "sys/storage/raft/snapshot-force"):
        status, reply = send(server, "POST", path, {"not": "a snapshot"})
        assert 400 <= status < 500, (path, status, reply)
        assert isinstance(reply["errors"], list)
    assert send(server, "GET", "auth/token/lookup-self")[0] == 200


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server for the one test that leaves it sealed (work stealing may run the module's
    tests in any order on a worker, so the shared server must stay unsealed)."""
    with module_dev_server(tmp_path, ROOT) as process:
        yield process


def test_seal_is_sudo_and_seals(own_server: ServerProcess) -> None:
    server = own_server
    status, created = send(server, "POST", "auth/token/create", {"policies": ["default"]})
    assert status == 200, created
    status, reply = send(server, "POST", "sys/seal", token=created["auth"]["client_token"])
    assert status == 403 and reply["errors"]
    status, reply = send(server, "POST", "sys/seal", {"junk": 1e300})
    assert status in (200, 204), reply
    status, reply = send(server, "GET", "sys/mounts")
    assert status == 503 and reply["errors"]
