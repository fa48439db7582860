#!/usr/bin/env bash
# Generates the CRD schemas of each supported KubeVirt release from that release's
# kubevirt.io/api types, as KubeVirt's own generator does: controller-gen on each
# package of packages.txt in order, into one folder, so when two versions of a kind
# are generated the later package's file wins (upstream then uses that schema for
# every served version of the CRD). The output is committed under
# internal/release/data/<release>/schemas; the KubeVirt CRD (shipped with the
# operator, from api/v1) and the DataVolumeTemplateSpec helper are left out.
# Usage: schemas.sh CONTROLLER_GEN
set -euo pipefail
controller_gen=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for module in "$root"/hack/kubevirt-api/v*/; do
  release=$(basename "$module")
  out="$root/internal/release/data/$release/schemas"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  while read -r pkg; do
    opts=crd
    [[ $pkg == core/v1 ]] && opts=crd:allowDangerousTypes=true
    (cd "$module" && "$controller_gen" "$opts" paths="kubevirt.io/api/$pkg" output:crd:dir="$tmp")
  done < "$module/packages.txt"
  rm -f "$tmp"/kubevirt.io_kubevirts.yaml "$tmp"/kubevirt.io_datavolumetemplatespecs.yaml
  rm -rf "$out" && mkdir -p "$out" && cp "$tmp"/*.yaml "$out"/
  rm -rf "$tmp"
done
