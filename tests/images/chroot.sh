# shellcheck shell=bash
# chroot.sh - sourced by build.sh (and tests/unit/test_image_build.sh): image_run.
#
# image_run ROOTFS CMD [ARG...]: runs CMD inside ROOTFS with /proc and a
# fresh /tmp mounted, in a mount namespace of its own (whatever CMD or a
# postinst mounts dies with it, even if the build is killed).
#
# CMD gets the image's environment, never the host's: the host's variables
# name the host's paths, locale and HOME (tests/integration/run.sh's
# TMPDIR=/tmp/ctrun-it-tmp.X, absent in the image, made dpkg's postinsts fail
# in the torch image).  Only the proxy settings pass: they are how this site
# reaches the mirror, and apt in the image needs them as debootstrap did.
# (debootstrap, run on the host, unsets TMPDIR itself.)
image_run() {
	local r=$1 v
	shift
	local env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
	for v in http_proxy https_proxy ftp_proxy no_proxy HTTP_PROXY HTTPS_PROXY FTP_PROXY NO_PROXY; do
		if [ -n "${!v:-}" ]; then env+=("$v=${!v}"); fi
	done
	# shellcheck disable=SC2016
	unshare --mount --propagation private -- env -i "${env[@]}" sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" && mount -t tmpfs tmpfs "$r/tmp" &&
		exec chroot "$r" "$@"' sh "$r" "$@"
}
