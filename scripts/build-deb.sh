#!/usr/bin/env bash
# scripts/build-deb.sh — the Debian package, built with Debian's own tooling (debhelper,
# dpkg-buildpackage) from a copy of the tracked tree with scripts/debian/ as its debian/ (the
# top level stays the project's). Writes .output/deb/udsprobe_VERSION_ARCH.deb and prints its
# path. Needs: debhelper, dpkg-dev and the build dependencies (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

out=.output/deb
version=0.1.0
if git rev-parse -q --verify HEAD >/dev/null 2>&1; then
	# a later commit is a later version: 0.1.0+git<count>.<hash>
	version+="+git$(git rev-list --count HEAD).$(git rev-parse --short HEAD)"
fi
rm -rf "$out"
mkdir -p "$out/src"
# what git tracks, as the tree is now (uncommitted edits included), without .output
git ls-files -z --cached --others --exclude-standard | grep -zv '^\.output/' |
	xargs -0 cp --parents -t "$out/src" 2>/dev/null || true
cp -r scripts/debian "$out/src/debian"
cat >"$out/src/debian/changelog" <<CHANGES
udsprobe ($version) unstable; urgency=medium

  * Built from the source tree by scripts/build-deb.sh.

 -- udsprobe developers <udsprobe@localhost>  $(date -R)
CHANGES
(cd "$out/src" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >../build.log 2>&1) || {
	echo "build-deb: dpkg-buildpackage failed; the last lines of $out/build.log:" >&2
	tail -20 "$out/build.log" >&2
	exit 1
}
deb=$(ls "$out"/udsprobe_"$version"_*.deb)
echo "$deb"
