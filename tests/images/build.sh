#!/bin/bash
# build.sh - builds the container images the tests use, once per machine.
#
#   tests/images/build.sh busybox   seconds: busybox.{sqsh,sif}, busybox-docker.tar,
#                                   busybox-oci.tar, busybox-rootfs/,
#                                   busybox-singularity.sif (and, where
#                                   /opt/singularity has a real Singularity,
#                                   busybox-singularity-real.sif)
#   tests/images/build.sh torch     minutes: debootstrap minbase bookworm + python3-torch
#                                   -> torch.sqsh, torch.sif, torch-docker.tar
#   tests/images/build.sh registry  a minute or two, after busybox and torch (built first if
#                                   needed): torch-layers-docker.tar (the torch image in 3
#                                   layers: Debian, python3, torch), busybox-multiarch-oci.tar
#                                   (an index: linux/amd64 and linux/arm64/v8), and registry/,
#                                   a docker-registry's storage with them pushed (reglib.sh)
#   tests/images/build.sh mpi       minutes, on its own (no other set uses it): debootstrap
#                                   minbase bookworm + Debian's Open MPI and MPICH, and
#                                   /usr/local/bin/allreduce-openmpi, allreduce-mpich
#                                   (mpi_allreduce.c, compiled in the image) -> mpi.sqsh
#   tests/images/build.sh all       busybox, torch and registry (so does
#                                   `build.sh busybox torch registry`); not mpi
#   tests/images/build.sh path NAME prints the path of one image (no build)
#   tests/images/build.sh mirror    prints the Debian mirror a torch build uses
#
# Images live in $CTRUN_TEST_IMAGES (default /var/cache/ctrun-tests/images) and
# survive between runs.  Each set carries a stamp: the hash of the shell
# functions and tools that make it, so editing the recipe rebuilds it and
# nothing else does.  Concurrent callers serialise on a flock per set; every
# file is written under a temporary name and renamed, so a killed build never
# leaves a file that looks finished.  Needs root (debootstrap, chroot).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=chroot.sh
. "$here/chroot.sh"
out=${CTRUN_TEST_IMAGES:-/var/cache/ctrun-tests/images}
suite=bookworm

say() { printf 'build.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# The hash of what makes a set: these functions' text and the converters.
recipe_hash() {
	{ for f in "$@"; do declare -f "$f"; done
	  cat "$here/mksif.py" "$here/mkdocker.py"; } | sha256sum | cut -c1-16
}

busybox_rootfs() {
	local r=$1 bb
	bb=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
	file -L "$bb" | grep -q 'statically linked' ||
		die "$bb is not static (apt-get install busybox-static)"
	mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,proc,sys,dev,mnt,opt/old,home,var/tmp}
	chmod 1777 "$r/tmp" "$r/var/tmp"
	cp "$bb" "$r/bin/busybox"
	# Applet links, the way `busybox --install` lays them out.
	local a
	while read -r a; do
		[ "$a" = bin/busybox ] || ln -sf /bin/busybox "$r/$a"
	done < <("$r/bin/busybox" --list-full)
	[ -e "$r/bin/sh" ] || ln -s /bin/busybox "$r/bin/sh"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
	printf 'PATH=/usr/sbin:/usr/bin:/sbin:/bin\nCTRUN_IMAGE_ENV=busybox\n' >"$r/etc/environment"
	echo ctrun-busybox >"$r/etc/hostname"
	: >"$r/etc/hosts"; : >"$r/etc/resolv.conf"
	echo 'from the first layer' >"$r/etc/deleted-by-layer2"
	echo 'old' >"$r/opt/old/a"
	# A device node, as debootstrap leaves in /dev: an unprivileged unpack must skip it.
	mknod -m 666 "$r/dev/null" c 1 3
	echo hello >"$r/etc/motd"
	ln "$r/etc/motd" "$r/etc/motd.hardlink"
	# Escape bait for the runtime tests: binds onto these must stay in the image.
	ln -s /etc "$r/mnt/evil"
	ln -s ../../../../../../etc "$r/mnt/evil-rel"
}

# The second layer of the archive formats: adds a file, deletes one of layer 1
# (whiteout) and replaces a directory's contents (opaque).
busybox_layer2() {
	local l=$1
	mkdir -p "$l/etc" "$l/opt/old"
	echo 'from the second layer' >"$l/etc/layer2"
	: >"$l/etc/.wh.deleted-by-layer2"
	: >"$l/opt/old/.wh..wh..opq"
	echo 'new' >"$l/opt/old/b"
}

