#!/usr/bin/env bash
# Builds one development tool (controller-gen, golangci-lint, helm) from its pinned
# Go module into OUT, or takes it from the cache the machine's clones share, by the
# stamp of the module's go.mod and go.sum, the package and the ldflags: linking the
# three takes over a minute in a fresh clone even with a warm Go build cache. The
# shared cache is cluster-bins.sh's ($VIRT_OPERATOR_SHARED_CACHE, default
# ${XDG_CACHE_HOME:-~/.cache}/virt-operator; empty: build in every clone).
# Usage: tool-bin.sh OUT MODULE_DIR PACKAGE [LDFLAGS]
set -euo pipefail
out=$1 module=$2 pkg=$3 ldflags=${4:-}
name=$(basename "$out")
stamp=$(cat "$module/go.mod" "$module/go.sum" <(echo "$pkg $ldflags") | sha256sum | cut -c1-16)
shared_root=${VIRT_OPERATOR_SHARED_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/virt-operator}
shared=${shared_root:+$shared_root/tools}
mkdir -p "$(dirname "$out")"
# A link to the shared copy keeps that copy's (older) time, so make finds the
# tool older than its go.mod and asks again: the tool is touched once in place,
# and a second ask (make test's inner make) finds it current.
if [[ -n "$shared" && "$out" -ef "$shared/$name-$stamp" ]]; then
  touch "$out"
  echo "tools: $name is current"
  exit 0
fi
if [[ -n "$shared" && -x "$shared/$name-$stamp" ]]; then
  ln -f "$shared/$name-$stamp" "$out.tmp" 2>/dev/null || cp "$shared/$name-$stamp" "$out.tmp"
  mv "$out.tmp" "$out"
  touch "$out"
  echo "tools: $name taken from $shared"
  exit 0
fi
(cd "$module" && go build -ldflags "$ldflags" -o "$out.tmp" "$pkg")
mv "$out.tmp" "$out"
if [[ -n "$shared" ]]; then
  mkdir -p "$shared"
  cp "$out" "$shared/$name-$stamp.tmp.$$" && mv "$shared/$name-$stamp.tmp.$$" "$shared/$name-$stamp"
fi
