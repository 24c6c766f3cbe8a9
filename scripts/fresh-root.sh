#!/usr/bin/env bash
# Run a command in a fresh Debian machine made on this one: a debootstrapped root
# (chroot) holding a copy of this checkout, as a user's new machine would.  Every run
# starts from an untouched copy of the bare root, so what the command installs or
# leaves behind never reaches the next run.
#
#   scripts/fresh-root.sh                      # default: cd /root/rapier/main && make test
#   scripts/fresh-root.sh 'make demo'          # any shell command, run in /root/rapier/main
#   RAPIER_ROOT_SUITE=bookworm scripts/fresh-root.sh 'make test'
#
# What it does (as root; the timings of each phase are printed at the end):
#   1. a bare root: `debootstrap --variant=minbase SUITE` from the mirror apt uses on
#      this machine (the first non-security URI of /etc/apt/sources.list.d/*.sources or
#      /etc/apt/sources.list, else http://deb.debian.org/debian), kept as a tarball
#      (/var/tmp/rapier-root-SUITE.tar) and reused by later runs; the root directory
#      (/var/tmp/rapier-root-SUITE) is then wiped and unpacked from that tarball;
#   2. APT sources for SUITE, SUITE-updates and SUITE-security, then
#      `apt-get install ROOT_PKGS`: what a fresh machine has beyond minbase plus what
#      the README asks the user to install before `make demo` / `make test`;
#   3. the checkout (tracked and untracked files that git does not ignore, and .git)
#      copied to /root/rapier/main, and ../shared beside it to /root/rapier/shared;
#   4. in a private mount and PID namespace (unshare): proc (new), sys and dev
#      (rbind), dev/pts, run (tmpfs) mounted in the root, /etc/resolv.conf copied,
#      and the command run with chroot in a clean environment (env -i);
#   5. on exit, even on failure or Ctrl-C: every process whose root is the chroot
#      (ovs-vswitchd, ovsdb-server, controllers, Mininet hosts ...) is stopped, then
#      everything is unmounted.  The namespaces make sure neither processes nor
#      mounts outlive the run, and that `pkill`/`mn -c` inside cannot reach the host's
#      processes.
# The root shares the host's network namespace (apt and pip need the network), so an
# Open vSwitch running on the host would share tap device names with one started in
# the root: the host's OVS daemons are stopped first (and said so), unless
# RAPIER_ROOT_STOP_HOST_OVS=0.
#
# Environment:
#   RAPIER_ROOT_SUITE=trixie       Debian suite (bookworm also works)
#   RAPIER_ROOT_DIR=DIR            the root (default /var/tmp/rapier-root-SUITE)
#   RAPIER_ROOT_TAR=FILE           the cached bare root (default DIR.tar)
#   RAPIER_ROOT_FRESH=1            debootstrap again even when the tarball exists
#   RAPIER_ROOT_MIRROR=URL         Debian mirror (default: the one apt uses here)
#   RAPIER_ROOT_PKGS="a b"         replaces ROOT_PKGS below
#   RAPIER_ROOT_GIT=0              copy the checkout without .git
#   RAPIER_ROOT_KEEP=0             delete the root directory after the run (by default
#                                  it stays for inspection; the next run wipes it)
#   RAPIER_ROOT_STOP_HOST_OVS=0    leave the host's OVS daemons running
# Exit status: the command's.
set -euo pipefail

# What a user's fresh Debian machine needs before the README's two commands, beyond
# debootstrap's minbase: make runs them; everything else is scripts/install.sh's job.
ROOT_PKGS="${RAPIER_ROOT_PKGS:-make}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="$(cd "$REPO/.." && pwd)/shared"
SUITE="${RAPIER_ROOT_SUITE:-trixie}"
ROOT="${RAPIER_ROOT_DIR:-/var/tmp/rapier-root-$SUITE}"
ROOT="${ROOT%/}"
TAR="${RAPIER_ROOT_TAR:-$ROOT.tar}"
CMD="${1:-make test}"
IN_ROOT_REPO=/root/rapier/main
HOST_OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl

log() { printf '[fresh-root] %s\n' "$*" >&2; }
die() { printf 'fresh-root.sh: %s\n' "$*" >&2; exit 1; }

if (($# > 1)); then
    die "one argument, the command (quote it): scripts/fresh-root.sh 'make demo'"
fi
[[ $EUID -eq 0 ]] || die "must run as root (debootstrap, mount, chroot)"
case "$ROOT" in
    /?*/?*) ;;
    *) die "RAPIER_ROOT_DIR=$ROOT: give an absolute path at least two levels deep" ;;
esac
[[ "$ROOT" != "$REPO"* && "$REPO" != "$ROOT"* ]] || die "the root cannot hold the checkout or lie inside it"

