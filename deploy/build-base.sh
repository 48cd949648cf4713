#!/usr/bin/env bash
# Build the local Debian base images that every Coffer image starts from.
#
# No container registry is reachable, so nothing is pulled: the base is made with
# debootstrap (minbase bookworm + python3 + ca-certificates + tini) and loaded with
# `docker import`. Variants are derived from that base image by installing Debian
# packages in a chroot, then imported the same way:
#
#   coffer-base:bookworm          python3, ca-certificates, tini (the Coffer image's base)
#   coffer-haproxy-base:bookworm  the base + haproxy (the load balancer's base)
#   coffer-base:bookworm-hsm      the base + softhsm2 (for an HSM-ready Coffer image; on request)
#
# An image that already exists is kept, so this is cheap after the first run;
# --force rebuilds. The Debian mirror is read from the host's apt configuration
# (or COFFER_DEBIAN_MIRROR / COFFER_DEBIAN_SECURITY_MIRROR), never hard-coded.
#
# usage: deploy/build-base.sh [--force] [base|haproxy|hsm|all]...   (default: base haproxy)
set -euo pipefail

SUITE=bookworm
BASE_IMAGE=${COFFER_BASE_IMAGE:-coffer-base:$SUITE}
HAPROXY_BASE_IMAGE=${COFFER_HAPROXY_BASE_IMAGE:-coffer-haproxy-base:$SUITE}
HSM_BASE_IMAGE=${COFFER_HSM_BASE_IMAGE:-coffer-base:$SUITE-hsm}
BASE_PACKAGES=python3,ca-certificates,tini
WORK_PARENT=${COFFER_BUILD_TMP:-/var/tmp}

force=0
targets=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    base | haproxy | hsm) targets+=("$arg") ;;
    all) targets+=(base haproxy hsm) ;;
    -h | --help)
      sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "build-base.sh: unknown argument: $arg" >&2
      exit 2
      ;;
  esac
