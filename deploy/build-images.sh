#!/usr/bin/env bash
# Build the Coffer and load-balancer images, offline on top of the local base images.
#
#   1. deploy/build-base.sh: coffer-base:bookworm and coffer-haproxy-base:bookworm,
#      only when missing (--force-base rebuilds them).
#   2. Wheels on the host: dependencies into deploy/.wheels/deps/ (redone only when the
#      dependency list changes), the coffer wheel into deploy/.wheels/app/ (always,
#      from a clean copy of the sources, with fixed timestamps so an unchanged tree
#      gives a byte-identical wheel and Docker reuses every layer).
#   3. docker build deploy/Dockerfile -> $COFFER_IMAGE, deploy/haproxy -> $COFFER_LB_IMAGE.
#
# usage: deploy/build-images.sh [--force-base] [--hsm]
#   --hsm  also build the SoftHSM2 base and $COFFER_IMAGE-hsm on it
# env:   PYTHON (a Python 3.11 with pip; default .venv/bin/python), COFFER_IMAGE
#        (default coffer:latest), COFFER_LB_IMAGE (default coffer-haproxy:latest),
#        EXTRA_REQUIREMENTS (space-separated requirements added to pyproject's, e.g. a
#        dependency the working tree uses before pyproject.toml lists it)
set -euo pipefail
cd "$(dirname "$0")/.."

COFFER_IMAGE=${COFFER_IMAGE:-coffer:latest}
COFFER_LB_IMAGE=${COFFER_LB_IMAGE:-coffer-haproxy:latest}
BASE_IMAGE=${COFFER_BASE_IMAGE:-coffer-base:bookworm}
HSM_BASE_IMAGE=${COFFER_HSM_BASE_IMAGE:-coffer-base:bookworm-hsm}
PYTHON=${PYTHON:-.venv/bin/python}
WHEELS=deploy/.wheels
export DOCKER_BUILDKIT=0 # the daemon's classic builder: no buildx plugin needed

base_args=()
hsm=0
for arg in "$@"; do
  case "$arg" in
    --force-base) base_args+=(--force) ;;
    --hsm) hsm=1 ;;
    *)
      echo "build-images.sh: unknown argument: $arg" >&2
      exit 2
      ;;
  esac
done

log() { printf '[images] %s\n' "$*" >&2; }
# Run a noisy command; show its output only if it fails.
quiet() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "build-images.sh: failed: $*" >&2
    exit 1
  fi
}
started=$SECONDS

targets=(base haproxy)
((hsm)) && targets+=(hsm)
deploy/build-base.sh "${base_args[@]}" "${targets[@]}"
mark=$SECONDS

# --- wheels -----------------------------------------------------------------------------
"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"build-images.sh: wheels must be built with Python 3.11 (the image's), "
             f"not {sys.version.split()[0]}; set PYTHON")
PY
mkdir -p "$WHEELS/pip" "$WHEELS/deps" "$WHEELS/app"
if ! compgen -G "$WHEELS/pip/pip-*.whl" >/dev/null; then
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary :all: -d "$WHEELS/pip" pip
fi

requirements=$(
  "$PYTHON" - <<'PY'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(sorted(tomllib.load(f)["project"]["dependencies"])))
PY
)
for extra in ${EXTRA_REQUIREMENTS:-}; do
  requirements+=$'\n'"$extra"
done
deps_key=$(printf '%s\n%s\n' "$requirements" "$("$PYTHON" -c 'import sys; print(sys.version_info[:2])')" |
  sha256sum | cut -d' ' -f1)
if [[ "$(cat "$WHEELS/deps/.key" 2>/dev/null)" != "$deps_key" ]]; then
  log "building dependency wheels"
  rm -f "$WHEELS"/deps/*.whl "$WHEELS/deps/.key"
  printf '%s\n' "$requirements" >"$WHEELS/requirements.txt"
  quiet "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --prefer-binary \
    --wheel-dir "$WHEELS/deps" -r "$WHEELS/requirements.txt"
  echo "$deps_key" >"$WHEELS/deps/.key"
else
  log "dependency wheels are current"
fi

src=$(mktemp -d /tmp/coffer-src.XXXXXX)
trap 'rm -rf "$src"' EXIT
tar -c --exclude=__pycache__ --exclude='*.pyc' pyproject.toml README.md node api consensus cli sdk |
  tar -x -C "$src"
rm -f "$WHEELS"/app/*.whl
# 1980-01-01: the earliest zip timestamp, so the same sources give the same bytes.
SOURCE_DATE_EPOCH=315532800 quiet "$PYTHON" -m pip wheel --quiet --disable-pip-version-check \
  --no-deps --wheel-dir "$WHEELS/app" "$src"
log "wheels ready in $((SECONDS - mark))s"
mark=$SECONDS

# --- images -----------------------------------------------------------------------------
build() {
  local tag=$1 base=$2
  log "docker build $tag (on $base)"
  quiet docker build --quiet --force-rm --build-arg "BASE=$base" -f deploy/Dockerfile -t "$tag" deploy
}
build "$COFFER_IMAGE" "$BASE_IMAGE"
((hsm)) && build "$COFFER_IMAGE-hsm" "$HSM_BASE_IMAGE"
log "docker build $COFFER_LB_IMAGE"
quiet docker build --quiet --force-rm -t "$COFFER_LB_IMAGE" deploy/haproxy
built="$COFFER_IMAGE $COFFER_LB_IMAGE"
((hsm)) && built+=" $COFFER_IMAGE-hsm"
log "images built in $((SECONDS - mark))s (total $((SECONDS - started))s): $built"
