#!/bin/bash
# `make deps`: every Debian package that ctrun's build, tests, benchmarks
# and demo need.  Idempotent; run as root on Debian 12.
set -euo pipefail
pkgs=(
	# build
	gcc make pkg-config libinih-dev libcmocka-dev libarchive-dev libjson-c-dev
	# CDI specs in YAML (devices/cdiyaml.c)
	libyaml-dev
	# the HMAC-SHA256 of the rendezvous and the timings (docs/bench.md)
	nettle-dev
	# fuzz targets (libFuzzer)
	clang libclang-rt-14-dev
	# the test cluster: Slurm (libslurm is loaded at run time), namespaces, users
	slurm-wlm slurm-client libslurm-dev iproute2 util-linux procps psmisc passwd
	# Slurm's mpi/pmix plugin dlopens pmix2/lib/libpmix.so (t_spank_mpi: srun --mpi=pmix)
	libpmix2 libpmix-dev
	# workloads: PyTorch DDP over gloo (Debian's python3-torch, for /usr/bin/python3)
	python3 python3-torch
	# containers (runc; crun for --runtime crun; Charliecloud's ch-run for
	# --runtime charliecloud, the -runtime package alone: no builders, no
	# docker; images built from Debian packages)
	runc crun charliecloud-runtime squashfs-tools debootstrap busybox-static
	# the reference CDI implementation beside ctrun (t_cdi: podman 4.3 applies
	# CDI specs with the CDI project's own library)
	podman
	# images mounted, not unpacked: by a user (squashfuse_ll), by enroot's
	# start from a squashfs (squashfuse + fuse-overlayfs)
	squashfuse fuse-overlayfs
	# tests: system calls of the cache (t_cache_durable)
	strace
	# tests: a real registry (distribution 2.8) with TLS, htpasswd and token
	# auth (reglib.sh: bcrypt htpasswd, a throwaway CA and RS256 tokens with
	# openssl), skopeo to push the test images; libcurl for ctrun's pulls
	docker-registry skopeo apache2-utils openssl libcurl4-openssl-dev
	# pulls stream their layers into a squashfs through libsquashfs
	# (squashfs-tools-ng; dlopen'd: images/squash/sqfs_dl.c), whose headers the
	# build needs; tar2sqfs for the benchmarks' comparisons
	libsquashfs-dev squashfs-tools-ng
	# benchmarks (pigz: the decompression floor of a pull, tests/bench/pull.sh)
	hyperfine time iperf3 pigz
	# manual pages, bash completion (and its test), the Debian package
	scdoc bash-completion debhelper dpkg-dev fakeroot man-db
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#pkgs[@]} packages present"
	exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
# Debian's slurm-wlm and docker-registry packages start their own daemons
# (from /etc/slurm, on :5000); ours run from private configs, so make sure
# the distribution's stay down.
for s in slurmctld slurmd slurmdbd munge docker-registry; do
	systemctl disable --now "$s" >/dev/null 2>&1 || service "$s" stop >/dev/null 2>&1 || true
done
echo "deps: done"
