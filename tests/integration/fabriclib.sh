# Sourced by the t_fabric_*.sh tests (after lib.sh): a test node made to
# look like one with an RDMA fabric, and a small image with glibc.
# Functions only: nothing here runs when it is sourced.

# fake_rdma_node DIR: makes the node, as this process's private mount
# namespace sees it (run it under `unshare -m --propagation private`), look
# like a ConnectX node: /sys/class (a tmpfs holding a bind of each of the
# machine's classes) with infiniband/mlx5_0 (port 1 ACTIVE, InfiniBand,
# 200 Gb/sec) and mlx5_1 (port 1 DOWN, Ethernet: RoCE), their
# infiniband_verbs (uverbs0 231:192, uverbs1 231:193) and infiniband_mad
# (umad0 231:0, umad1 231:1) entries in the kernel's layout; and a private
# copy of /dev with those nodes, /dev/infiniband/rdma_cm (10:58) and
# GDRCopy's /dev/gdrdrv (511:0).  The machine's /sys and /dev are not
# touched; everything goes with the namespace.
fake_rdma_node() {
	local d=$1 c
	mkdir -p "$d/class" "$d/dev"
	mount -t tmpfs -o mode=755 fake-sys-class "$d/class"
	for c in /sys/class/*; do
		mkdir "$d/class/${c##*/}"
		mount --bind "$c" "$d/class/${c##*/}"
	done
	ib=$d/class/infiniband
	mkdir -p "$ib/mlx5_0/ports/1" "$ib/mlx5_1/ports/1"
	printf '4: ACTIVE\n' >"$ib/mlx5_0/ports/1/state"
	printf '5: LinkUp\n' >"$ib/mlx5_0/ports/1/phys_state"
	printf 'InfiniBand\n' >"$ib/mlx5_0/ports/1/link_layer"
	printf '200 Gb/sec (4X HDR)\n' >"$ib/mlx5_0/ports/1/rate"
	printf '1: DOWN\n' >"$ib/mlx5_1/ports/1/state"
	printf '3: Disabled\n' >"$ib/mlx5_1/ports/1/phys_state"
	printf 'Ethernet\n' >"$ib/mlx5_1/ports/1/link_layer"
	printf '100 Gb/sec (2X EDR)\n' >"$ib/mlx5_1/ports/1/rate"
	for c in uverbs0:mlx5_0:192 uverbs1:mlx5_1:193; do
		mkdir -p "$d/class/infiniband_verbs/${c%%:*}"
		printf '%s\n' "$(cut -d: -f2 <<<"$c")" >"$d/class/infiniband_verbs/${c%%:*}/ibdev"
		printf '231:%s\n' "${c##*:}" >"$d/class/infiniband_verbs/${c%%:*}/dev"
	done
	printf '6\n' >"$d/class/infiniband_verbs/abi_version"
	for c in umad0:mlx5_0:0 umad1:mlx5_1:1; do
		mkdir -p "$d/class/infiniband_mad/${c%%:*}"
		printf '%s\n' "$(cut -d: -f2 <<<"$c")" >"$d/class/infiniband_mad/${c%%:*}/ibdev"
		printf '1\n' >"$d/class/infiniband_mad/${c%%:*}/port"
		printf '231:%s\n' "${c##*:}" >"$d/class/infiniband_mad/${c%%:*}/dev"
	done
	mount --move "$d/class" /sys/class
	mount -t tmpfs -o mode=755 fake-rdma-dev "$d/dev"
	cp -a -x /dev/. "$d/dev/"
	mkdir -p "$d/dev/infiniband"
	mknod -m 666 "$d/dev/infiniband/uverbs0" c 231 192
	mknod -m 666 "$d/dev/infiniband/uverbs1" c 231 193
	mknod -m 600 "$d/dev/infiniband/umad0" c 231 0
	mknod -m 600 "$d/dev/infiniband/umad1" c 231 1
	mknod -m 666 "$d/dev/infiniband/rdma_cm" c 10 58
	mknod -m 666 "$d/dev/gdrdrv" c 511 0
	# enroot's restricted /dev (asked for with device nodes) binds /dev/log,
	# which a compute node has (this VM has none): a stand-in for it.
	[ -e "$d/dev/log" ] || : >"$d/dev/log"
	mount --move "$d/dev" /dev
	mkdir -p /dev/pts /dev/shm /dev/mqueue
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
	mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
	mount -t mqueue mqueue /dev/mqueue 2>/dev/null || true
}

# glibc_image DIR: a small image with this machine's glibc (libc.so.6 and
# its loader, Debian's files), busybox for a shell, and the programs given
# after DIR copied into its /bin: enough for ctrun-worker (which links libc
# alone) and for a program that dlopens a library.
glibc_image() {
	local d=$1 a
	shift
	mkdir -p "$d/lib/x86_64-linux-gnu" "$d/lib64" "$d/bin" "$d/etc" "$d/proc" "$d/sys" \
		"$d/dev" "$d/tmp" "$d/usr/lib/x86_64-linux-gnu"
	cp -L /lib/x86_64-linux-gnu/libc.so.6 "$d/lib/x86_64-linux-gnu/"
	cp -L /lib64/ld-linux-x86-64.so.2 "$d/lib64/"
	cp /bin/busybox "$d/bin/"
	for a in $("$d/bin/busybox" --list); do [ -e "$d/bin/$a" ] || ln -s busybox "$d/bin/$a"; done
	for a; do cp "$a" "$d/bin/"; done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$d/etc/passwd"
	printf 'root:x:0:\n' >"$d/etc/group"
	: >"$d/etc/hosts"
	: >"$d/etc/resolv.conf"
	chmod 1777 "$d/tmp"
}
