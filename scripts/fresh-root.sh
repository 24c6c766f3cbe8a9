#!/usr/bin/env bash
# Run a command in a fresh Debian machine made on this one: a debootstrapped root
# (chroot) holding a copy of this checkout, as a user's new machine would.  Every run
# starts from an untouched copy of the bare root, so nothing a run installs or leaves
# behind reaches the next one, and nothing of this machine's setup (its venv, pip
# cache, Python builds) reaches the root.
#
#   scripts/fresh-root.sh                      # default: make test, in /root/rapier/main
#   scripts/fresh-root.sh 'make demo'          # any shell command, run in /root/rapier/main
#   RAPIER_ROOT_SUITE=bookworm scripts/fresh-root.sh 'make test'
#
# What it does (as root; the time of each phase is printed at the end):
#   1. a bare root: `debootstrap --variant=minbase SUITE` from the mirror apt uses on
#      this machine (the first non-security URI in /etc/apt/sources.list.d/*.sources or
#      /etc/apt/sources.list, else http://deb.debian.org/debian), kept as a tarball
#      (/var/tmp/rapier-root-SUITE.tar) that later runs unpack instead (about 4 s
#      against about 30 s); the root directory is wiped and unpacked at every run;
#   2. APT sources for SUITE, SUITE-updates and SUITE-security, then
#      `apt-get install $ROOT_PKGS` (below): what a user's machine has beyond minbase
#      plus what the README asks for before `make demo` / `make test`;
#   3. the checkout (tracked and untracked files git does not ignore, plus .git: the
#      tests call git) copied to /root/rapier/main, and ../shared beside it to
#      /root/rapier/shared, so that ../shared resolves as in CI;
#   4. new mount, PID and network namespaces (unshare): proc, sys, dev, dev/pts and
#      run mounted in the root, /etc/resolv.conf and this machine's local CA
#      certificates (/usr/local/share/ca-certificates: HTTPS here goes through a proxy
#      they sign) copied, and the command run with chroot in a clean environment
#      (env -i HOME TERM LANG=C.UTF-8 PATH);
#   5. on exit, even on failure or Ctrl-C: every process whose root is the chroot
#      (ovsdb-server, ovs-vswitchd, controllers, Mininet hosts ...) stopped, then
#      everything unmounted.  The PID namespace also makes the kernel kill whatever is
#      left when the run ends, and keeps `pkill` and `mn -c` inside from reaching this
#      machine's processes.
# Network: the root has a network namespace of its own, with a user-mode NAT
# (slirp4netns, apt-installed on this machine if missing) for apt and pip.  Its Open
# vSwitch, bridges, veth pairs, tc and `mn -c` therefore never meet this machine's:
# a Mininet run on the host (same interface names, s1-eth1 ...) and one in the root
# can go on side by side.  RAPIER_ROOT_NET=host shares this machine's namespace
# instead; then `mn -c` in the root deletes the host's Mininet links, and the host's
# OVS daemons are stopped first (said so; unless RAPIER_ROOT_STOP_HOST_OVS=0).
#
# Environment:
#   RAPIER_ROOT_SUITE=trixie       Debian suite (bookworm also works)
#   RAPIER_ROOT_DIR=DIR            the root (default /var/tmp/rapier-root-SUITE)
#   RAPIER_ROOT_TAR=FILE           the cached bare root (default DIR.tar)
#   RAPIER_ROOT_FRESH=1            debootstrap again even when the tarball exists
#   RAPIER_ROOT_MIRROR=URL         Debian mirror (default: the one apt uses here)
#   RAPIER_ROOT_PKGS="a b"         replaces ROOT_PKGS below
#   RAPIER_ROOT_GIT=0              copy the checkout without .git
#   RAPIER_ROOT_NET=own|host       network namespace (default own, see above)
#   RAPIER_ROOT_KEEP=0             delete the root directory after the run (by default
#                                  it stays for inspection; the next run wipes it)
#   RAPIER_ROOT_STOP_HOST_OVS=0    with RAPIER_ROOT_NET=host: leave the host's OVS alone
# Exit status: the command's (130/143 when interrupted).
set -euo pipefail

