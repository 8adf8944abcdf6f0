#!/usr/bin/env bash
# vm-arm64-root.sh — build (and cache) the Debian 12 arm64 userland the arm64 test guests boot
# into (vm-run.sh shares it over 9p as their root, as it shares the host's / with amd64 guests).
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${UDSPROBE_VM_CACHE:-$HERE/../.output/vm}/arm64
# what the guest tests run: python3 + pytest (the tests), gcc + libc6-dev (the helpers they
# compile), grep/sed/mawk/findutils (tests/vm/guest-suite.sh), iproute2/procps/util-linux/kmod
# (ss, ip, pgrep, taskset, unshare, nsenter, modprobe), bpftool (the BPF objects a run holds),
# libbpf1/libelf1/zlib1g/libncursesw6 (the dynamically linked `make ARCH=arm64` udsprobe), nginx, php8.2-fpm,
# wrk and prometheus (promtool) for test_backlog.py, busybox-static (the initramfs's busybox),
# base-passwd (root, nobody)
PACKAGES=(dash bash coreutils debianutils grep sed mawk findutils base-files base-passwd
	python3 python3-pytest gcc libc6-dev iproute2 procps util-linux kmod bpftool libbpf1 libelf1
	zlib1g libncursesw6 nginx php8.2-fpm wrk prometheus busybox-static)

usage() {
	cat <<EOF
Usage: $PROG [-q]

Print the path of an arm64 root filesystem (Debian 12: ${PACKAGES[*]}),
built on first use in $CACHE/root-<hash>/ (the hash covers this script).
The .debs come from the host's apt sources for the arm64 architecture (apt-get --download-only
with an empty dpkg status, so apt resolves every dependency; cached in $CACHE/debs/) and are
unpacked with dpkg-deb, merged /usr as Debian 12 has it. No maintainer script runs (they would
need an arm64 CPU): /etc/passwd and /etc/group come from base-passwd's master files; nothing
else the tests use needs one but awk (linked to mawk). Needs: dpkg --add-architecture arm64; apt-get update
(scripts/install-deps.sh). Options: -q quiet, -h help.
EOF
}

QUIET=0
log() { [ "$QUIET" = 1 ] || printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

apt_arm64() {	# apt_arm64 ARCHIVES_DIR APT-GET-ARGS...: apt-get for arm64 alone, nothing installed
	local dir=$1
	shift
	apt-get -q -y -o APT::Architecture=arm64 -o APT::Architectures=arm64 \
		-o Dir::State::status="$CACHE/state/status" -o Dir::Cache::archives="$dir" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root --no-install-recommends "$@"
}

build() {	# build OUT: download, unpack, finish the root in OUT.tmp, rename it to OUT
	local out=$1 tmp=$1.tmp deb debs
	mkdir -p "$CACHE/debs/partial" "$CACHE/state/none/partial"
	: >"$CACHE/state/status"
	# the files the list resolves to now (an older version of one may still be cached): with
	# an empty archive dir --print-uris names them all
	debs=$(apt_arm64 "$CACHE/state/none" --print-uris install "${PACKAGES[@]}" 2>&1 |
		awk '/^'\''/ {print $2}')
	[ -n "$debs" ] || die "apt-get resolves no arm64 packages (dpkg --add-architecture arm64; apt-get update)"
	log "downloading $(wc -w <<<"$debs") arm64 packages (${PACKAGES[*]} and their dependencies) into $CACHE/debs"
	apt_arm64 "$CACHE/debs" install --download-only "${PACKAGES[@]}" >"$CACHE/state/apt.log" 2>&1 ||
		die "apt-get could not download the arm64 packages: $(tail -n 3 "$CACHE/state/apt.log")"
	rm -rf "$tmp"
	mkdir -p "$tmp/usr/bin" "$tmp/usr/sbin" "$tmp/usr/lib"
	ln -s usr/bin "$tmp/bin" && ln -s usr/sbin "$tmp/sbin" && ln -s usr/lib "$tmp/lib"
	log "unpacking them into $out"
	for deb in $debs; do
		[ -f "$CACHE/debs/$deb" ] || die "$deb was not downloaded"
		dpkg-deb --fsys-tarfile "$CACHE/debs/$deb" | tar -x --keep-directory-symlink -C "$tmp" ||
			die "cannot unpack $deb"
	done
	cp "$tmp/usr/share/base-passwd/passwd.master" "$tmp/etc/passwd"
	cp "$tmp/usr/share/base-passwd/group.master" "$tmp/etc/group"
	ln -s mawk "$tmp/usr/bin/awk"	# mawk's postinst makes this alternative
	for f in python3 gcc nginx busybox awk grep; do
		[ -e "$tmp/usr/bin/$f" ] || [ -e "$tmp/usr/sbin/$f" ] || die "no $f in the unpacked root"
	done
	touch "$tmp/.complete"
	rm -rf "$out" && mv "$tmp" "$out"
}

main() {
	case ${1:-} in
	-h | --help) usage; exit 0 ;;
	-q) QUIET=1 ;;
	'') ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "apt-get and dpkg-deb needed (Debian)"
	local hash out
	hash=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
	mkdir -p "$CACHE"
	out=$(cd "$CACHE" && pwd -P)/root-$hash
	# two guests may start at once: one builds, the other waits for it
	exec 9>"$CACHE/root.lock"
	flock 9
	if [ ! -f "$out/.complete" ]; then
		build "$out"
		find "$CACHE" -maxdepth 1 -name 'root-*' ! -name "${out##*/}" -exec rm -rf {} +
	fi
	printf '%s\n' "$out"
}

main "$@"
