#!/usr/bin/env bash
# Builds the Debian package from a configured build directory (cpack), installs it with dpkg into a fresh
# temporary root, checks what it installed (binary, hardened unit, conffile, man page that matches
# `weir serve --help`), then starts the *installed* binary with the *installed* config and uses it.
# Usage: package_test.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d /tmp/weir-package-test.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/out/weir_*.deb)

# A fresh root with an empty dpkg database; the package has no maintainer scripts, so dpkg needs no chroot.
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-not-root -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
dpkg --root="$root" -s weir | grep -q '^Status: install ok installed' || fail "dpkg does not list weir as installed"
grep -qx '/etc/weir/weir.toml' "$root/var/lib/dpkg/info/weir.conffiles" || fail "weir.toml is not a conffile"

unit=$root/usr/lib/systemd/system/weir.service
[ -f "$unit" ] || unit=$root/lib/systemd/system/weir.service
[ -f "$unit" ] || fail "no systemd unit installed"
for line in 'ProtectSystem=strict' 'DynamicUser=yes' 'StateDirectory=weir' 'NoNewPrivileges=yes' \
            'ExecStart=/usr/bin/weir serve --config /etc/weir/weir.toml'; do
  grep -qx "$line" "$unit" || fail "unit lacks $line"
done

bin=$root/usr/bin/weir
conf=$root/etc/weir/weir.toml
"$bin" --version | grep -Eq '^weir [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}' || fail "weir --version: $("$bin" --version)"
grep -q '^data-dir = "/var/lib/weir"' "$conf" || fail "installed config does not point at /var/lib/weir"

# Every flag of `weir serve --help` is documented in the config (as a setting) and in the man page.
man=$tmp/weir.1
gzip -dc "$root/usr/share/man/man1/weir.1.gz" >"$man"
flags=$("$bin" serve --help | grep -oE '^ +--[a-z0-9-]+' | tr -d ' ' | sort -u)
[ -n "$flags" ] || fail "no flags in weir serve --help"
for f in $flags; do
  grep -q -- "$f" "$man" || fail "man page lacks $f"
  case $f in --config|--print-config|--help) continue ;; esac
  grep -q "^${f#--} = " "$conf" || fail "installed config lacks ${f#--}"
done

# The installed binary with the installed config (flags override the paths that need root).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --config "$conf" --data-dir "$tmp/data" --listen "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; fail "installed weir exited at start"; }
  sleep 0.05
done
base=http://127.0.0.1:$port/v1/stream/package-test
[ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: text/plain' "$base")" = 201 ] || fail "create"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: text/plain' --data-binary 'installed' "$base")" = 204 ] || fail "append"
[ "$(curl -s "$base?offset=-1")" = installed ] || fail "read back"
kill -TERM "$pid"
wait "$pid" || fail "installed weir did not exit cleanly on SIGTERM"
pid=""
echo "package test: ok ($(basename "$deb"))"