# The SIF that Singularity built: its recipe and layout (sif.sh).
# shellcheck source=tests/images/sif.sh
. "$here/sif.sh"

build_busybox() {
	local h tmp
	h=$(recipe_hash busybox_rootfs busybox_layer2 build_busybox sif_docker_env sif_environment \
		sif_payload singularity_tree build_real_sif)
	# Where a real Singularity appears, its build is part of the set.
	[ ! -x /opt/singularity/bin/singularity ] || h=$h+real-sif
	if [ "$(cat "$out/busybox.stamp" 2>/dev/null)" = "$h" ]; then
		say "busybox images up to date ($h)"; return 0
	fi
	say "building busybox images ($h)"
	tmp=$(mktemp -d "$out/.busybox.XXXXXX")
	busybox_rootfs "$tmp/rootfs"
	busybox_layer2 "$tmp/layer2"
	rm -f "$out/busybox.stamp"
	mksquashfs "$tmp/rootfs" "$tmp/busybox.sqsh" -noappend -all-root -quiet -no-progress >/dev/null
	python3 "$here/mksif.py" "$tmp/busybox.sqsh" "$tmp/busybox.sif"
	cp -a "$tmp/rootfs" "$tmp/sifsrc"
	sif_payload "$tmp/sifsrc"
	cp -a "$tmp/sifsrc" "$tmp/sifroot"
	singularity_tree "$tmp/sifroot"
	mksquashfs "$tmp/sifroot" "$tmp/busybox-singularity.sqsh" -noappend -all-root -quiet \
		-no-progress >/dev/null
	python3 "$here/mksif.py" "$tmp/busybox-singularity.sqsh" "$tmp/busybox-singularity.sif"
	rm -f "$out/busybox-singularity-real.sif"
	if [ -x /opt/singularity/bin/singularity ] && ! build_real_sif "$tmp"; then
		say "warning: singularity build of busybox-singularity-real.sif failed"
	fi
	python3 "$here/mkdocker.py" --format docker --tag ctrun-test/busybox:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env CTRUN_IMAGE_ENV=busybox \
		"$tmp/busybox-docker.tar" "$tmp/rootfs" "$tmp/layer2"
	python3 "$here/mkdocker.py" --format oci --tag ctrun-test/busybox:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env CTRUN_IMAGE_ENV=busybox \
		"$tmp/busybox-oci.tar" "$tmp/rootfs" "$tmp/layer2"
	for f in busybox.sqsh busybox.sif busybox-docker.tar busybox-oci.tar \
		busybox-singularity.sif; do
		mv -f "$tmp/$f" "$out/$f"
	done
	[ ! -f "$tmp/busybox-singularity-real.sif" ] ||
		mv -f "$tmp/busybox-singularity-real.sif" "$out/busybox-singularity-real.sif"
	rm -rf "$out/busybox-rootfs"
	mv "$tmp/rootfs" "$out/busybox-rootfs"
	rm -rf "$tmp"
	echo "$h" >"$out/busybox.stamp"
}

# debian_mirror: sets mirror to CTRUN_DEBIAN_MIRROR, else to the mirror this
# machine's apt uses for $suite (a site's local mirror: apt_mirror.py), else
# to Debian's redirector; mirror_from says which.
debian_mirror() {
	local found
	if [ -n "${CTRUN_DEBIAN_MIRROR:-}" ]; then
		mirror=$CTRUN_DEBIAN_MIRROR mirror_from=CTRUN_DEBIAN_MIRROR
	elif found=$(python3 "$here/apt_mirror.py" "$suite") && [ -n "$found" ]; then
		mirror=${found%%$'\t'*} mirror_from="this machine's apt sources, ${found#*$'\t'}"
	else
		mirror=http://deb.debian.org/debian
		mirror_from="the default: no $suite main entry in this machine's apt sources"
	fi
}

