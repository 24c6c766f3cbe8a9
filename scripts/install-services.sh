#!/usr/bin/env bash
# Opt-in: install the controller and the host agent as systemd services.  Run as root
# after scripts/install.sh (which makes the venv):
#
#   bash scripts/install-services.sh             # or: make install-services
#   systemctl enable --now rapier-controller     # on the controller's machine
#   systemctl enable --now rapier-agent          # on every host whose flows are shaped
#
# What it does (idempotent; a second run changes nothing unless a template changed):
#   1. renders configs/systemd/rapier-{controller,agent}.service with this checkout's
#      venv (@VENV@) and the configuration directory (@ETC@) into the unit directory;
#   2. writes ETC/rapier.conf from configs/rapier.conf, with
#      state_db = STATE/controller.sqlite3, ONLY if it does not exist (mode 0600), and
#      ETC/controller.env and ETC/agent.env (extra command-line options) likewise:
#      an operator's files are never overwritten;
#   3. creates STATE (mode 0700);
#   4. systemctl daemon-reload, where systemd is PID 1 (/run/systemd/system exists).
#   It enables and starts nothing: it prints the commands.
#
# Options (or environment variables):
#   --unit-dir DIR    RAPIER_UNIT_DIR    default /etc/systemd/system
#   --etc-dir DIR     RAPIER_ETC_DIR     default /etc/rapier
#   --state-dir DIR   RAPIER_STATE_DIR   default /var/lib/rapier (the unit's
#                     StateDirectory=rapier; another directory is only for staging
#                     and tests: the unit then also names it in WorkingDirectory=)
#   --venv DIR        RAPIER_VENV        default <checkout>/.venv
#   --no-reload       RAPIER_SYSTEMD_RELOAD=0: no systemctl daemon-reload
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
UNIT_DIR="${RAPIER_UNIT_DIR:-/etc/systemd/system}"
ETC_DIR="${RAPIER_ETC_DIR:-/etc/rapier}"
STATE_DIR="${RAPIER_STATE_DIR:-/var/lib/rapier}"
VENV="${RAPIER_VENV:-$REPO/.venv}"
RELOAD="${RAPIER_SYSTEMD_RELOAD:-1}"
UNITS=(rapier-controller rapier-agent)

log() { printf '[install-services] %s\n' "$*"; }
die() { printf 'install-services.sh: %s\n' "$*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while (($#)); do
    case "$1" in
        --unit-dir) UNIT_DIR="${2:?--unit-dir needs a directory}"; shift 2 ;;
        --etc-dir) ETC_DIR="${2:?--etc-dir needs a directory}"; shift 2 ;;
        --state-dir) STATE_DIR="${2:?--state-dir needs a directory}"; shift 2 ;;
        --venv) VENV="${2:?--venv needs a directory}"; shift 2 ;;
        --unit-dir=*) UNIT_DIR="${1#*=}"; shift ;;
        --etc-dir=*) ETC_DIR="${1#*=}"; shift ;;
        --state-dir=*) STATE_DIR="${1#*=}"; shift ;;
        --venv=*) VENV="${1#*=}"; shift ;;
        --no-reload) RELOAD=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
