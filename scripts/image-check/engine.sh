# shellcheck shell=bash
# A private Docker engine for scripts/image-check.sh (sourced, not run).
#
# engine_install   installs Debian's docker.io (and debootstrap) with apt-get when missing;
#                  no service is started by the install (a policy-rc.d says no while it runs)
# engine_start     starts dockerd as root with everything in one temporary folder:
#                    data root, exec root, socket, pid file; storage driver overlay2;
#                    --iptables=false --ip6tables=false --bridge=none --ip-forward=false:
#                    no firewall rule, no bridge, no sysctl of the host is touched
# engine_stop      removes every container of that engine, stops dockerd (and its
#                  containerd), unmounts whatever is still mounted under its folder,
#                  removes the cgroups it created, then the folder; safe to call twice
# dk ARGS...       the docker CLI of that engine (DOCKER_HOST, DOCKER_CONFIG of its own)
# IMAGE_CHECK_DOCKERD names another dockerd executable (default: dockerd on PATH).
#
# Both engine_install and engine_start call `skip REASON` (defined by the caller)
# when the engine cannot be had at all: not root, no docker.io package, dockerd fails to start.

# Debian puts dockerd and debootstrap in /usr/sbin, which a runner's PATH may lack.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" ;; esac

ENGINE_DIR=""
ENGINE_PID=""
ENGINE_CGROUPS_BEFORE=""
ENGINE_HOST_DIRS_BEFORE=""
ENGINE_STARTED=0
ENGINE_POLICY_RC=""
DOCKER_BIN=""
BUILDER=buildkit

# apt-get install PACKAGES, with `apt-get update` first only when the plain install fails.
_apt_install() {
  local log="$1"; shift
  local env=(DEBIAN_FRONTEND=noninteractive)
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    # Packages must not start a system dockerd (with iptables rules and a bridge) on this machine.
    printf '#!/bin/sh\n# scripts/image-check.sh: no service starts while it installs packages\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    ENGINE_POLICY_RC=/usr/sbin/policy-rc.d
  fi
  local rc=0
  env "${env[@]}" apt-get install -y --no-install-recommends "$@" >>"$log" 2>&1 \
    || { env "${env[@]}" apt-get update >>"$log" 2>&1 && env "${env[@]}" apt-get install -y --no-install-recommends "$@" >>"$log" 2>&1; } \
    || rc=$?
  if [ -n "$ENGINE_POLICY_RC" ]; then rm -f "$ENGINE_POLICY_RC"; ENGINE_POLICY_RC=""; fi
  return "$rc"
}

engine_install() { # LOG
  local log="$1"
  [ "$(id -u)" = 0 ] || skip "not root: a private dockerd (and debootstrap) need root"
  command -v apt-get >/dev/null 2>&1 || { command -v dockerd >/dev/null 2>&1 || skip "no dockerd and no apt-get to install Debian's docker.io"; }
  if ! command -v dockerd >/dev/null 2>&1; then
    say "installing docker.io (apt-get)"
    _apt_install "$log" docker.io || skip "the docker.io package could not be installed: $(tail -n 1 "$log")"
  fi
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap (apt-get)"
    _apt_install "$log" debootstrap || fail "debootstrap could not be installed: $(tail -n 1 "$log")"
  fi
  # The CLI of Debian's docker.io (it speaks the daemon's API version and has
  # BuildKit built in), else any docker on PATH.
  DOCKER_BIN=""
  local candidate
  for candidate in $(dpkg -L docker.io 2>/dev/null | grep -E '/bin/docker$' || true) "$(command -v docker || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then DOCKER_BIN="$candidate"; break; fi
  done
  [ -n "$DOCKER_BIN" ] || skip "dockerd is installed but no docker CLI is"
  # CLIs from 23 on build with BuildKit only through the buildx plugin; without it, the classic builder.
  local major
  major="$("$DOCKER_BIN" --version | sed -E 's/^Docker version ([0-9]+).*/\1/')"
  if [ "${major:-0}" -ge 23 ] 2>/dev/null && ! "$DOCKER_BIN" buildx version >/dev/null 2>&1; then
    BUILDER=classic
  else
    BUILDER=buildkit
  fi
}

dk() { "$DOCKER_BIN" "$@"; }