# The torch root file system: Debian's own PyTorch, nothing from pip.
torch_rootfs() {
	local r=$1 mirror mirror_from
	debian_mirror
	say "debootstrap --variant=minbase $suite from $mirror ($mirror_from; a few minutes)"
	# Own mount namespace: whatever debootstrap or a postinst mounts in the
	# target dies with it, even if this script is killed.
	if ! unshare --mount --propagation private \
		debootstrap --variant=minbase "$suite" "$r" "$mirror" >"$r.log" 2>&1; then
		tail -5 "$r.log" >&2
		die "debootstrap failed (full log $r.log); can this machine reach $mirror? (set CTRUN_DEBIAN_MIRROR)"
	fi
	say "installing python3-torch in the image"
	if ! { image_run "$r" apt-get -q update &&
		image_run "$r" apt-get -q -y --no-install-recommends \
			install python3-torch python3-numpy; } >>"$r.log" 2>&1; then
		tail -5 "$r.log" >&2
		die "apt-get install python3-torch failed in the image (full log $r.log)"
	fi
	rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
	printf 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCTRUN_IMAGE_ENV=torch\n' \
		>"$r/etc/environment"
	rm -f "$r.log"
}

build_torch() {
	local h hs tmp rootfs=
	hs=$(recipe_hash torch_rootfs image_run)
	h=$(recipe_hash torch_rootfs image_run build_torch)
	if [ "$(cat "$out/torch.stamp" 2>/dev/null)" = "$h" ]; then
		say "torch images up to date ($h)"; return 0
	fi
	rm -f "$out/torch.stamp"
	tmp=$(mktemp -d "$out/.torch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# The squashfs is the slow part: keep it when only the converters changed.
	if [ "$(cat "$out/torch.sqsh.stamp" 2>/dev/null)" != "$hs" ] || [ ! -f "$out/torch.sqsh" ]; then
		local t0=$SECONDS
		torch_rootfs "$tmp/rootfs"
		say "mksquashfs torch.sqsh"
		mksquashfs "$tmp/rootfs" "$tmp/torch.sqsh" -noappend -quiet -no-progress >/dev/null
		rm -f "$out/torch.sqsh.stamp"
		mv -f "$tmp/torch.sqsh" "$out/torch.sqsh"
		echo "$hs" >"$out/torch.sqsh.stamp"
		rootfs=$tmp/rootfs
		say "torch.sqsh built in $((SECONDS - t0)) s ($(du -h "$out/torch.sqsh" | cut -f1))"
	fi
	if [ -z "$rootfs" ]; then
		say "unpacking torch.sqsh for the converters"
		unsquashfs -no-progress -d "$tmp/rootfs" "$out/torch.sqsh" >/dev/null
		rootfs=$tmp/rootfs
	fi
	say "mksif.py torch.sif"
	python3 "$here/mksif.py" "$out/torch.sqsh" "$tmp/torch.sif"
	mv -f "$tmp/torch.sif" "$out/torch.sif"
	say "mkdocker.py torch-docker.tar"
	python3 "$here/mkdocker.py" --format docker --tag ctrun-test/torch:latest \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		"$tmp/torch-docker.tar" "$rootfs"
	mv -f "$tmp/torch-docker.tar" "$out/torch-docker.tar"
	rm -rf "$tmp"
	trap - EXIT
	echo "$h" >"$out/torch.stamp"
}

# debootstrap_base ROOTFS: Debian minbase $suite in ROOTFS, its log in
# ROOTFS.log.  torch_rootfs does the same in its own text: its stamp is the
# hash of that text, and editing it would rebuild the torch and registry
# sets on every machine.
debootstrap_base() {
	local r=$1 mirror mirror_from
	debian_mirror
	say "debootstrap --variant=minbase $suite from $mirror ($mirror_from; a few minutes)"
	# Own mount namespace: whatever debootstrap or a postinst mounts in the
	# target dies with it, even if this script is killed.
	if ! unshare --mount --propagation private \
		debootstrap --variant=minbase "$suite" "$r" "$mirror" >"$r.log" 2>&1; then
		tail -5 "$r.log" >&2
		die "debootstrap failed (full log $r.log); can this machine reach $mirror? (set CTRUN_DEBIAN_MIRROR)"
	fi
}

# The MPI root file system: Debian's Open MPI (its PMIx client: srun
# --mpi=pmix) and MPICH (its PMI-1 client: srun --mpi=pmi2; Debian's Open MPI
# has no PMI-1/PMI-2 client), and the all-reduce program built against
# each; the compilers are removed again.
mpi_rootfs() {
	local r=$1
	debootstrap_base "$r"
	say "installing Open MPI and MPICH in the image, compiling mpi_allreduce.c"
	mkdir -p "$r/usr/local/src"
	cp "$here/mpi_allreduce.c" "$r/usr/local/src/"
	if ! { image_run "$r" apt-get -q update &&
		image_run "$r" apt-get -q -y --no-install-recommends \
			install openmpi-bin libopenmpi-dev libmpich-dev gcc libc6-dev &&
		image_run "$r" mpicc.openmpi -O2 -o /usr/local/bin/allreduce-openmpi \
			/usr/local/src/mpi_allreduce.c &&
		image_run "$r" mpicc.mpich -O2 -o /usr/local/bin/allreduce-mpich \
			/usr/local/src/mpi_allreduce.c &&
		image_run "$r" apt-mark manual openmpi-bin libopenmpi3 libmpich12 &&
		image_run "$r" apt-get -q -y purge --auto-remove libopenmpi-dev libmpich-dev gcc libc6-dev
	} >>"$r.log" 2>&1; then
		tail -5 "$r.log" >&2
		die "installing MPI or compiling mpi_allreduce.c failed in the image (full log $r.log)"
	fi
	rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
	printf 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nCTRUN_IMAGE_ENV=mpi\n' \
		>"$r/etc/environment"
	rm -f "$r.log"
}

# Its own stamp: building or changing it leaves the other sets' stamps alone.
build_mpi() {
	local h tmp t0=$SECONDS
	h=$({ recipe_hash mpi_rootfs debootstrap_base image_run build_mpi; cat "$here/mpi_allreduce.c"; } |
		sha256sum | cut -c1-16)
	if [ "$(cat "$out/mpi.stamp" 2>/dev/null)" = "$h" ] && [ -f "$out/mpi.sqsh" ]; then
		say "mpi image up to date ($h)"; return 0
	fi
	say "building the mpi image ($h)"
	rm -f "$out/mpi.stamp"
	tmp=$(mktemp -d "$out/.mpi.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mpi_rootfs "$tmp/rootfs"
	mksquashfs "$tmp/rootfs" "$tmp/mpi.sqsh" -noappend -quiet -no-progress >/dev/null
	mv -f "$tmp/mpi.sqsh" "$out/mpi.sqsh"
	rm -rf "$tmp"
	trap - EXIT
	echo "$h" >"$out/mpi.stamp"
	say "mpi.sqsh built in $((SECONDS - t0)) s ($(du -h "$out/mpi.sqsh" | cut -f1))"
}

# The torch image in layers, as a registry serves such images: Debian, then
# python3 and its modules, then torch (mklayers.py moves each package's files).
torch_layers() {
	local r=$1 l=$2
	python3 "$here/mklayers.py" "$r" "$l" python3=python3 torch=python3-torch,python3-numpy >&2
}

# What a registry serves to the tests, pushed once (reglib.sh): the busybox
# image as a docker (v2s2, 2 layers: a whiteout and an opaque directory in the
# second) and as an OCI manifest, its multi-platform index, the layered torch image.
registry_refs() {
	cat <<EOF
busybox-docker.tar ctrun-test/busybox:latest
busybox-oci.tar ctrun-test/busybox:oci
busybox-multiarch-oci.tar ctrun-test/busybox:multiarch
torch-layers-docker.tar ctrun-test/torch:latest
EOF
}

build_registry() {
	local h tmp f ref s0 t0=$SECONDS
	# shellcheck source=../integration/reglib.sh
	. "$here/../integration/reglib.sh"
	# The recipe, the tools, and which torch and busybox archives it was made from
	# (each is written by rename: a rebuilt one is another inode).
	h=$({ recipe_hash torch_layers registry_refs build_registry reg_push reg_digest reg_skopeo \
			_reg_tls_opts _reg_creds_opts
		cat "$here/mklayers.py" "$here/mkindex.py" "$here/mkhistory.py"
		docker-registry --version; skopeo --version
		stat -L -c '%n %s %Y %i' "$out/torch-docker.tar" "$out/busybox-docker.tar" "$out/busybox-oci.tar"
	} | sha256sum | cut -c1-16)
	if [ "$(cat "$out/registry.stamp" 2>/dev/null)" = "$h" ] && [ -d "$out/registry" ]; then
		say "registry images up to date ($h)"; return 0
	fi
	say "building the registry images ($h)"
	rm -f "$out/registry.stamp"
	tmp=$(mktemp -d "$out/.registry.XXXXXX")
	trap 'reg_stop; rm -rf "$tmp"' EXIT
	# From the docker archive's one layer, not torch.sqsh: no unsquashfs, which the
	# integration runner counts as a leftover of whichever test runs meanwhile.
	say "unpacking torch-docker.tar, splitting it into layers"
	mkdir "$tmp/rootfs"
	tar -xOf "$out/torch-docker.tar" --wildcards '*/layer.tar' |
		tar -x --numeric-owner -C "$tmp/rootfs"
	torch_layers "$tmp/rootfs" "$tmp/layers"
	python3 "$here/mkdocker.py" --format docker --tag ctrun-test/torch:latest \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		"$tmp/torch-layers.tar" "$tmp/rootfs" "$tmp/layers/python3" "$tmp/layers/torch"
	rm -rf "$tmp/rootfs" "$tmp/layers"
	# The archives the registry serves carry what `docker build` writes (a
	# history per layer...: mkhistory.py), or `enroot import docker://` cannot
	# pull them; the busybox ones are pushed from their copies here.
	python3 "$here/mkhistory.py" "$tmp/torch-layers.tar" "$tmp/torch-layers-docker.tar"
	rm -f "$tmp/torch-layers.tar"
	python3 "$here/mkhistory.py" "$out/busybox-docker.tar" "$tmp/busybox-docker.tar"
	python3 "$here/mkhistory.py" "$out/busybox-oci.tar" "$tmp/busybox-oci.tar"
	python3 "$here/mkindex.py" --tag ctrun-test/busybox:multiarch "$tmp/busybox-oci.tar" \
		"$tmp/busybox-multiarch-oci.tar" linux/amd64 linux/arm64/v8
	mv -f "$tmp/torch-layers-docker.tar" "$tmp/busybox-multiarch-oci.tar" "$out/"
	# Plain HTTP on loopback: the storage is the same whatever the auth and TLS of
	# the registries that will serve it.
	TMPD=$tmp reg_start --plain --auth none --addr 127.0.0.1
	: >"$tmp/digests"
	while read -r f ref; do
		s0=$SECONDS
		if [ -e "$tmp/$f" ]; then reg_push "$tmp/$f" "$ref"; else reg_push "$out/$f" "$ref"; fi
		echo "$ref $(reg_digest "$ref")" >>"$tmp/digests"
		say "pushed $f as $ref in $((SECONDS - s0)) s"
	done < <(registry_refs)
	mv "$REG_DIR/storage" "$tmp/registry"
	reg_stop
	# REF DIGEST per pushed image, beside the registry's own tree.
	mv "$tmp/digests" "$tmp/registry/digests"
	rm -rf "$out/registry"
	mv "$tmp/registry" "$out/registry"
	rm -rf "$tmp"
	trap - EXIT
	echo "$h" >"$out/registry.stamp"
	say "registry images built in $((SECONDS - t0)) s ($(du -sh "$out/registry" | cut -f1) pushed)"
}

locked() {
	local set=$1
	mkdir -p "$out"
	# The tests' unprivileged user reads the images: a directory made by
	# `mktemp -d` (CTRUN_TEST_IMAGES=$(mktemp -d)) is 0700 otherwise.
	chmod go+rx "$out"
	exec {fd}>"$out/.$set.lock"
	if ! flock -n "$fd"; then
		say "waiting for another build of the $set images"
		flock "$fd"
	fi
	"build_$set"
	exec {fd}>&-
}

case ${1:-busybox} in
busybox|torch|registry|mpi|all)
	# Every set named, in order: `build.sh busybox torch` builds both.
	for set in "${@:-busybox}"; do
		case $set in
		busybox|torch|mpi) locked "$set" ;;
		# Made of the other two.
		registry|all) locked busybox; locked torch; locked registry ;;
		*) die "unknown image set '$set' (busybox, torch, registry, mpi or all)" ;;
		esac
	done ;;
path)
	case ${2:-} in
	busybox.sqsh|busybox.sif|busybox-docker.tar|busybox-oci.tar|busybox-rootfs|\
	busybox-singularity.sif|busybox-singularity-real.sif|\
	torch.sqsh|torch.sif|torch-docker.tar|\
	torch-layers-docker.tar|busybox-multiarch-oci.tar|registry|mpi.sqsh) echo "$out/$2" ;;
	*) die "unknown image '${2:-}'" ;;
	esac ;;
mirror)
	debian_mirror
	printf '%s\t%s\n' "$mirror" "$mirror_from" ;;
*) echo "usage: $0 busybox|torch|registry|mpi|all|path NAME|mirror" >&2; exit 2 ;;
esac