# -- the host's Open vSwitch --------------------------------------------------------
if [[ "${_RAPIER_ROOT_NS:-}" != "1" && -x "$HOST_OVS_CTL" \
        && "${RAPIER_ROOT_STOP_HOST_OVS:-1}" == "1" ]] \
        && "$HOST_OVS_CTL" status 2>/dev/null | grep -q 'is running'; then
    log "host: Open vSwitch is running here; stopping it (the root shares this network"
    log "host: namespace, where both would make the same ovs-netdev/bridge tap devices)"
    log "host: restart it afterwards with: $HOST_OVS_CTL start"
    "$HOST_OVS_CTL" stop >/dev/null
fi

# -- private mount + PID namespaces -------------------------------------------------
# Re-run this script as PID 1 of a new PID namespace with its own mount namespace
# (and a /proc of its own): mounts made below never appear on the host, `pkill` and
# `mn -c` inside see only the run's processes, and when this script ends the kernel
# kills whatever is left in the namespace.  --kill-child: if unshare itself is killed,
# this script gets SIGTERM and cleans up.
if [[ "${_RAPIER_ROOT_NS:-}" != "1" ]]; then
    export _RAPIER_ROOT_NS=1
    exec unshare --mount --propagation private --pid --fork --mount-proc \
        --kill-child=SIGTERM -- "$BASH" "${BASH_SOURCE[0]}" "$@"
fi

PHASES=()
t_phase=$(date +%s.%N)
phase() {  # phase NAME: close the running phase under NAME
    local now
    now=$(date +%s.%N)
    PHASES+=("$(awk -v n="$1" -v d="$(awk "BEGIN{print $now - $t_phase}")" \
        'BEGIN{printf "%-22s %7.1f s", n, d}')")
    t_phase=$now
}
t_all=$(date +%s.%N)
report_phases() {
    local p
    log "phases:"
    for p in "${PHASES[@]}"; do log "  $p"; done
    log "  $(awk -v d="$(awk "BEGIN{print $(date +%s.%N) - $t_all}")" \
        'BEGIN{printf "%-22s %7.1f s", "total", d}')"
}

# mounts at or below the root, deepest first (this namespace's view)
root_mounts() {
    awk -v r="$ROOT" '{ p = $5; gsub(/\\040/, " ", p);
                        if (p == r || index(p, r "/") == 1) print p }' /proc/self/mountinfo \
        | sort -r
}
# PIDs of processes whose root directory is the chroot
root_pids() {
    local d pid r
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [[ $pid == "$$" ]] && continue
        r=$(readlink "$d/root" 2>/dev/null) || continue
        if [[ "$r" == "$ROOT" || "$r" == "$ROOT/"* ]]; then echo "$pid"; fi
    done
}
stop_root_processes() {
    local pids i
    pids=$(root_pids | tr '\n' ' ')
    [[ -n "${pids// }" ]] || return 0
    log "cleanup: stopping processes left in the root: $(for p in $pids; do
        printf '%s(%s) ' "$p" "$(cat /proc/$p/comm 2>/dev/null)"; done)"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for i in $(seq 50); do
        pids=$(root_pids | tr '\n' ' ')
        [[ -n "${pids// }" ]] || return 0
        sleep 0.1
    done
    log "cleanup: SIGKILL to $pids"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
}
unmount_root() {
    local m
    for m in $(root_mounts); do
        umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    [[ -z "$(root_mounts)" ]] || log "cleanup: still mounted: $(root_mounts | tr '\n' ' ')"
}
CLEANED=0
cleanup() {
    local rc=$?
    ((CLEANED)) && return
    CLEANED=1
    trap - EXIT INT TERM HUP
    t_phase=$(date +%s.%N)
    stop_root_processes
    unmount_root
    if [[ "${RAPIER_ROOT_KEEP:-1}" != "1" && -d "$ROOT" && -z "$(root_mounts)" ]]; then
        rm -rf --one-file-system "$ROOT"
    fi
    phase "cleanup"
    report_phases
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# -- 1. the bare root -----------------------------------------------------------------
mirror() {
    local f uri=""
    if [[ -n "${RAPIER_ROOT_MIRROR:-}" ]]; then echo "$RAPIER_ROOT_MIRROR"; return; fi
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        uri=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" \
              | grep -v -- '-security' | head -n1) || true
        [[ -n "$uri" ]] && break
    done
    if [[ -z "$uri" && -f /etc/apt/sources.list ]]; then
        uri=$(sed -nE 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
              /etc/apt/sources.list | grep -v -- '-security' | head -n1) || true
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}
MIRROR="$(mirror)"
MIRROR="${MIRROR%/}"
case "$MIRROR" in
    */debian) SECURITY_MIRROR="${MIRROR%/debian}/debian-security" ;;
    *) SECURITY_MIRROR=http://deb.debian.org/debian-security ;;
esac
log "suite $SUITE, mirror $MIRROR, root $ROOT, cache $TAR"
log "ROOT_PKGS (a fresh machine's additions before make): $ROOT_PKGS"