# The cgroup folders a container engine creates (cgroup v1 and v2 layouts).
_engine_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/docker /sys/fs/cgroup/*/buildkit /sys/fs/cgroup/docker /sys/fs/cgroup/buildkit; do
    [ -d "$d" ] && printf '%s\n' "$d"
  done
  return 0
}

# Folders a dockerd and its containerd make outside their roots whatever the flags
# (plugin sockets, shim sockets); removed after the engine when this run made them.
_engine_host_dirs() {
  local d
  for d in /run/docker/plugins /run/docker /run/containerd/s /run/containerd /etc/docker; do
    [ -d "$d" ] && printf '%s\n' "$d"
  done
  return 0
}

engine_start() { # LOG_DIR
  local logs="$1"
  # A short path: containerd's sockets live under the exec root (unix sockets allow 107 bytes).
  ENGINE_DIR="$(mktemp -d /tmp/sdr-engine.XXXXXX)"
  mkdir -p "$ENGINE_DIR/data" "$ENGINE_DIR/exec" "$ENGINE_DIR/cli"
  # Not /etc/docker/daemon.json; the daemon's key in its folder, not /etc/docker/key.json.
  printf '{"deprecated-key-path": "%s"}\n' "$ENGINE_DIR/key.json" >"$ENGINE_DIR/daemon.json"
  ENGINE_CGROUPS_BEFORE="$(_engine_cgroups)"
  ENGINE_HOST_DIRS_BEFORE="$(_engine_host_dirs)"
  ENGINE_STARTED=1
  export DOCKER_HOST="unix://$ENGINE_DIR/docker.sock"
  export DOCKER_CONFIG="$ENGINE_DIR/cli"
  if [ "$BUILDER" = buildkit ]; then export DOCKER_BUILDKIT=1; else export DOCKER_BUILDKIT=0; fi
  "${IMAGE_CHECK_DOCKERD:-dockerd}" \
    --config-file "$ENGINE_DIR/daemon.json" \
    --host "$DOCKER_HOST" \
    --data-root "$ENGINE_DIR/data" \
    --exec-root "$ENGINE_DIR/exec" \
    --pidfile "$ENGINE_DIR/dockerd.pid" \
    --storage-driver overlay2 \
    --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --bridge=none --userland-proxy=false \
    --log-level warn \
    >"$logs/dockerd.log" 2>&1 &
  ENGINE_PID=$!
  local i
  for i in $(seq 1 150); do
    if ! kill -0 "$ENGINE_PID" 2>/dev/null; then
      local status=0
      wait "$ENGINE_PID" 2>/dev/null || status=$?
      ENGINE_PID=""
      local last
      last="$(grep -v '^\s*$' "$logs/dockerd.log" | tail -n 1 || true)"
      skip "dockerd failed to start (exit status $status): ${last:-no output}"
    fi
    dk version >/dev/null 2>&1 && break
    sleep 0.2
  done
  dk version >/dev/null 2>&1 || skip "dockerd did not answer within 30 s: $(tail -n 1 "$logs/dockerd.log")"
  say "engine: dockerd $(dk version --format '{{.Server.Version}}') (pid $ENGINE_PID), storage $(dk info --format '{{.Driver}}'), root $ENGINE_DIR; CLI $DOCKER_BIN, $BUILDER builder"
}

# Mount points at or under DIR, deepest first (/proc/self/mountinfo, octal escapes decoded).
mounts_under() {
  python3 - "$1" <<'PY'
import re, sys
root = sys.argv[1].rstrip("/")
points = []
for line in open("/proc/self/mountinfo", encoding="utf8", errors="replace"):
    p = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
    if p == root or p.startswith(root + "/"):
        points.append(p)
for p in sorted(set(points), key=len, reverse=True):
    print(p)
PY
}

# Unmount everything under DIR; true when nothing is left mounted there.
unmount_under() {
  local dir="$1" point
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  while IFS= read -r point; do
    umount "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true
  done < <(mounts_under "$dir")
  [ -z "$(mounts_under "$dir")" ]
}

# Remove DIR (never across a mount point); refuses while anything is mounted under it.
remove_tree() {
  local dir="$1"
  [ -n "$dir" ] && [ -e "$dir" ] || return 0
  if ! unmount_under "$dir"; then
    say "WARNING: still mounted under $dir (left in place): $(mounts_under "$dir" | tr '\n' ' ')"
    return 1
  fi
  rm -rf --one-file-system "$dir"
}

engine_stop() {
  local ok=0 pid children=""
  if [ -n "$ENGINE_PID" ] && kill -0 "$ENGINE_PID" 2>/dev/null; then
    # Every container of this engine is ours.
    dk ps -aq 2>/dev/null | xargs -r "$DOCKER_BIN" rm -f >/dev/null 2>&1 || true
    children="$(pgrep -P "$ENGINE_PID" 2>/dev/null || true)" # its containerd
    kill -TERM "$ENGINE_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$ENGINE_PID" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$ENGINE_PID" 2>/dev/null; then
      say "WARNING: dockerd did not stop within 20 s; SIGKILL"
      kill -KILL "$ENGINE_PID" 2>/dev/null || true
    fi
    wait "$ENGINE_PID" 2>/dev/null || true
  fi
  ENGINE_PID=""
  if [ -n "$ENGINE_DIR" ]; then
    # Its containerd ends with it; one that outlived a SIGKILLed dockerd is ended by its id.
    for pid in $children; do
      if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$ENGINE_DIR"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 25); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
    remove_tree "$ENGINE_DIR" || ok=1
    ENGINE_DIR=""
  fi
  # The cgroups and host folders this run created (rmdir removes only empty ones: another engine's stay).
  [ "$ENGINE_STARTED" = 1 ] || return "$ok"
  ENGINE_STARTED=0
  local cg
  for cg in $(_engine_cgroups); do
    if ! printf '%s\n' "$ENGINE_CGROUPS_BEFORE" | grep -qxF "$cg"; then
      find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  for cg in $(_engine_host_dirs); do
    printf '%s\n' "$ENGINE_HOST_DIRS_BEFORE" | grep -qxF "$cg" || rmdir "$cg" 2>/dev/null || true
  done
  return "$ok"
}
