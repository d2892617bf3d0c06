#!/bin/bash
# fakegpu.sh - for the dev machine only (NOT the GPU machine): runs gpukit/run.sh in a
# private mount namespace with fake GPU device nodes (/dev/nvidia0, nvidia1, nvidiactl:
# 195:N, open() fails with ENXIO) and a fake driver (a libcuda.so.580.00.00 without the
# driver API) in a directory that is not in ld.so.cache (as a driver mounted under
# /usr/local/nvidia may be), so ctrun-hook, runc and the ldconfig step really run.
#     bash tests/gpu/fakegpu.sh  (after tests/gpu/build.sh)            [GPUKIT_FAKE_CACHED=1: the fake driver in the cache]
# /dev and /etc are private copies (tmpfs) inside the namespace: the machine's stay as they are.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[ "$(id -u)" = 0 ] || { echo "fakegpu.sh: run as root" >&2; exit 2; }
FD=$(mktemp -d /opt/gpukit-fakedriver.XXXXXX)
trap 'rm -rf "$FD"' EXIT
chmod 755 "$FD"
gcc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o "$FD/libcuda.so.580.00.00" tests/gpu/src/fakecuda.c -ldl
ln -s libcuda.so.580.00.00 "$FD/libcuda.so.1"
export FD
unshare --mount --propagation private -- bash -c '
set -eu
D=$(mktemp -d) E=$(mktemp -d)
mount -t tmpfs -o mode=755,size=16m gpukit-dev "$D"
cp -a -x /dev/. "$D/"
mknod -m 666 "$D/nvidia0" c 195 0
mknod -m 666 "$D/nvidia1" c 195 1
mknod -m 666 "$D/nvidiactl" c 195 255
mount --move "$D" /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
rm -f /dev/ptmx && ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
mkdir -p /dev/mqueue && mount -t mqueue -o nosuid,nodev,noexec mqueue /dev/mqueue
mount -t tmpfs -o mode=755,size=64m gpukit-etc "$E"
cp -a /etc/. "$E/"
mount --bind "$E" /etc
umount "$E"
rmdir "$D" "$E"
if [ "${GPUKIT_FAKE_CACHED:-0}" = 1 ]; then echo "$FD" > /etc/ld.so.conf.d/00-fakedriver.conf && ldconfig; fi
bash gpukit/run.sh
'
