#!/bin/bash
# build.sh - (re)build gpukit/ (the repo root's, git-ignored) on the Debian 12 dev machine,
# NOT on the GPU machine; needs nvcc (/usr/local/cuda), squashfs-tools and patchelf.
#   tests/gpu/build.sh [CTRUN_BUILD_DIR]     (default build/, from `make`)
# Produces gpukit/bin (ctrun, helpers, runc: RUNPATH $ORIGIN/../lib), gpukit/lib,
# gpukit/saxpy (host CUDA program), gpukit/images/{tiny,shipslibcuda}.sqsh.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KIT=$REPO/gpukit
B=${1:-$REPO/build}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
GENCODE="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib" "$KIT/images"
cp -r "$HERE/src" "$HERE/run.sh" "$HERE/README.md" "$KIT/"

# 1. ctrun and helpers (kept together: ctrun finds ctrun-agent/-hook/-worker next to itself)
for b in ctrun ctrun-agent ctrun-hook ctrun-worker; do install -m 0755 "$B/$b" "$KIT/bin/$b"; done
# 2. Debian's runc
install -m 0755 /usr/sbin/runc "$KIT/bin/runc"
# Shared libraries the GPU machine may lack (not glibc): found through RUNPATH, which
# also holds where runc re-execs itself (runc init gets no LD_LIBRARY_PATH) and where
# runc runs ctrun-hook with only PATH in its environment.
kit_libs() { # BIN...: their libraries (not glibc's) into lib/, RUNPATH $ORIGIN/../lib
	local b l
	for b in "$@"; do
		ldd "$KIT/bin/$b" | awk '$3 ~ /^\// {print $3}' | while read -r l; do
			case $(basename "$l") in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) continue;; esac
			cp -L "$l" "$KIT/lib/"
		done
		patchelf --set-rpath '$ORIGIN/../lib' "$KIT/bin/$b"
	done
}
kit_libs ctrun ctrun-hook runc

# 3. The CUDA program: on the host and in the image
"$NVCC" -O2 -cudart static $GENCODE -o "$KIT/saxpy" "$KIT/src/saxpy.cu"
# A fake libcuda.so.1 an image "already ships" (checklist item 5)
gcc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o "$KIT/.fakecuda.so" "$KIT/src/fakecuda.c" -ldl

# 4. The tiny image: busybox, glibc for saxpy and nvidia-smi, passwd/group
R=$KIT/.rootfs
mkdir -p "$R"/{bin,etc,dev,proc,sys,tmp,root,run,home,usr/bin,usr/lib/x86_64-linux-gnu,lib/x86_64-linux-gnu,lib64,etc/ld.so.conf.d,opt}
chmod 1777 "$R/tmp"
cp /bin/busybox "$R/bin/busybox"
for a in sh cat ls echo env id head grep readlink wc uname sleep true false test mount ps stat find sort cut tr dirname basename; do
	ln -s busybox "$R/bin/$a"
done
for l in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1 libstdc++.so.6 ld-linux-x86-64.so.2; do
	cp -L "/lib/x86_64-linux-gnu/$l" "$R/lib/x86_64-linux-gnu/$l"
done
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$R/lib64/ld-linux-x86-64.so.2"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' > "$R/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
echo 'include /etc/ld.so.conf.d/*.conf' > "$R/etc/ld.so.conf"
echo '12.0' > "$R/etc/debian_version"   # the hook's library directory: /usr/lib/x86_64-linux-gnu
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$R/etc/group"
printf 'PATH=/usr/local/bin:/usr/bin:/bin\n' > "$R/etc/environment"
# Mount points ctrun binds onto: present, so a rootless run need not create them in /etc
printf '127.0.0.1 localhost\n' > "$R/etc/hosts"; : > "$R/etc/resolv.conf"; echo tiny > "$R/etc/hostname"
install -m 0755 "$KIT/saxpy" "$R/usr/bin/saxpy"
install -m 0755 "$KIT/src/probe.sh" "$R/usr/bin/probe"
/sbin/ldconfig -r "$R" 2>/dev/null || true
mksquashfs "$R" "$KIT/images/tiny.sqsh" -noappend -comp gzip -all-root -quiet
# The same tree as a tarball, for a machine that cannot mount a squashfs (no loop device)
# and has no unsquashfs: run.sh then unpacks it and uses a directory image.
tar -C "$R" --numeric-owner --owner=0 --group=0 -czf "$KIT/images/tiny.tar.gz" .
install -m 0755 "$KIT/.fakecuda.so" "$KIT/images/libcuda.so.999.99"
# The same with a libcuda.so.1 of its own in the library directory (-> libcuda.so.999.99)
install -m 0755 "$KIT/.fakecuda.so" "$R/usr/lib/x86_64-linux-gnu/libcuda.so.999.99"
ln -s libcuda.so.999.99 "$R/usr/lib/x86_64-linux-gnu/libcuda.so.1"
/sbin/ldconfig -r "$R" 2>/dev/null || true
mksquashfs "$R" "$KIT/images/shipslibcuda.sqsh" -noappend -comp gzip -all-root -quiet
rm -rf "$R" "$KIT/.fakecuda.so"

# 5. The unit tests whose behaviour depends on a GPU, the driver or /dev (stripped;
#    named DIR__test_x; libcmocka through RUNPATH); run with tests/unit/run.sh.
mkdir -p "$KIT/unit"
for t in core/test_slurmgpu hooks/test_driver hooks/test_gpus hooks/test_rootfs hooks/test_ldconfig \
	hooks/test_state runner/check/test_check runner/check/test_wsession runner/check/test_bench_table \
	runner/container/test_gpus runner/container/rt/test_gpu_pin runner/container/rt/test_oci \
	runner/launch/test_cpubind runner/launch/test_workerenv runner/node/test_gpu \
	runner/slurm/test_topology runner/net/test_busbw; do
	u="$KIT/unit/$(echo "$t" | sed 's|/|__|g')"
	strip -o "$u" "$B/tests/$t"
	patchelf --set-rpath '$ORIGIN/../lib' "$u"
done
cp -L "$(ldconfig -p | awk '/libcmocka.so.0 .*x86-64/ {print $NF; exit}')" "$KIT/lib/"

# 6. Real enroot (when built here into /opt/enroot by shared/tools/build-enroot.sh) and what
#    `enroot start IMAGE.sqsh` needs that a GPU machine may lack: squashfuse, fuse-overlayfs,
#    unsquashfs (RUNPATH $ORIGIN/../lib, their libraries in lib/). run.sh points the enroot
#    script at gpukit/enroot (its prefix is compiled in as /opt/enroot).
if [ -x /opt/enroot/bin/enroot ]; then
	cp -a /opt/enroot "$KIT/enroot"
	for b in squashfuse fuse-overlayfs unsquashfs; do install -m 0755 "$(command -v "$b")" "$KIT/bin/$b"; done
	kit_libs squashfuse fuse-overlayfs unsquashfs
fi
du -sh "$KIT"