if [[ -e "$ROOT" ]]; then
    [[ -z "$(root_mounts)" ]] || die "$ROOT has mounts ($(root_mounts | tr '\n' ' ')): unmount them first"
    [[ -z "$(root_pids)" ]] || die "processes run inside $ROOT: $(root_pids | tr '\n' ' ')"
    rm -rf --one-file-system "$ROOT"
fi
phase "wipe old root"

if [[ "${RAPIER_ROOT_FRESH:-0}" == "1" || ! -s "$TAR" ]]; then
    if ! command -v debootstrap >/dev/null; then
        log "host: apt-get install debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap \
            || { apt-get update && DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y --no-install-recommends debootstrap; }
    fi
    log "debootstrap --variant=minbase $SUITE (a few minutes)"
    build="$ROOT.build"
    rm -rf --one-file-system "$build"
    debootstrap --variant=minbase "$SUITE" "$build" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 \
        || { tail -n 30 "$ROOT.debootstrap.log" >&2; die "debootstrap failed (log: $ROOT.debootstrap.log)"; }
    phase "debootstrap"
    tar -C "$build" --numeric-owner --xattrs --xattrs-include='*' -cpf "$TAR.tmp" .
    mv "$TAR.tmp" "$TAR"
    mv "$build" "$ROOT"
    log "cached the bare root: $TAR ($(du -h "$TAR" | cut -f1))"
    phase "cache tarball"
else
    log "bare root from the cache $TAR (RAPIER_ROOT_FRESH=1 rebuilds it)"
    mkdir -p "$ROOT"
    tar -C "$ROOT" --numeric-owner --xattrs --xattrs-include='*' -xpf "$TAR"
    phase "unpack cached root"
fi

# -- mounts ---------------------------------------------------------------------------
mount -t proc proc "$ROOT/proc"
mount --rbind /sys "$ROOT/sys"
mount --make-rslave "$ROOT/sys"
mount --rbind /dev "$ROOT/dev"
mount --make-rslave "$ROOT/dev"
mountpoint -q "$ROOT/dev/pts" || mount -t devpts -o newinstance,ptmxmode=0666 devpts "$ROOT/dev/pts"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$ROOT/run"
mkdir -p "$ROOT/run/lock"
[[ -e "$ROOT/dev/net/tun" ]] || log "warning: no /dev/net/tun: OVS's userspace datapath needs it"
rm -f "$ROOT/etc/resolv.conf"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
phase "mounts"

in_root() {  # in_root CMD...: run in the chroot with a clean environment
    env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM="${TERM:-dumb}" \
        LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        chroot "$ROOT" "$@"
}

# -- 2. APT sources and the fresh machine's packages ---------------------------------
rm -f "$ROOT/etc/apt/sources.list"
cat > "$ROOT/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
in_root apt-get -q update >"$ROOT/var/log/rapier-root-apt.log"
if [[ -n "${ROOT_PKGS// }" ]]; then
    # shellcheck disable=SC2086
    in_root env DEBIAN_FRONTEND=noninteractive apt-get -q install -y $ROOT_PKGS \
        >>"$ROOT/var/log/rapier-root-apt.log"
fi
phase "apt: ROOT_PKGS"

# -- 3. the checkout and ../shared ----------------------------------------------------
mkdir -p "$ROOT$IN_ROOT_REPO" "$ROOT/root/rapier/shared"
(
    cd "$REPO"
    {
        git ls-files -z --cached --others --exclude-standard
        if [[ "${RAPIER_ROOT_GIT:-1}" == "1" && -d .git ]]; then printf '.git\0'; fi
    } | while IFS= read -r -d '' f; do
            # skip deleted files, and the venv even when it is a tracked symlink
            if [[ ( -e "$f" || -L "$f" ) && "$f" != .venv && "$f" != .venv/* ]]; then
                printf '%s\0' "$f"
            fi
          done \
        | tar --null -T - -cf -
) | tar -C "$ROOT$IN_ROOT_REPO" -xf - --no-same-owner
if [[ -d "$SHARED" ]]; then
    tar -C "$SHARED" --exclude=__pycache__ -cf - . | tar -C "$ROOT/root/rapier/shared" -xf - --no-same-owner
else
    log "warning: no $SHARED beside the checkout"
fi
log "checkout: $(du -sh "$ROOT$IN_ROOT_REPO" | cut -f1) at $IN_ROOT_REPO, shared at /root/rapier/shared"
phase "copy checkout"

# -- 4. the command -------------------------------------------------------------------
log "run in $SUITE root: cd $IN_ROOT_REPO && $CMD"
set +e
in_root /bin/bash -c "cd $IN_ROOT_REPO && $CMD"
rc=$?
set -e
phase "command"
log "command exit status: $rc"
exit "$rc"
