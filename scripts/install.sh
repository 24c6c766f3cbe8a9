#!/usr/bin/env bash
# Set up a fresh Debian 12 machine (as root) for the RAPIER controller, the host
# agent and the Mininet emulation.  Idempotent: a second run skips what is done
# and takes a few seconds.
#
#   bash scripts/install.sh            # from anywhere; acts on this repository
#
# What it does:
#   1. apt: mininet, openvswitch-switch, iperf3, ethtool, iputils-ping, iproute2,
#      python3-venv, and for the observability tests prometheus, chromium and
#      chromium-driver (skipped when all are installed already); the prometheus
#      package's system service is stopped and disabled (the tests start their own
#      server on a free port);
#   2. a venv at <repo>/.venv made with the machine's python3;
#   3. pip install -e .[test] and the client (pip install -e ./client: package
#      rapier_client, standard library only), then Ryu 4.34 and the pins that make it run on
#      Python 3.11 (requirements-controller.txt): Ryu's setup does not build with
#      setuptools >= 58, so its build runs with PIP_CONSTRAINT=setuptools<58;
#      eventlet 0.33.3 + dnspython>=2 (shared/ENVIRONMENT.md);
#   4. the eventlet.wsgi.ALREADY_HANDLED shim: rapier_app/controller/compat.py is
#      copied to the venv's site-packages with a .pth line that installs its import
#      hook, so the unmodified `ryu-manager` command works;
#   5. /usr/local/bin/ryu-manager -> <repo>/.venv/bin/ryu-manager, so that
#      `ryu-manager rapier_app.controller` runs from any shell;
#   6. a smoke check: the controller module imports and ryu-manager starts;
#   7. the numba kernels compiled into their on-disk cache (python -m rapier_app.warmup);
#   8. the checkout's modules byte-compiled (python -m compileall): a controller that
#      cannot write __pycache__ would compile them at every start.
# Environment: RAPIER_SKIP_APT=1 skips step 1; RAPIER_FORCE_PIP=1 redoes step 3;
# RAPIER_LINK_BIN=0 skips step 5 (e.g. for a second checkout on the same machine).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
PY="$VENV/bin/python"
PIP=("$PY" -m pip --disable-pip-version-check)
log() { printf '[install] %s\n' "$*"; }
t_start=$(date +%s)

# -- 1. Debian packages -------------------------------------------------------------
APT_PKGS=(mininet openvswitch-switch iperf3 ethtool iputils-ping iproute2 python3-venv
          python3-pip procps psmisc prometheus chromium chromium-driver)
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
if [[ ! -x "$PY" ]]; then
    log "venv: creating $VENV with $(command -v python3) ($(python3 --version))"
    python3 -m venv "$VENV"
else
    log "venv: $VENV exists ($("$PY" --version))"
fi

# -- 3. Python packages -------------------------------------------------------------------
STAMP="$VENV/.rapier-install-stamp"
want_stamp="$(cat "$REPO/setup.py" "$REPO/client/pyproject.toml" "$REPO/requirements-controller.txt" "$REPO/scripts/install.sh" \
    | sha256sum | cut -d' ' -f1)"
if [[ "${RAPIER_FORCE_PIP:-0}" != "1" && -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]] \
        && "$PY" -c "import ryu, eventlet, rapier_app, rapier_client, topologies, pytest, selenium" 2>/dev/null; then
    log "pip: up to date"
else
    log "pip: installing the project (editable, with test extras)"
    "${PIP[@]}" install -q -e "$REPO[test]"
    log "pip: installing the client (rapier_client, from ./client)"
    "${PIP[@]}" install -q -e "$REPO/client"
    log "pip: installing ryu 4.34 (built with setuptools<58)"
    constraint="$(mktemp)"
    echo 'setuptools<58' > "$constraint"
    PIP_CONSTRAINT="$constraint" "${PIP[@]}" install -q "ryu==4.34"
    rm -f "$constraint"
    log "pip: installing the controller's pins (eventlet 0.33.3, dnspython>=2)"
    "${PIP[@]}" install -q -r "$REPO/requirements-controller.txt"
    echo "$want_stamp" > "$STAMP"
fi

# -- 4. eventlet.wsgi.ALREADY_HANDLED shim for ryu-manager -------------------------------
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "$REPO/rapier_app/controller/compat.py" "$SITE/rapier_ryu_compat.py"
echo "import rapier_ryu_compat; rapier_ryu_compat.install_import_hook()" \
    > "$SITE/rapier_ryu_compat.pth"
log "shim: $SITE/rapier_ryu_compat.pth"

# -- 5. ryu-manager on PATH ------------------------------------------------------------
if [[ $EUID -eq 0 && "${RAPIER_LINK_BIN:-1}" == "1" ]]; then
    link=/usr/local/bin/ryu-manager
    if [[ ! -e "$link" || -L "$link" ]]; then
        ln -sfn "$VENV/bin/ryu-manager" "$link"
        log "path: $link -> $VENV/bin/ryu-manager"
    else
        log "path: $link exists and is not a symlink; left alone (use $VENV/bin/ryu-manager)"
    fi
fi

# -- 6. smoke check -------------------------------------------------------------------------
"$PY" -c "import rapier_app.controller as c; assert hasattr(c, 'RapierController')"
ver="$("$VENV/bin/ryu-manager" --version 2>&1)" || {
    echo "install.sh: ryu-manager does not start: $ver" >&2; exit 1; }
log "controller: ok ($ver)"

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
