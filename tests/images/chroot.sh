# chroot.sh - sourced by build.sh (and its unit test): image_run.
#
# image_run ROOTFS CMD [ARG...]: runs CMD inside ROOTFS with /proc and a
# fresh /tmp mounted, in a mount namespace of its own (whatever CMD or a
# postinst mounts dies with it, even if the build is killed).
image_run() {
	local r=$1
	shift
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		r=$1; shift
		mount -t proc proc "$r/proc" && mount -t tmpfs tmpfs "$r/tmp" &&
		exec chroot "$r" env DEBIAN_FRONTEND=noninteractive "$@"' sh "$r" "$@"
}
