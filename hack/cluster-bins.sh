#!/usr/bin/env bash
# Builds the sandbox's cluster binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from the pinned Go modules in hack/cluster and hack/kwok into
# $CLUSTER_BINS (default .cache/cluster-bins, git-ignored). A binary is rebuilt only when
# it is missing or when the stamp of its module (go.mod, go.sum, this script) changed.
#
# Linking them takes over a minute even with a warm Go build cache, so every built
# binary is also kept, by stamp, in a cache shared by the machine's clones, as Go's
# own build cache is: $VIRT_OPERATOR_SHARED_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/virt-operator; set it empty to build in every clone).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${CLUSTER_BINS:-$root/.cache/cluster-bins}
mkdir -p "$out"
shared_root=${VIRT_OPERATOR_SHARED_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/virt-operator}
shared=${shared_root:+$shared_root/cluster-bins}
[[ -z "$shared" ]] || mkdir -p "$shared"

k8s_version=v1.37.2
version_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${k8s_version} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=37 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

stamp_of() { # module dir
  cat "$root/hack/$1/go.mod" "$root/hack/$1/go.sum" "$0" | sha256sum | cut -c1-16
}

build() { # module, binary name, package, ldflags
  local module=$1 name=$2 pkg=$3 ldflags=$4
  local stamp; stamp=$(stamp_of "$module")
  if [[ -x "$out/$name" && -f "$out/$name.stamp" && "$(cat "$out/$name.stamp")" == "$stamp" ]]; then
    echo "cluster-bins: $name is current"
    return
  fi
  if [[ -n "$shared" && -x "$shared/$name-$stamp" ]]; then
    # A hard link where the file system allows it, else a copy; a rename puts it in place.
    ln -f "$shared/$name-$stamp" "$out/$name.tmp" 2>/dev/null || cp "$shared/$name-$stamp" "$out/$name.tmp"
    mv "$out/$name.tmp" "$out/$name"
    echo "$stamp" > "$out/$name.stamp"
    echo "cluster-bins: $name taken from $shared"
    return
  fi
  echo "cluster-bins: building $name from $pkg"
  local start=$SECONDS
  (cd "$root/hack/$module" && go build -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "$stamp" > "$out/$name.stamp"
  echo "cluster-bins: built $name in $((SECONDS - start))s"
  if [[ -n "$shared" ]]; then
    cp "$out/$name" "$shared/$name-$stamp.tmp.$$" && mv "$shared/$name-$stamp.tmp.$$" "$shared/$name-$stamp"
  fi
}

build cluster kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$version_ldflags"
build cluster kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$version_ldflags"
build cluster kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$version_ldflags"
build cluster etcd go.etcd.io/etcd/server/v3 "-s -w"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0"
echo "cluster-bins: all binaries in $out"
