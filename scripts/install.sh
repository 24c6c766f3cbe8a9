#!/usr/bin/env bash
# Set up a fresh Debian 12 or 13 machine (as root) for the RAPIER controller, the
# host agent and the Mininet emulation.  Idempotent: a second run skips what is done
# and takes a few seconds.
#
#   bash scripts/install.sh                              # os-ken, the system python3
#   RAPIER_OF_STACK=ryu bash scripts/install.sh          # Ryu 4.34 instead
#   RAPIER_PYTHON=python3.13 bash scripts/install.sh     # another interpreter
#
# What it does:
#   1. apt: mininet, openvswitch-switch, iperf3, ethtool, iputils-ping, iproute2, curl,
#      python3-venv, and for the observability tests prometheus, chromium and
#      chromium-driver, and systemd (systemd-analyze checks the service units; on a
#      machine that runs systemd it is there already) (skipped when all are
#      installed already); the prometheus
#      package's system service is stopped and disabled (the tests start their own
#      server on a free port);
#   2. a venv (RAPIER_VENV, default <repo>/.venv) made with RAPIER_PYTHON (default
#      the system python3); a venv made with another Python version is remade;
#   3. pip install -e .[test] and the client (pip install -e ./client: package
#      rapier_client, standard library only), then the OpenFlow stack
#      (RAPIER_OF_STACK):
#        os-ken (default): os-ken 4.2.2 from PyPI (requirements-os-ken.txt), native
#          threads, no eventlet in the controller's process;
#        ryu: Ryu 4.34 built from its sdist (sha256 pinned below) with two
#          one-line fixes for today's setuptools and eventlet (see build_ryu), then
#          requirements-ryu.txt (eventlet 0.33.3 on Python 3.11, 0.40.3 from 3.12);
#      the other stack is uninstalled from the venv, so the venv has one;
#   4. with RAPIER_LINK_BIN=1 (off by default), /usr/local/bin/<tool> links to this
#      venv's rapier-* commands; a link that points into another checkout is left
#      alone (say RAPIER_LINK_BIN=force to re-point it);
#   5. a smoke check: the controller module imports and rapier-controller starts;
#   6. the numba kernels compiled into their on-disk cache (python -m rapier_app.warmup);
#   7. the checkout's modules byte-compiled (python -m compileall): a controller that
#      cannot write __pycache__ would compile them at every start.
# Environment: RAPIER_SKIP_APT=1 skips step 1; RAPIER_FORCE_PIP=1 redoes step 3.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RAPIER_VENV:-$REPO/.venv}"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check)
PYTHON="${RAPIER_PYTHON:-python3}"
STACK="$(printf '%s' "${RAPIER_OF_STACK:-os-ken}" | tr 'A-Z_' 'a-z-')"
[[ "$STACK" == "osken" ]] && STACK=os-ken
log() { printf '[install] %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
case "$STACK" in
    os-ken|ryu) ;;
    *) die "RAPIER_OF_STACK: '$STACK' is not a stack (os-ken or ryu)" ;;
esac
t_start=$(date +%s)

# Ryu 4.34, its last release (2020): the sdist and its sha256 (PyPI).
RYU_SDIST_URL="${RAPIER_RYU_SDIST_URL:-https://files.pythonhosted.org/packages/25/30/1c1972b3f9bf52de32d2fdf7c5206ff7099e739bf69b6004f4a71bcbde18/ryu-4.34.tar.gz}"
RYU_SDIST_SHA256=a31041eb53aee0c36ca428645ad2607163ca5e1390f5a3d6ef2025b7829ce93e

# -- 1. Debian packages -------------------------------------------------------------
APT_PKGS=(mininet openvswitch-switch iperf3 ethtool iputils-ping iproute2 python3-venv curl ca-certificates
          python3-pip procps psmisc prometheus chromium chromium-driver systemd)
missing=()
for p in "${APT_PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [[ "${RAPIER_SKIP_APT:-0}" == "1" ]]; then
    log "apt: skipped (RAPIER_SKIP_APT=1)"
