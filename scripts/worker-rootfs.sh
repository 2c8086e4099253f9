#!/usr/bin/env bash
# Assembles, into DIR, the root file system the worker image adds to the
# splash binary so that it can run contained Python tools: Bubblewrap,
# Debian's python3 with its standard library, the shared libraries they
# load, and the Python SDK.
#
#   scripts/worker-rootfs.sh DIR
#
# Nothing is downloaded: the files are those of this machine's installed
# Debian packages (dpkg -L lists each package's files exactly), and the
# shared libraries their programs and modules need (ldd). The machine needs
# the packages python3 and bubblewrap (apt-get install python3 bubblewrap;
# .ci/run installs them). See docs/decisions/0106-worker-image.md for why
# this and not debootstrap.
set -euo pipefail

out="${1:?usage: $0 DIR}"
repo="$(cd "$(dirname "$0")/.." && pwd)"

need() { command -v "$1" >/dev/null 2>&1 || { echo "worker-rootfs: $1 not found: $2" >&2; exit 1; }; }
need dpkg "the worker image is assembled from this machine's Debian packages"
need ldd "apt-get install libc-bin"
[ -x /usr/bin/bwrap ] || { echo "worker-rootfs: /usr/bin/bwrap not found: apt-get install bubblewrap" >&2; exit 1; }
[ -x /usr/bin/python3 ] || { echo "worker-rootfs: /usr/bin/python3 not found: apt-get install python3" >&2; exit 1; }

py="$(readlink -f /usr/bin/python3)"
stdlib="$(/usr/bin/python3 -I -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
# The packages that own bwrap, the interpreter and the standard library
# (Debian splits it into a minimal and a full part).
mapfile -t pkgs < <(dpkg -S /usr/bin/bwrap "$py" "$stdlib/os.py" "$stdlib/json/__init__.py" "$stdlib/lib-dynload" 2>/dev/null |
  sed -e 's/: .*//' -e 's/, /\n/g' | sort -u)
[ ${#pkgs[@]} -gt 0 ] || { echo "worker-rootfs: dpkg knows none of the files" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
# A merged /usr (Debian 12 and later) keeps its links, so paths the
# loader and scripts name (/lib64/ld-linux-x86-64.so.2) hold.
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    ln -s "$(readlink "/$d")" "$out/$d"
  fi
done

# copy PATH: the file (or link) at its path, its directory resolved, so a
# path through a merged-/usr link lands in the real directory.
copy() {
  local p="$1" dir
  dir="$(readlink -f "$(dirname "$p")")"
  mkdir -p "$out$dir"
  cp -a "$p" "$out$dir/"
}

for pkg in "${pkgs[@]}"; do
  while IFS= read -r f; do
    case "$f" in
      /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*|/usr/share/bash-completion/*|/usr/share/zsh/*) continue ;;
    esac
    if [ -f "$f" ] || [ -L "$f" ]; then
      [ -d "$f" ] && continue
      copy "$f"
    fi
  done < <(dpkg -L "$pkg")
done
ln -sf "$(basename "$py")" "$out/usr/bin/python3"

# The shared libraries of every program and module copied, and theirs:
# ldd lists the whole closure. Libraries are copied dereferenced under
# the name the loader looks for.
declare -A seen=()
while IFS= read -r -d '' f; do
  while IFS= read -r lib; do
    [ -n "$lib" ] && [ -z "${seen[$lib]:-}" ] || continue
    seen[$lib]=1
    dir="$(readlink -f "$(dirname "$lib")")"
    mkdir -p "$out$dir"
    [ -e "$out$dir/$(basename "$lib")" ] || cp -L "$lib" "$out$dir/"
  done < <(ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}')
done < <(find "$out" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -print0)

# The SDK, where Debian's python3 looks for installed modules, and the
# repository's examples/python and sdk/python, laid out as in a checkout so
# that examples/python/catalog.yaml runs unchanged from /opt/splash.
install -D -m 0644 "$repo/sdk/python/splash_tool.py" "$out/usr/lib/python3/dist-packages/splash_tool.py"
install -D -m 0644 "$repo/sdk/python/splash_tool.py" "$out/opt/splash/sdk/python/splash_tool.py"
for f in "$repo"/examples/python/*; do
  install -D -m 0644 "$f" "$out/opt/splash/examples/python/$(basename "$f")"
done

# bwrap makes its sandboxes in a directory under /tmp.
mkdir -p -m 1777 "$out/tmp"
chmod 1777 "$out/tmp"

# Users by number only, as the image runs them: the worker (65532) and
# the sandbox's nobody (65534).
mkdir -p "$out/etc"
printf 'root:x:0:0:root:/:/usr/sbin/nologin\nsplash:x:65532:65532:splash:/data:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$out/etc/passwd"
printf 'root:x:0:\nsplash:x:65532:\nnogroup:x:65534:\n' >"$out/etc/group"

# No program in the image may gain privileges by its mode.
find "$out" -type f -perm /6000 -exec chmod ug-s {} +

echo "worker-rootfs: ${#pkgs[@]} packages (${pkgs[*]}), ${#seen[@]} libraries, $(du -sh "$out" | cut -f1) in $out"