for v in UNIT_DIR ETC_DIR STATE_DIR VENV; do
    case "${!v}" in
        /*) ;;
        *) die "${v,,}: must be an absolute path, got '${!v}'" ;;
    esac
    # the values go into unit files and sed replacements: no white space, no | or @
    case "${!v}" in
        *[[:space:]\|@\\]*) die "${!v}: white space, |, @ and \\ are not supported in paths" ;;
    esac
done
UNIT_DIR="${UNIT_DIR%/}"; ETC_DIR="${ETC_DIR%/}"; STATE_DIR="${STATE_DIR%/}"; VENV="${VENV%/}"

if [[ $EUID -ne 0 && ( "$UNIT_DIR" == /etc/systemd/* || "$ETC_DIR" == /etc/* ) ]]; then
    die "run as root (sudo bash scripts/install-services.sh), or pick --unit-dir/--etc-dir"
fi
[[ -x "$VENV/bin/python" && -x "$VENV/bin/rapier-agent" ]] \
    || die "no venv with rapier-agent at $VENV: run scripts/install.sh first (or pass --venv)"
if [[ ! -x "$VENV/bin/rapier-controller" ]]; then
    log "warning: $VENV/bin/rapier-controller is missing: rapier-controller.service will" \
        "not start until the project is reinstalled (scripts/install.sh)"
fi
# numba's cache of the compiled kernels, beside their sources (made by scripts/install.sh)
KERNEL_CACHE="$("$VENV/bin/python" -c 'import os, rapier_app.kernels as k
print(os.path.join(os.path.dirname(os.path.abspath(k.__file__)), "__pycache__"))')" \
    || die "the venv at $VENV cannot import rapier_app.kernels"

# -- 1. units ------------------------------------------------------------------------
mkdir -p "$UNIT_DIR"
for u in "${UNITS[@]}"; do
    src="$REPO/configs/systemd/$u.service"
    dst="$UNIT_DIR/$u.service"
    tmp="$(mktemp "$UNIT_DIR/.$u.service.XXXXXX")"
    sed -e "s|@VENV@|$VENV|g" -e "s|@ETC@|$ETC_DIR|g" -e "s|@REPO@|$REPO|g" \
        -e "s|@KERNEL_CACHE@|$KERNEL_CACHE|g" -e "s|/var/lib/rapier|$STATE_DIR|g" \
        "$src" > "$tmp"
    if grep -n '@[A-Z_]*@' "$tmp" >&2; then
        rm -f "$tmp"; die "$src: placeholder left unrendered (above)"
    fi
    chmod 0644 "$tmp"
    if [[ -f "$dst" ]] && cmp -s "$tmp" "$dst"; then
        rm -f "$tmp"; log "unit: $dst unchanged"
    else
        mv -f "$tmp" "$dst"; log "unit: $dst written"
    fi
done

# -- 2. configuration (never overwritten) ------------------------------------------
mkdir -p "$ETC_DIR"
chmod 0755 "$ETC_DIR"
conf="$ETC_DIR/rapier.conf"
if [[ -e "$conf" ]]; then
    log "config: $conf exists; left alone"
    if ! grep -Eq "^[[:space:]]*state_db[[:space:]]*=[[:space:]]*$STATE_DIR/" "$conf"; then
        log "config: note: its state_db is not under $STATE_DIR (the unit's state directory)"
    fi
else
    tmp="$(mktemp "$ETC_DIR/.rapier.conf.XXXXXX")"
    {
        printf '# Written by scripts/install-services.sh from %s/configs/rapier.conf;\n' "$REPO"
        printf '# yours now: the script never overwrites it.  Check: rapier-config check %s\n' "$conf"
        sed -e "s|^#state_db = .*|state_db = $STATE_DIR/controller.sqlite3|" \
            "$REPO/configs/rapier.conf"
    } > "$tmp"
    if ! grep -q "^state_db = $STATE_DIR/controller.sqlite3\$" "$tmp"; then
        rm -f "$tmp"; die "configs/rapier.conf has no '#state_db = ' line to set"
    fi
    chmod 0600 "$tmp"
    mv "$tmp" "$conf"
    log "config: $conf written (state_db = $STATE_DIR/controller.sqlite3)"
fi
write_env() {   # FILE VAR COMMENT...: an environment file, only if absent
    local f="$1" var="$2"; shift 2
    if [[ -e "$f" ]]; then log "config: $f exists; left alone"; return; fi
    local tmp
    tmp="$(mktemp "$f.XXXXXX")"
    { printf '# %s\n' "$@"; printf '%s=\n' "$var"; } > "$tmp"
    chmod 0644 "$tmp"
    mv "$tmp" "$f"
    log "config: $f written"
}
write_env "$ETC_DIR/controller.env" RAPIER_CONTROLLER_ARGS \
    "Extra options of rapier-controller (rapier-controller.service), e.g." \
    "  RAPIER_CONTROLLER_ARGS=--observe-links     (needed for topology = discover)" \
    "The [rapier] options are in $conf."
write_env "$ETC_DIR/agent.env" RAPIER_AGENT_ARGS \
    "Options of rapier-agent (rapier-agent.service; it listens on" \
    "unix:/run/rapier-agent/agent.sock unless --listen is given here), e.g." \
    "  RAPIER_AGENT_ARGS=--iface eth1     (needed when the host has several interfaces)" \
    "  RAPIER_AGENT_ARGS=--listen 0.0.0.0:7070 --token-file $ETC_DIR/agent.token --iface eth1" \
    "  RAPIER_AGENT_ARGS=--no-enforce     (record the limits, run no tc command)"

# -- 3. state directory ---------------------------------------------------------------
mkdir -p "$STATE_DIR"
chmod 0700 "$STATE_DIR"
log "state: $STATE_DIR"

# -- 4. systemd -------------------------------------------------------------------------
if [[ "$RELOAD" != "1" ]]; then
    log "systemd: daemon-reload skipped (--no-reload)"
elif [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
    systemctl daemon-reload
    log "systemd: daemon-reload done"
else
    log "systemd: not running as PID 1 here; no daemon-reload"
fi

cat <<EOF
[install-services] done.  Next:
  edit $conf (topology, agent_url, tokens; check: $VENV/bin/rapier-config check $conf)
  systemctl enable --now rapier-controller     # REST on 127.0.0.1:8080, GET /rapier/v1/health
  systemctl enable --now rapier-agent          # options in $ETC_DIR/agent.env
  journalctl -u rapier-controller -f
EOF