# What a user's fresh Debian machine needs before the README's two commands, beyond
# debootstrap's minbase: make runs them.  Everything else is scripts/install.sh's job.
ROOT_PKGS="${RAPIER_ROOT_PKGS:-make git}"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$REPO/scripts/$(basename "${BASH_SOURCE[0]}")"
SHARED="$(cd "$REPO/.." && pwd)/shared"
SUITE="${RAPIER_ROOT_SUITE:-trixie}"
ROOT="${RAPIER_ROOT_DIR:-/var/tmp/rapier-root-$SUITE}"
ROOT="${ROOT%/}"
TAR="${RAPIER_ROOT_TAR:-$ROOT.tar}"
NET="${RAPIER_ROOT_NET:-own}"
CMD="${1:-make test}"
IN_ROOT_REPO=/root/rapier/main
HOST_OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
TAP=tap0          # the root's uplink (slirp4netns)

log() { printf '[fresh-root] %s\n' "$*" >&2; }
die() { printf 'fresh-root.sh: %s\n' "$*" >&2; exit 1; }
apt_host() {  # apt_host PKG: install a tool on this machine
    log "host: apt-get install $1"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" >/dev/null \
        || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -q --no-install-recommends "$1" >/dev/null; }
}

if (($# > 1)); then
    die "one argument, the command (quote it): scripts/fresh-root.sh 'make demo'"
fi
[[ $EUID -eq 0 ]] || die "must run as root (debootstrap, mount, chroot)"
case "$ROOT" in
    /?*/?*) ;;
    *) die "RAPIER_ROOT_DIR=$ROOT: give an absolute path at least two levels deep" ;;
esac
[[ "$ROOT" != "$REPO"* && "$REPO" != "$ROOT"* ]] || die "the root cannot hold the checkout or lie inside it"
[[ "$NET" == own || "$NET" == host ]] || die "RAPIER_ROOT_NET=$NET: own or host"

# ======================================================================================
# Outside: start the namespaces (and the root's NAT), wait, pass signals on.
# ======================================================================================
if [[ "${_RAPIER_ROOT_NS:-}" != "1" ]]; then
    if [[ "$NET" == host && -x "$HOST_OVS_CTL" && "${RAPIER_ROOT_STOP_HOST_OVS:-1}" == "1" ]] \
            && "$HOST_OVS_CTL" status 2>/dev/null | grep -q 'is running'; then
        log "host: Open vSwitch runs here and the root shares this network namespace"
        log "host: (same tap devices ovs-netdev, s1 ...): stopping it;"
        log "host: restart it afterwards with: $HOST_OVS_CTL start"
        "$HOST_OVS_CTL" stop >/dev/null
    fi
    ns_opts=(--mount --propagation private --pid --fork --mount-proc --kill-child=SIGTERM)
    if [[ "$NET" == own ]]; then
        ns_opts+=(--net)
        command -v slirp4netns >/dev/null || apt_host slirp4netns
    fi
    _RAPIER_ROOT_NS=1 unshare "${ns_opts[@]}" -- "$BASH" "$SELF" "$@" &
    upid=$!
    inner=""      # the script again, PID 1 of the new PID namespace
    slirp=""
    stop() { [[ -n "$inner" ]] && kill -TERM "$inner" 2>/dev/null; }
    trap stop INT TERM HUP
    for _ in $(seq 100); do
        inner=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null | awk '{print $1}')
        [[ -n "$inner" ]] && break
        sleep 0.05
    done
    if [[ "$NET" == own && -n "$inner" ]]; then
        # NAT for the root: 10.0.2.100/24 on $TAP, gateway 10.0.2.2, DNS 10.0.2.3
        slirp4netns --configure --mtu=65520 --disable-host-loopback "$inner" "$TAP" \
            >"$ROOT.slirp4netns.log" 2>&1 &
        slirp=$!
    fi
    rc=0
    while :; do
        wait "$upid" && rc=0 || rc=$?
        kill -0 "$upid" 2>/dev/null || break   # else wait was cut short by a signal
    done
    [[ -n "$slirp" ]] && { kill "$slirp" 2>/dev/null; wait "$slirp" 2>/dev/null || true; }
    exit "$rc"