done
((${#targets[@]})) || targets=(base haproxy)

log() { printf '[build-base] %s\n' "$*" >&2; }

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# The host's Debian mirrors: "MAIN SECURITY" (SECURITY may be empty).
host_mirrors() {
  python3 - "$SUITE" <<'PY'
import glob, re, sys
suite = sys.argv[1]
main = security = ""
def consider(uri, suites):
    global main, security
    uri = uri.rstrip("/")
    if not uri.startswith(("http://", "https://")):
        return
    if suite in suites and not main:
        main = uri
    if f"{suite}-security" in suites and not security:
        security = uri
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.split()
        if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"])[0] != "no":
            for uri in fields.get("uris", []):
                consider(uri, fields.get("suites", []))
for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        line = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
        if len(line) >= 3 and line[0] == "deb":
            consider(line[1], [line[2]])
print(main, security)
PY
}

MAIN_MIRROR=${COFFER_DEBIAN_MIRROR:-}
SECURITY_MIRROR=${COFFER_DEBIAN_SECURITY_MIRROR:-}
resolve_mirrors() {
  if [[ -z "$MAIN_MIRROR" ]]; then
    read -r MAIN_MIRROR found_security < <(host_mirrors) || true
    SECURITY_MIRROR=${SECURITY_MIRROR:-${found_security:-}}
  fi
  if [[ -z "$MAIN_MIRROR" ]]; then
    echo "build-base.sh: no Debian $SUITE mirror in the host's apt sources;" \
      "set COFFER_DEBIAN_MIRROR" >&2
    exit 1
  fi
}

need_root_tools() {
  if ((EUID != 0)); then
    echo "build-base.sh: debootstrap and chroot need root" >&2
    exit 1
  fi
  if ! command -v debootstrap >/dev/null; then
    echo "build-base.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
    exit 1
  fi
}

# --- chroot helpers ---------------------------------------------------------------------
ROOTFS=""
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount -l "${MOUNTS[i]}" 2>/dev/null || true
  done
  MOUNTS=()
  if [[ -n "$ROOTFS" && -d "$ROOTFS" ]]; then
    rm -rf --one-file-system "$(dirname "$ROOTFS")"
  fi
  ROOTFS=""
}
trap cleanup EXIT

new_rootfs() {
  cleanup
  local work
  work=$(mktemp -d "$WORK_PARENT/coffer-base.XXXXXX")
  ROOTFS="$work/rootfs"
  mkdir -p "$ROOTFS"
}

enter_chroot() {
  mkdir -p "$ROOTFS/proc" "$ROOTFS/dev"
  mount -t proc proc "$ROOTFS/proc" && MOUNTS+=("$ROOTFS/proc")
  mount --bind /dev "$ROOTFS/dev" && MOUNTS+=("$ROOTFS/dev")
  rm -f "$ROOTFS/etc/resolv.conf"
  cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
  # Keep package scripts from starting services inside the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"
  chmod 0755 "$ROOTFS/usr/sbin/policy-rc.d"
}

in_chroot() {
  chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"
}

write_sources() {
  {
    echo "deb $MAIN_MIRROR $SUITE main"
    echo "deb $MAIN_MIRROR $SUITE-updates main"
    [[ -z "$SECURITY_MIRROR" ]] || echo "deb $SECURITY_MIRROR $SUITE-security main"
  } >"$ROOTFS/etc/apt/sources.list"
}

apt_install() {
  in_chroot apt-get update -qq
  in_chroot apt-get -y -qq -o Dpkg::Options::=--force-confold upgrade
  if (($#)); then
    in_chroot apt-get install -y -qq --no-install-recommends "$@"
  fi
}

# Drop what a container never needs, then leave the chroot.
leave_chroot() {
  in_chroot apt-get clean
  rm -f "$ROOTFS/usr/sbin/policy-rc.d"
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount -l "${MOUNTS[i]}"
  done
  MOUNTS=()
  rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/var/cache/debconf/*-old "$ROOTFS"/var/log/apt/* "$ROOTFS"/var/log/*.log \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
    "$ROOTFS"/usr/share/locale/* "$ROOTFS"/tmp/* "$ROOTFS"/root/.cache
  : >"$ROOTFS/etc/resolv.conf"
}

import_rootfs() {
  local tag=$1 description=$2
  tar --numeric-owner --xattrs -C "$ROOTFS" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL org.opencontainers.image.description=\"$description\"" \
    --change "LABEL org.opencontainers.image.created=\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"" \
    --change 'CMD ["/bin/bash"]' \
    - "$tag" >/dev/null
  log "imported $tag ($(docker image inspect -f '{{.Size}}' "$tag" | numfmt --to=iec))"
}

# --- images -----------------------------------------------------------------------------
base_done=0
build_base() {
  ((!base_done)) || return 0
  base_done=1
  if ((!force)) && image_exists "$BASE_IMAGE"; then
    log "$BASE_IMAGE exists (use --force to rebuild)"
    return
  fi
  need_root_tools
  resolve_mirrors
  new_rootfs
  local started=$SECONDS
  log "debootstrap --variant=minbase $SUITE (+ $BASE_PACKAGES)"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$ROOTFS" "$MAIN_MIRROR" \
    >"$(dirname "$ROOTFS")/debootstrap.log" 2>&1 || {
    tail -n 30 "$(dirname "$ROOTFS")/debootstrap.log" >&2
    exit 1
  }
  # Later package installs (variants) skip docs and translations too.
  cat >"$ROOTFS/etc/dpkg/dpkg.cfg.d/01-container-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
EOF
  write_sources
  enter_chroot
  apt_install
  leave_chroot
  import_rootfs "$BASE_IMAGE" "Debian $SUITE minbase with python3 (Coffer base)"
  cleanup
  log "$BASE_IMAGE built in $((SECONDS - started))s"
}

# A variant: the base image's filesystem plus Debian packages, imported the same way.
build_variant() {
  local tag=$1 description=$2
  shift 2
  if ((!force)) && image_exists "$tag"; then
    log "$tag exists (use --force to rebuild)"
    return
  fi
  need_root_tools
  resolve_mirrors
  local started=$SECONDS container
  new_rootfs
  container=$(docker create "$BASE_IMAGE" /bin/true)
  docker export "$container" | tar --numeric-owner -x -C "$ROOTFS"
  docker rm "$container" >/dev/null
  write_sources
  enter_chroot
  log "$tag: installing $*"
  apt_install "$@"
  leave_chroot
  import_rootfs "$tag" "$description"
  cleanup
  log "$tag built in $((SECONDS - started))s"
}

for target in "${targets[@]}"; do
  case "$target" in
    base) build_base ;;
    haproxy)
      build_base
      build_variant "$HAPROXY_BASE_IMAGE" "Coffer base + Debian haproxy" haproxy
      ;;
    hsm)
      build_base
      build_variant "$HSM_BASE_IMAGE" "Coffer base + SoftHSM2" softhsm2 opensc
      ;;
  esac
done
