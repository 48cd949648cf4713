"""``make test``'s pytest stage: most tests on every core, then the timing-bound ones alone.

Why two stages. Most of the suite runs an in-process core, one server process or a
cluster that is only waited on, and is CPU-bound, so it runs on all
cores with pytest-xdist (``--dist worksteal``: the one long test, the OpenAPI fuzz run,
is collected first so a worker starts it at once while the other takes the rest). The
tests marked ``serial`` bound the time a three-node cluster takes to heal or fail
over, or build and run containers; their bounds assume a machine they have to
themselves, so they run afterwards in one process. The Docker images the deployment
tests need are built in the background during the first stage (network- and
disk-bound work that overlaps the CPU-bound tests); the deploy fixtures then find every
layer cached.

Line coverage (``--cov-floor``) is measured across both stages, combined, and the floor
checked once at the end. The server processes tests/replication starts record their
own coverage too (most of node/replication runs only there); their data files are
combined in before the check. Either stage collecting nothing, or passing nothing, fails the
run (``scripts/run_pytest.py``'s rule), so CI never goes green on an empty run.

    python scripts/test_suite.py --cov-floor 90 [--jobs 2] [--no-images] [PATH|@IDS ...]

PATH arguments (default ``tests``) narrow both stages to some files or node ids, e.g.
``@ids.txt`` (pytest reads the arguments from that file): docs/performance.md, "Test
suite time", runs an older tree's test ids this way.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Tests marked ``serial`` (pyproject's markers) bound time under faults (Raft healing,
#: failover, forwarding timeouts) or build and run containers: they run alone.
SERIAL = "serial"
#: Collected first in the parallel stage: the longest single test.
FIRST = ("tests/integration/test_openapi_fuzz.py",)
COVERED = ("node", "api", "consensus", "sdk")
#: tests/replication/conftest.py: where its servers record their coverage.
SERVER_COVERAGE_REQUEST = "COFFER_REPLICATION_COVERAGE"


def main() -> int:
    args = _parse()
    os.chdir(ROOT)
    cov = [f"--cov={package}" for package in COVERED] if args.cov_floor is not None else []
    if cov:
        Path(".coverage").unlink(missing_ok=True)
    images = None if args.no_images else _start_image_build()

    first = list(FIRST) if args.paths == ["tests"] else []
    parallel = [
        *first,
        *args.paths,
        f"-m=not {SERIAL}",
        f"-n={args.jobs}",
        "--dist=worksteal",
        *cov,
        *(["--cov-report="] if cov else []),
    ]
    code = _stage("parallel", parallel)
    if images is not None:
        _finish_image_build(images)
    if code:
        return code
    finishing = [*args.paths, f"-m={SERIAL}"]
    if cov:
        finishing += [*cov, "--cov-append", "--cov-report="]
        servers = ROOT / ".coverage-servers"
        shutil.rmtree(servers, ignore_errors=True)
        servers.mkdir()
        os.environ[SERVER_COVERAGE_REQUEST] = str(servers / ".coverage")
    code = _stage("serial", finishing)
    if code or not cov:
        return code
    return _check_floor(servers, args.cov_floor)


def _check_floor(servers: Path, floor: float) -> int:
    """Add what the replication tests' servers measured, then check the floor once."""
    coverage = [sys.executable, "-m", "coverage"]
    measured = sorted(str(path) for path in servers.glob(".coverage.*"))
    if measured:
        code = subprocess.call([*coverage, "combine", "--append", "-q", *measured])
        if code:
            return code
    shutil.rmtree(servers, ignore_errors=True)
    return subprocess.call(
        [*coverage, "report", "--skip-covered", f"--fail-under={floor}", "--precision=2"]
    )


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default=str(os.cpu_count() or 2), help="xdist workers")
    parser.add_argument("--cov-floor", type=float, default=None, help="fail under this %%")
    parser.add_argument("--no-images", action="store_true", help="no background image build")
    parser.add_argument("paths", nargs="*", default=["tests"], help="test paths or @file of ids")
    return parser.parse_args()


def _stage(name: str, pytest_args: list[str]) -> int:
    """Run one pytest stage through run_pytest.py (exit 5 and all-skipped fail)."""
    command = [sys.executable, "scripts/run_pytest.py", "-q", *pytest_args]
    started = time.monotonic()
    print(f"== {name} stage: {' '.join(command[2:])}", flush=True)
    code = subprocess.call(command)
    print(f"== {name} stage: exit {code} after {time.monotonic() - started:.0f} s", flush=True)
    return code


def _start_image_build() -> subprocess.Popen[bytes] | None:
    """Build the deploy images in the background, if this machine has Docker."""
    if shutil.which("docker") is None:
        return None  # tests/deploy reports the missing dependency itself
    env = {**os.environ, "PYTHON": sys.executable}
    print("== building deploy images in the background (.image-build.log)", flush=True)
    with open(ROOT / ".image-build.log", "wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            ["deploy/build-images.sh", "--hsm"], stdout=log, stderr=subprocess.STDOUT, env=env
        )


def _finish_image_build(build: subprocess.Popen[bytes]) -> None:
    """Wait for the background build; on failure the deploy fixtures rebuild and show why."""
    code = build.wait()
    if code:
        print(f"== background image build failed (exit {code}); see .image-build.log", flush=True)


if __name__ == "__main__":
    sys.exit(main())