fi

# ======================================================================================
# Inside the namespaces (this script is PID 1 here).
# ======================================================================================
PHASES=()
t_all=$(date +%s.%N)
t_phase=$t_all
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}'; }
phase() {  # phase NAME: close the running phase under NAME
    PHASES+=("$(printf '%-22s %7s s' "$1" "$(secs "$t_phase")")")
    t_phase=$(date +%s.%N)
}
report_phases() {
    local p
    log "phases:"
    for p in "${PHASES[@]}"; do log "  $p"; done
    log "  $(printf '%-22s %7s s' total "$(secs "$t_all")")"
}

# mounts at or below the root, deepest first (this namespace's view)
root_mounts() {
    awk -v r="$ROOT" '{ p = $5; gsub(/\\040/, " ", p);
                        if (p == r || index(p, r "/") == 1) print p }' /proc/self/mountinfo \
        | sort -r
}
# processes whose root directory is the chroot
root_pids() {
    local d r
    for d in /proc/[0-9]*; do
        r=$(readlink "$d/root" 2>/dev/null) || continue
        if [[ "$r" == "$ROOT" || "$r" == "$ROOT/"* ]]; then echo "${d#/proc/}"; fi
    done
}
stop_root_processes() {
    local pids p
    pids=$(root_pids | tr '\n' ' ')
    [[ -n "${pids// }" ]] || return 0
    log "cleanup: stopping what still runs in the root: $(for p in $pids; do
        printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 50); do
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
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    [[ -z "$(root_mounts)" ]] || log "cleanup: still mounted: $(root_mounts | tr '\n' ' ')"
}
CLEANED=0
cleanup() {
    local rc=$?
    ((CLEANED)) && return
    CLEANED=1
    trap - EXIT INT TERM HUP
    [[ -n "${cmd_pid:-}" ]] && phase "command (interrupted)"
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
log "suite $SUITE, mirror $MIRROR, root $ROOT, cache $TAR, network: $NET"
log "ROOT_PKGS (a fresh machine's additions before make): $ROOT_PKGS"

if [[ -e "$ROOT" ]]; then
    [[ -z "$(root_mounts)" ]] || die "$ROOT has mounts ($(root_mounts | tr '\n' ' ')): unmount them first"
    rm -rf --one-file-system "$ROOT"
fi
phase "wipe old root"

if [[ "${RAPIER_ROOT_FRESH:-0}" == "1" || ! -s "$TAR" ]]; then
    command -v debootstrap >/dev/null || apt_host debootstrap
    log "debootstrap --variant=minbase $SUITE $ROOT.build $MIRROR"
    rm -rf --one-file-system "$ROOT.build"
    debootstrap --variant=minbase "$SUITE" "$ROOT.build" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 \
        || { tail -n 30 "$ROOT.debootstrap.log" >&2; die "debootstrap failed (log: $ROOT.debootstrap.log)"; }
    phase "debootstrap"
    tar -C "$ROOT.build" --numeric-owner --xattrs --xattrs-include='*' -cpf "$TAR.tmp" .
    mv "$TAR.tmp" "$TAR"
    mv "$ROOT.build" "$ROOT"
    log "cached the bare root: $TAR ($(du -h "$TAR" | cut -f1))"
    phase "cache tarball"
else
    log "bare root from the cache $TAR (RAPIER_ROOT_FRESH=1 rebuilds it)"
    mkdir -p "$ROOT"
    tar -C "$ROOT" --numeric-owner --xattrs --xattrs-include='*' -xpf "$TAR"
    phase "unpack cached root"
fi

# -- network --------------------------------------------------------------------------
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf.host"
rm -f "$ROOT/etc/resolv.conf"
mv "$ROOT/etc/resolv.conf.host" "$ROOT/etc/resolv.conf"
if [[ "$NET" == own ]]; then
    ip link set lo up
    for _ in $(seq 100); do
        ip -4 route show default 2>/dev/null | grep -q "dev $TAP" && break
        sleep 0.05
    done
    ip -4 route show default | grep -q "dev $TAP" \
        || die "no uplink $TAP in the root's network namespace (log: $ROOT.slirp4netns.log)"
    # a nameserver on the host's loopback is out of reach: use slirp4netns's forwarder
    if grep -qE '^nameserver[[:space:]]+(127\.|::1)' "$ROOT/etc/resolv.conf"; then
        printf 'nameserver 10.0.2.3\n' > "$ROOT/etc/resolv.conf"
    fi
fi
# this machine's own CA certificates (HTTPS here is proxied): in the root's
# /usr/local/share/ca-certificates, where the ca-certificates package, once something
# installs it, puts them into /etc/ssl/certs/ca-certificates.crt
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
# /etc/hosts as Debian's installer writes it (debootstrap writes none): localhost
# resolves (chromedriver's clients connect to localhost), and the host name
hostname_in_root=$(hostname)                        # the UTS namespace is shared
grep -qE '^127\.0\.0\.1[[:space:]].*\blocalhost\b' "$ROOT/etc/hosts" 2>/dev/null \
    || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
        >> "$ROOT/etc/hosts"
grep -qw "$hostname_in_root" "$ROOT/etc/hosts" 2>/dev/null \
    || printf '127.0.1.1\t%s\n' "$hostname_in_root" >> "$ROOT/etc/hosts"

# -- mounts ---------------------------------------------------------------------------
# the root a mount point of its own: `mnexec -n` (every Mininet host) remounts "/"
# private, which fails (EINVAL) when "/" is a plain directory
mount --bind "$ROOT" "$ROOT"
mount -t proc proc "$ROOT/proc"
if [[ "$NET" == own ]]; then
    mount -t sysfs sysfs "$ROOT/sys"                     # /sys/class/net of this netns
    mount --rbind /sys/fs/cgroup "$ROOT/sys/fs/cgroup"
else
    mount --rbind /sys "$ROOT/sys"
fi
mount --rbind /dev "$ROOT/dev"                           # with /dev/pts and /dev/net/tun
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$ROOT/run"
mkdir -p "$ROOT/run/lock"
[[ -e "$ROOT/dev/net/tun" ]] || log "warning: no /dev/net/tun: OVS's userspace datapath needs it"
phase "network, mounts"

ROOT_ENV=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM="${TERM:-dumb}"
          LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
in_root() {  # in_root CMD...: run in the chroot with a clean environment
    env -i "${ROOT_ENV[@]}" chroot "$ROOT" "$@"
}
# in_root_pivot CMD...: run in a mount namespace of its own whose root IS the root
# (pivot_root, not chroot): a process that joins it later (Mininet's `mnexec -a`
# enters a host's mount namespace with setns, which resets its root directory to the
# namespace's root) then sees the root's files, not this machine's.
in_root_pivot() {
    unshare --mount --propagation private -- /bin/sh -c '
        cd "$1" && mkdir -p .pivot-old && pivot_root . .pivot-old || exit 125
        cd / && umount -l /.pivot-old && rmdir /.pivot-old
        shift; exec env -i "$@"' sh "$ROOT" "${ROOT_ENV[@]}" "$@"
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
APT_LOG="$ROOT/var/log/fresh-root-apt.log"
in_root apt-get -q update >"$APT_LOG"
if [[ -n "${ROOT_PKGS// }" ]]; then
    # shellcheck disable=SC2086
    in_root env DEBIAN_FRONTEND=noninteractive apt-get -q install -y $ROOT_PKGS >>"$APT_LOG"
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
log "checkout: $(du -sh "$ROOT$IN_ROOT_REPO" | cut -f1) at $IN_ROOT_REPO, ../shared at /root/rapier/shared"
phase "copy checkout"

# -- 4. the command -------------------------------------------------------------------
# In the background with `wait`, so that a signal reaches the traps (and the cleanup)
# at once rather than when the command ends.
log "run in the $SUITE root: cd $IN_ROOT_REPO && $CMD"
exec 3<&0
in_root_pivot /bin/bash -c "cd $IN_ROOT_REPO && $CMD" <&3 3<&- &
cmd_pid=$!
wait "$cmd_pid" && rc=0 || rc=$?
cmd_pid=""
phase "command"
log "command exit status: $rc"
exit "$rc"
