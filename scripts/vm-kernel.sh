#!/usr/bin/env bash
# vm-kernel.sh — fetch, unpack and cache a kernel for the qemu test guest (see docs/KERNELS.md).
set -euo pipefail

PROG=${0##*/}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_DIR=${UDSPROBE_VM_CACHE:-$ROOT/.output/vm}
KDIR_ROOT=$VM_DIR/kernels
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
KEYRING=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

usage() {
	cat <<EOF
Usage: $PROG [--refresh] [--modules DIR] [-q] [SPEC]

Fetch, unpack and cache a kernel for scripts/vm-run.sh; print its cache directory.

SPEC (default: debian-6.1):
  debian-5.10       the kernel Debian 11 (bullseye, bullseye-security) linux-image-amd64
                    depends on, e.g. linux-image-5.10.0-NN-amd64
  debian-6.1        the kernel Debian 12 (bookworm, bookworm-security) linux-image-amd64
                    depends on, e.g. linux-image-6.1.0-NN-amd64 (ABI number resolved, not pinned)
  debian-6.12       linux-image-amd64 6.12.x from bookworm-backports, else from trixie
  debian-X.Y-arm64  the same for linux-image-arm64 (a raw arm64 Image, cached as Image, booted
                    by qemu-system-aarch64; tests/vm/static-guest.sh --arch arm64)
  PATH.deb          any Debian kernel image package (linux-image-*.deb)
  PATH              a vmlinuz (bzImage) or vmlinux ELF. Without --modules the kernel must have
                    virtio-pci and 9p (NET_9P, NET_9P_VIRTIO, 9P_FS) built in (=y).

Options:
  --modules DIR     with a vmlinuz/vmlinux SPEC: its modules, either lib/modules/<release>
                    itself or a root containing lib/modules/<release> (depmod is run on a copy)
  --refresh         re-resolve a debian-* SPEC against the archive (new ABI, new build);
                    without it a kernel cached for that SPEC is reused with no network
  -q                quiet: only the cache directory on stdout
  -h, --help        this help

Cache layout (\$UDSPROBE_VM_CACHE, default <repo>/.output/vm): kernels/<release>/ (<release>-img-<hash>/ for a bare image) holds
  vmlinux (decompressed ELF, booted via PVH), vmlinuz (if known), config (if known), release,
  source, modules -> root/lib/modules/<release> (depmod done), .complete.
kernels/<SPEC> is a symlink to the release directory for debian-* SPECs.

Environment: DEBIAN_MIRROR (default $MIRROR), DEBIAN_SECURITY_MIRROR, DEBIAN_KEYRING,
  UDSPROBE_VM_CACHE.
Needs: apt (apt-get), dpkg (dpkg-deb), xz-utils, kmod (depmod), debian-archive-keyring.
EOF
}

QUIET=0
KARCH=amd64	# Debian architecture of the kernel package (debian-*-arm64: arm64)
log() { [ "$QUIET" = 1 ] || printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
need() {
	command -v "$1" >/dev/null 2>&1 ||
		die "'$1' not found: install the Debian package '$2' (apt-get install $2)"
}

# ---- vmlinux extraction (the kernel tree's scripts/extract-vmlinux, for the formats we need) ----

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# extract_vmlinux BZIMAGE OUT: find a compressed payload, decompress it, keep the first that is ELF.
extract_vmlinux() {
	local img=$1 out=$2 tmp=$2.tmp magic tool off
	if is_elf "$img"; then cp "$img" "$out"; return 0; fi
	# magic (as a PCRE byte pattern) : decompressor
	for spec in '\xfd7zXZ\x00:xz -dc' '\x1f\x8b\x08:gzip -dc' '\x02!L\x18:lz4 -dc' \
		'\(\xb5/\xfd:zstd -dcq' 'BZh:bzip2 -dc' '\x5d\x00\x00\x00:xz -dc --format=lzma'; do
		magic=${spec%%:*} tool=${spec#*:}
		command -v "${tool%% *}" >/dev/null 2>&1 || continue
		# byte offsets of the magic; try each (the first hit is normally the payload)
		for off in $(LC_ALL=C grep -aboP "$magic" "$img" 2>/dev/null | cut -d: -f1 | head -5); do
			# trailing data after the stream makes the decompressor complain: ignore its status
			tail -c +$((off + 1)) "$img" | $tool >"$tmp" 2>/dev/null || true
			if [ -s "$tmp" ] && is_elf "$tmp"; then mv "$tmp" "$out"; return 0; fi
		done
	done
	rm -f "$tmp"
	return 1
}

# kernel_release FILE: the release string of a bzImage (header field) or vmlinux (banner).
kernel_release() {
	local img=$1 ptr
	if ! is_elf "$img" && [ "$(dd if="$img" bs=1 skip=514 count=4 2>/dev/null)" = HdrS ]; then
		ptr=$(od -An -tu2 -j 526 -N 2 "$img" | tr -d ' ')
		dd if="$img" bs=1 skip=$((ptr + 512)) count=128 2>/dev/null | tr '\0' '\n' | head -1 |
			cut -d' ' -f1
		return
	fi
	LC_ALL=C grep -aom1 'Linux version [^ ]*' "$img" | head -1 | cut -d' ' -f3
}

# ---- private apt (the machine's own sources are never touched) ----

# apt_env NAME LINES...: set APT=(apt-get args) and APTC=(apt-cache args) for a private state dir.
apt_env() {
	local name=$1; shift
	local d=$VM_DIR/apt/$name
	mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial" "$d/etc"
	printf '%s\n' "$@" >"$d/etc/sources.list"
	local o=(-o "Dir::Etc::SourceList=$d/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::Etc::Preferences=/dev/null" -o Dir::Etc::PreferencesParts=/dev/null
		-o "Dir::State=$d/state" -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root
		-o Acquire::Languages=none -o "APT::Architecture=$KARCH" -o "APT::Architectures=$KARCH")
	APT=(apt-get -q "${o[@]}")
	APTC=(apt-cache "${o[@]}")
	APT_DIR=$d
}

apt_update() {
	log "apt-get update ($APT_DIR/etc/sources.list)"
	"${APT[@]}" update >"$APT_DIR/update.log" 2>&1 ||
		die "apt-get update failed for $(tr '\n' ';' <"$APT_DIR/etc/sources.list")
  see $APT_DIR/update.log; is $MIRROR reachable? (set DEBIAN_MIRROR to use another mirror)"
}

# resolve_image: the linux-image-<abi>-<arch> package linux-image-<arch> depends on, or nothing.
resolve_image() {
	"${APTC[@]}" depends "linux-image-$KARCH" 2>/dev/null |
		sed -n "s/^ *Depends: \\(linux-image-[0-9][^ ]*-$KARCH\\)\$/\\1/p" | head -1
}

# fetch_debian SPEC: download the .deb for a debian-* SPEC; print its path.
fetch_debian() {
	local spec=${1%-arm64} pkg ver src
	local -a candidates
	case $spec in
	debian-5.10)
		candidates=("bullseye|deb [signed-by=$KEYRING] $MIRROR bullseye main
deb [signed-by=$KEYRING] $MIRROR bullseye-updates main
deb [signed-by=$KEYRING] $SECURITY_MIRROR bullseye-security main"
			"bullseye-main|deb [signed-by=$KEYRING] $MIRROR bullseye main
deb [signed-by=$KEYRING] $MIRROR bullseye-updates main") ;;
	debian-6.1)
		candidates=("bookworm|deb [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bookworm-updates main
deb [signed-by=$KEYRING] $SECURITY_MIRROR bookworm-security main") ;;
	debian-6.12)
		candidates=("bookworm-backports|deb [signed-by=$KEYRING] $MIRROR bookworm-backports main"
			"trixie|deb [signed-by=$KEYRING] $MIRROR trixie main
deb [signed-by=$KEYRING] $SECURITY_MIRROR trixie-security main") ;;
	esac
	local want=${spec#debian-}
	for src in "${candidates[@]}"; do
		apt_env "${src%%|*}-$KARCH" "${src#*|}"
		apt_update
		pkg=$(resolve_image)
		[ -n "$pkg" ] || { log "${src%%|*}: no linux-image-$KARCH dependency found"; continue; }
		ver=${pkg#linux-image-}
		case $ver in
		"$want".*) ;;
		*) log "${src%%|*}: $pkg is not $want.x, trying the next suite"; continue ;;
		esac
		log "${src%%|*}: linux-image-$KARCH -> $pkg; downloading"
		rm -f "$APT_DIR"/dl/*.deb
		mkdir -p "$APT_DIR/dl"
		if ! (cd "$APT_DIR/dl" && "${APT[@]}" download "$pkg") >"$APT_DIR/download.log" 2>&1; then
			# e.g. a security suite that lists a package this mirror does not carry
			log "${src%%|*}: apt-get download $pkg failed (see $APT_DIR/download.log), trying the next suite"
			continue
		fi
		ls "$APT_DIR"/dl/"$pkg"_*.deb
		return 0
	done
	die "no $want.x kernel found for $spec in ${candidates[*]%%|*}"
}

# ---- unpacking into the cache ----

# install_deb DEB: unpack a kernel image .deb into kernels/<release>/; print that dir.
install_deb() {
	local deb=$1 tmp rel d img
	need dpkg-deb dpkg
	rel=$(dpkg-deb -f "$deb" Package 2>/dev/null) || die "$deb: not a .deb package"
	rel=${rel#linux-image-}
	d=$KDIR_ROOT/$rel
	if [ -f "$d/.complete" ] && grep -qF "($(basename "$deb"))" "$d/source" 2>/dev/null &&
		[ "$(cat "$d/deb.sha256" 2>/dev/null)" = "$(sha256sum <"$deb" | cut -d' ' -f1)" ]; then
		printf '%s\n' "$d"
		return 0
	fi
	tmp=$(mktemp -d "$KDIR_ROOT/.unpack.XXXXXX")
	log "unpacking $(basename "$deb")"
	dpkg-deb -x "$deb" "$tmp/root" || { rm -rf "$tmp"; die "dpkg-deb -x $deb failed (is it a .deb?)"; }
	img=$(ls "$tmp"/root/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$img" ] || { rm -rf "$tmp"; die "$deb has no /boot/vmlinuz-*: not a kernel image package"; }
	rel=${img##*/vmlinuz-}
	[ -d "$tmp/root/lib/modules/$rel" ] || { rm -rf "$tmp"; die "$deb has no lib/modules/$rel"; }
	d=$KDIR_ROOT/$rel
	rm -rf "$d"
	mkdir -p "$d"
	mv "$tmp/root/lib" "$d/root.lib"
	mkdir -p "$d/root" && mv "$d/root.lib" "$d/root/lib"
	cp "$img" "$d/vmlinuz"
	[ -f "$tmp/root/boot/config-$rel" ] && cp "$tmp/root/boot/config-$rel" "$d/config"
	[ -f "$tmp/root/boot/System.map-$rel" ] && cp "$tmp/root/boot/System.map-$rel" "$d/System.map"
	printf '%s (%s)\n' "$(dpkg-deb -f "$deb" Package Version | paste -sd' ')" "$(basename "$deb")" >"$d/source"
	sha256sum <"$deb" | cut -d' ' -f1 >"$d/deb.sha256"
	rm -rf "$tmp"
	finish "$d" "$rel"
}

# install_image IMG [MODDIR]: cache a bare vmlinuz/vmlinux, with modules if given.
install_image() {
	local img=$1 mods=${2:-} rel d
	[ -f "$img" ] || die "$img: no such file"
	rel=$(kernel_release "$img")
	[ -n "$rel" ] || die "$img: cannot read the kernel release (not a bzImage or vmlinux?)"
	# named by content, so a bare image never replaces a packaged kernel of the same release
	local id
	id=$(cat "$img" ${mods:+$(find "$mods" -maxdepth 1 -name modules.order)} | sha256sum | cut -c1-8)
	d=$KDIR_ROOT/$rel-img-$id
	if [ -f "$d/.complete" ]; then printf '%s\n' "$d"; return 0; fi
	rm -rf "$d"
	mkdir -p "$d"
	if is_elf "$img"; then cp "$img" "$d/vmlinux"; else cp "$img" "$d/vmlinuz"; fi
	if [ -n "$mods" ]; then
		[ -d "$mods" ] || die "--modules $mods: not a directory"
		if [ -d "$mods/lib/modules/$rel" ]; then mods=$mods/lib/modules/$rel; fi
		[ -f "$mods/modules.order" ] || [ -f "$mods/modules.builtin" ] ||
			die "--modules $mods: no modules.order/modules.builtin: expected lib/modules/$rel"
		mkdir -p "$d/root/lib/modules"
		cp -a "$mods" "$d/root/lib/modules/$rel"
	fi
	echo "$img${mods:+ + modules $mods}" >"$d/source"
	finish "$d" "$rel"
}

finish() {
	local d=$1 rel=$2
	echo "$rel" >"$d/release"
	if [ -d "$d/root/lib/modules/$rel" ]; then
		need depmod kmod
		depmod -b "$d/root" "$rel" || die "depmod -b $d/root $rel failed"
		ln -sfn "root/lib/modules/$rel" "$d/modules"
	fi
	if [ "$(od -An -tx1 -j 56 -N 4 "$d/vmlinuz" 2>/dev/null | tr -d ' ')" = 41524d64 ]; then
		# an arm64 Image ("ARMd" at 56): qemu-system-aarch64 boots it as it is
		cp "$d/vmlinuz" "$d/Image"
		echo arm64 >"$d/arch"
	elif [ ! -f "$d/vmlinux" ]; then
		log "decompressing vmlinuz -> vmlinux"
		extract_vmlinux "$d/vmlinuz" "$d/vmlinux" ||
			die "no ELF vmlinux found inside $d/vmlinuz (unknown compression?); vm-run.sh can still boot the bzImage with --bzimage"
	fi
	touch "$d/.complete"
	printf '%s\n' "$d"
}

main() {
	local refresh=0 mods='' spec=''
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help) usage; exit 0 ;;
		--refresh) refresh=1 ;;
		-q) QUIET=1 ;;
		--modules) [ $# -ge 2 ] || die "--modules needs a directory"; mods=$2; shift ;;
		--modules=*) mods=${1#*=} ;;
		--) shift; break ;;
		-*) die "unknown option '$1' (see --help)" ;;
		*) [ -z "$spec" ] || die "only one SPEC allowed (got '$spec' and '$1')"; spec=$1 ;;
		esac
		shift
	done
	[ $# -eq 0 ] || { [ -z "$spec" ] && [ $# -eq 1 ] && spec=$1; } || die "only one SPEC allowed"
	spec=${spec:-debian-6.1}
	mkdir -p "$KDIR_ROOT"
	need xz xz-utils
	# one writer at a time (parallel CI jobs sharing UDSPROBE_VM_CACHE); cached SPECs skip the wait
	if ! { case $spec in debian-*) [ "$refresh" = 0 ] && [ -f "$KDIR_ROOT/$spec/.complete" ] ;; *) false ;; esac; }; then
		exec 9>"$KDIR_ROOT/.lock"
		flock 9 || die "cannot lock $KDIR_ROOT/.lock"
	fi

	case $spec in
	debian-5.10 | debian-6.1 | debian-6.12 | debian-5.10-arm64 | debian-6.1-arm64 | debian-6.12-arm64)
		case $spec in *-arm64) KARCH=arm64 ;; esac
		local link=$KDIR_ROOT/$spec
		if [ "$refresh" = 0 ] && [ -f "$link/.complete" ]; then
			readlink -f "$link"
			return 0
		fi
		need apt-get apt
		[ -r "$KEYRING" ] || die "$KEYRING missing: install debian-archive-keyring (or set DEBIAN_KEYRING)"
		local deb d rel
		deb=$(fetch_debian "$spec")
		d=$(install_deb "$deb")
		rm -f "$deb"
		ln -sfn "$(basename "$d")" "$link"
		printf '%s\n' "$d"
		;;
	*.deb)
		[ -f "$spec" ] || die "$spec: no such file"
		install_deb "$(readlink -f "$spec")"
		;;
	*)
		[ -e "$spec" ] || die "unknown SPEC '$spec': use debian-5.10, debian-6.1, debian-6.12, a .deb or a vmlinuz/vmlinux path"
		install_image "$(readlink -f "$spec")" "$mods"
		;;
	esac
}

main "$@"
