#!/usr/bin/env bash
# Builds Kueue v0.19.1 with one change, tools/hack/kueue-multikueue-qps.patch:
# its MultiKueue worker clients at 1,000 QPS / 1,000 burst, as they run
# after v0.19.1 with kueue#15280's gate on and kueue#15206's default
# clientConnection (the manager client keeps v0.19.1's 300 / 500 unless the
# Configuration raises it, as the bench's multikueue-all-qps does). It patches a copy of the module cache's source
# under _output/ and builds it with hack/tools' go.mod and a replace, so
# that every dependency is the one bin/kueue was built with. The binary is
# cached: a second run builds nothing unless the patch changed.
#
# Usage: tools/hack/build-kueue-multikueue-qps.sh [output binary]
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
patch_file="$root/tools/hack/kueue-multikueue-qps.patch"
tools="$root/hack/tools"
version="$(awk '$1 == "sigs.k8s.io/kueue" { print $2; exit }' "$tools/go.mod")"
out="${1:-$root/bin/kueue-$version-multikueue-qps1000}"
work="$root/_output/kueue-multikueue-qps"
sum="$(sha256sum "$patch_file" | cut -d' ' -f1)"

if [[ -x "$out" && "$(cat "$out.patch-sha256" 2>/dev/null)" == "$sum" ]]; then
	echo "$out is up to date"
	exit 0
fi

src="$(go env GOMODCACHE)/sigs.k8s.io/kueue@$version"
if [[ ! -d "$src" ]]; then
	(cd "$tools" && go mod download sigs.k8s.io/kueue)
fi
rm -rf "$work"
mkdir -p "$work"
# A copy of Kueue's module source, patched.
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
patch -d "$work/src" -p1 --no-backup-if-mismatch <"$patch_file"

# hack/tools' go.mod and go.sum, with Kueue replaced by the patched copy:
# every other module stays at the version bin/kueue was built with.
cp "$tools/go.mod" "$work/tools.mod"
cp "$tools/go.sum" "$work/tools.sum"
echo "replace sigs.k8s.io/kueue => $work/src" >>"$work/tools.mod"

mkdir -p "$(dirname "$out")"
(cd "$tools" && go build -modfile "$work/tools.mod" -o "$out" sigs.k8s.io/kueue/cmd/kueue)
echo "$sum" >"$out.patch-sha256"
echo "Built $out: Kueue $version + worker clients at 1000 QPS"
