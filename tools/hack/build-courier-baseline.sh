#!/usr/bin/env bash
# Builds Courier at another commit as bin/baseline/courier, for
# `courier-bench compare --systems courier,baseline`: the code before a
# change and after it, measured in one run. It checks the commit out in a
# temporary git worktree, so the work tree is left alone.
#
# Usage: tools/hack/build-courier-baseline.sh <commit> [output binary]
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 <commit> [output binary]" >&2
	exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
commit="$(git -C "$root" rev-parse --verify "$1^{commit}")"
# Named courier, as the manager's audit log tells programs by the user
# agent client-go takes from the binary's name.
out="${2:-$root/bin/baseline/courier}"
work="$(mktemp -d)"
cleanup() {
	git -C "$root" worktree remove --force "$work/tree" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$(dirname "$out")"
git -C "$root" worktree add --quiet --detach "$work/tree" "$commit"
# The commit goes where `make build` puts it, which `--version` prints and
# the bench reports.
(cd "$work/tree" && go build -ldflags "-X github.com/courierdev/courier/pkg/version.revision=$commit" -o "$out" ./cmd/courier)
# An older commit's binary may have no --version, and this machine builds
# without VCS stamps: the commit beside it names what it is for the report.
echo "$commit" > "$out.commit"
echo "Built $out from ${commit:0:12}"