elif ((${#missing[@]} == 0)); then
    log "apt: all packages present"
else
    if [[ $EUID -ne 0 ]]; then
        echo "install.sh: must run as root to apt-get install ${missing[*]}" >&2
        exit 1
    fi
    log "apt: installing ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
# Debian's prometheus package starts a system server on :9090 where an init system
# runs services: stop and disable it (tests/emulation/test_observability.py starts its
# own on a free port with a temporary config and storage directory).
if [[ $EUID -eq 0 ]] && dpkg-query -W -f='${Status}' prometheus 2>/dev/null \
        | grep -q "install ok installed"; then
    if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
        systemctl disable --now prometheus >/dev/null 2>&1 || true
    elif [[ -x /etc/init.d/prometheus ]]; then
        /etc/init.d/prometheus stop >/dev/null 2>&1 || true
        update-rc.d prometheus disable >/dev/null 2>&1 || true
    fi
fi

# -- 2. venv ----------------------------------------------------------------------------
command -v "$PYTHON" >/dev/null || die "RAPIER_PYTHON: $PYTHON not found"
want_ver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [[ -x "$PY" ]]; then
    have_ver="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)"
    if [[ "$have_ver" != "$want_ver" ]]; then
        log "venv: $VENV has Python $have_ver, $PYTHON is $want_ver: remaking it"
        rm -rf "$VENV"
    fi
fi
if [[ ! -x "$PY" ]]; then
    log "venv: creating $VENV with $(command -v "$PYTHON") ($("$PYTHON" --version))"
    "$PYTHON" -m venv "$VENV"
else
    log "venv: $VENV exists ($("$PY" --version))"
fi

# -- 3. Python packages -------------------------------------------------------------------
# build_ryu: Ryu 4.34's sdist, checked against its sha256, with two one-line fixes:
#   ryu/hooks.py   easy_install.get_script_args is gone from setuptools >= 58 (the
#                  build fails); Ryu's hook only saves it: getattr(..., None);
#   ryu/app/wsgi.py  eventlet.wsgi.ALREADY_HANDLED is gone from eventlet >= 0.30.3
#                  (ryu-manager fails at import); Ryu only returns it from its
#                  WebSocket handler: any sentinel object;
#   then built and installed by pip with today's setuptools.  The sdist is cached in
#   $VENV/.cache.
build_ryu() {
    local cache="$VENV/.cache" tgz work
    tgz="$cache/ryu-4.34.tar.gz"
    mkdir -p "$cache"
    if [[ ! -f "$tgz" ]] || ! echo "$RYU_SDIST_SHA256  $tgz" | sha256sum -c --status; then
        log "ryu: downloading $RYU_SDIST_URL"
        curl -fsSL --retry 3 -o "$tgz.part" "$RYU_SDIST_URL" || die "ryu: download failed"
        mv "$tgz.part" "$tgz"
    fi
    echo "$RYU_SDIST_SHA256  $tgz" | sha256sum -c --status \
        || die "ryu: $tgz does not have the pinned sha256 $RYU_SDIST_SHA256"
    work="$(mktemp -d)"
    tar -xzf "$tgz" -C "$work"
    local src="$work/ryu-4.34"
    sed -i 's/= easy_install\.get_script_args$/= getattr(easy_install, "get_script_args", None)/' \
        "$src/ryu/hooks.py"
    sed -i 's/^    from eventlet\.wsgi import ALREADY_HANDLED$/    ALREADY_HANDLED = getattr(__import__("eventlet.wsgi").wsgi, "ALREADY_HANDLED", object())/' \
        "$src/ryu/app/wsgi.py"
    grep -q 'getattr(easy_install, "get_script_args", None)' "$src/ryu/hooks.py" \
        && grep -q 'getattr(__import__("eventlet.wsgi").wsgi' "$src/ryu/app/wsgi.py" \
        || die "ryu: the sdist's fixes did not apply"
    log "ryu: building 4.34 from its sdist (sha256 checked, fixes applied)"
    "${PIP[@]}" install -q "$src"
    rm -rf "$work"
}

STAMP="$VENV/.rapier-install-stamp"
want_stamp="$( (cat "$REPO/setup.py" "$REPO/client/pyproject.toml" "$REPO/requirements-ryu.txt" \
    "$REPO/requirements-os-ken.txt" "$REPO/scripts/install.sh"; echo "$STACK $want_ver") \
    | sha256sum | cut -d' ' -f1)"
stack_mod=os_ken; other=ryu
[[ "$STACK" == "ryu" ]] && { stack_mod=ryu; other=os-ken; }
if [[ "${RAPIER_FORCE_PIP:-0}" != "1" && -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]] \
        && "$PY" -c "import $stack_mod, rapier_app, rapier_client, topologies, pytest, selenium" 2>/dev/null; then
    log "pip: up to date ($STACK)"
else
    log "pip: installing the project (editable, with test extras)"
    "${PIP[@]}" install -q --upgrade pip setuptools wheel
    "${PIP[@]}" install -q -e "$REPO[test]"
    log "pip: installing the client (rapier_client, from ./client)"
    "${PIP[@]}" install -q -e "$REPO/client"
    if "${PIP[@]}" show -q "$other" >/dev/null 2>&1; then
        log "pip: removing $other (the venv has one stack)"
        "${PIP[@]}" uninstall -q -y "$other"
    fi
    if [[ "$STACK" == "ryu" ]]; then
        build_ryu
        log "pip: Ryu's pins (requirements-ryu.txt)"
        "${PIP[@]}" install -q -r "$REPO/requirements-ryu.txt"
    else
        log "pip: os-ken (requirements-os-ken.txt)"
        "${PIP[@]}" install -q -r "$REPO/requirements-os-ken.txt"
    fi
    echo "$want_stamp" > "$STAMP"
fi
# an earlier install's eventlet shim (this script no longer copies it)
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -f "$SITE/rapier_ryu_compat.pth" "$SITE/rapier_ryu_compat.py"

# -- 4. the tools on PATH (opt-in) -------------------------------------------------------
TOOLS=(rapier-controller rapier-agent rapier-sim rapier-check rapier-emulate rapier-bench
       rapier-experiment rapier-topology rapier-config rapier-doctor)
if [[ "${RAPIER_LINK_BIN:-0}" != "0" ]]; then
    for tool in "${TOOLS[@]}"; do
        link=/usr/local/bin/$tool
        if [[ -e "$link" && ! -L "$link" ]]; then
            log "path: $link exists and is not a symlink; left alone"
        elif [[ -L "$link" && "$(readlink "$link")" != "$VENV/bin/$tool" \
                && "${RAPIER_LINK_BIN}" != "force" ]]; then
            log "path: $link -> $(readlink "$link") (another checkout); left alone" \
                "(RAPIER_LINK_BIN=force re-points it)"
        else
            ln -sfn "$VENV/bin/$tool" "$link"
        fi
    done
    log "path: /usr/local/bin/rapier-* -> $VENV/bin"
fi

# -- 5. smoke check -------------------------------------------------------------------------
"$PY" -c "import rapier_app.controller as c; assert hasattr(c, 'RapierController')"
ver="$("$VENV/bin/rapier-controller" --version 2>&1)" || {
    echo "install.sh: rapier-controller does not start: $ver" >&2; exit 1; }
log "controller: ok ($ver)"
if [[ "$STACK" == "ryu" ]]; then
    ver="$("$VENV/bin/ryu-manager" --version 2>&1)" || {
        echo "install.sh: ryu-manager does not start: $ver" >&2; exit 1; }
    log "ryu-manager: ok ($ver)"
fi

# -- agent / emulation section (owned by the agent/Mininet engineer; append below) ------
# Mininet's Python library for the venv (Debian's package installs it only for
# /usr/bin/python3); PyPI 2.3.0.dev6 uses Debian's mnexec (shared/ENVIRONMENT.md).
if ! "$PY" -c "import mininet.net, mininet.node, mininet.link" 2>/dev/null; then
    log "emulation: pip install mininet==2.3.0.dev6 into the venv"
    "${PIP[@]}" install -q "mininet==2.3.0.dev6"
else
    log "emulation: mininet importable in the venv"
fi
for tool in mnexec ovs-vsctl ovs-ofctl tc ethtool iperf3 ping prometheus chromium chromedriver; do
    command -v "$tool" >/dev/null || { echo "install.sh: $tool missing (apt step)" >&2; exit 1; }
done
"$PY" -m enforcement.agent --help >/dev/null
"$PY" -c "import mininet_tests.topos, mininet_tests.runner, mininet_tests.emulate"
log "emulation: ok (rapier-agent, rapier-emulate, mininet $("$PY" -c 'import mininet.net as n; print(n.VERSION)'))"

# -- compiled kernels ----------------------------------------------------------------
# numba compiles the allocation kernels on first use (13 s for aalo on an empty cache)
# and caches them beside the sources: compile them now, not at the first decision.
t_warm=$(date +%s)
"$PY" -m rapier_app.warmup -q
log "kernels: compiled or cached for every scheduler ($(( $(date +%s) - t_warm )) s)"

# -- byte-compiled modules -------------------------------------------------------------
# A process that cannot write __pycache__ (PYTHONDONTWRITEBYTECODE set, or a service
# user on a checkout it does not own) compiles every module of this checkout at each
# start: about 0.2 s of CPU more per controller start, i.e. per restart.
"$PY" -m compileall -q "$REPO/rapier_app" "$REPO/topologies" "$REPO/enforcement" \
    "$REPO/mininet_tests" "$REPO/client" >/dev/null
log "bytecode: compiled"

log "done in $(( $(date +%s) - t_start )) s"
