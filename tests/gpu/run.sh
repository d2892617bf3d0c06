#!/bin/bash
# gpukit/run.sh - the GPU checklist (shared/gpu-checklist.md) in one call, on the GPU machine:
#     bash gpukit/run.sh          (from the repo root, as root; gpukit/ carried, prebuilt)
# Every step prints "== STEP name" and its exit status and the run goes on; every step is
# bounded by timeout, and no step starts past GPUKIT_HARD seconds (default 330) of the whole.
# Everything goes to the terminal and to $OUT/gpu-log.txt; JSON outputs land in $OUT too.
set -u
START=$(date +%s)
HARD=${GPUKIT_HARD:-330}
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$PWD
KIT=$ROOT/gpukit
OUT=${OUT:-$KIT/out}
mkdir -p "$OUT" || exit 1
LOG=$OUT/gpu-log.txt
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

T=$(mktemp -d /tmp/gpukit.XXXXXX) || exit 1
# In case the carried copy lost the executable bits.
chmod a+x "$KIT"/bin/* "$KIT"/saxpy "$KIT"/unit/* 2>/dev/null
LDCONF=/etc/ld.so.conf.d/000-gpukit-driver.conf
ADDED_LDCONF= ADDED_DEVLOG= ADDED_MQUEUE=
cleanup() {
	[ -n "$ADDED_MQUEUE" ] && umount /dev/mqueue && rmdir /dev/mqueue 2>/dev/null; [ -n "$ADDED_MQUEUE" ] && echo "gpukit: unmounted /dev/mqueue"
	[ -n "$ADDED_DEVLOG" ] && [ -f /dev/log ] && rm -f /dev/log && echo "gpukit: removed the empty /dev/log"
	if [ -n "$ADDED_LDCONF" ]; then
		rm -f "$LDCONF" && ldconfig 2>/dev/null
		echo "gpukit: removed $LDCONF and rebuilt ld.so.cache"
	fi
	# ctrun removes its run directories and mounts; what is left here is files only.
	if grep -q " $T" /proc/self/mounts; then
		echo "gpukit: WARNING: mounts left under $T:"
		grep " $T" /proc/self/mounts
	fi
	rm -rf "$T"
}
trap cleanup EXIT

SUMMARY=()
# step NAME SECONDS EXPECT COMMAND: COMMAND runs under bash -c with a timeout.
# EXPECT is 0 (must succeed), nz (must fail: a failure path), any (a fact) or np (a part
# this machine may lack: exit 0 checked, exit 3 "not present", never a pass by accident).
step() {
	local name=$1 t=$2 want=$3 cmd=$4 now rc verdict s
	now=$(($(date +%s) - START))
	if ((now + t > HARD)); then t=$((HARD - now)); fi
	if ((t < 8)); then
		echo "== STEP $name: SKIPPED (${now}s of ${HARD}s used)"
		SUMMARY+=("$(printf '%-28s %-8s %-4s %s' "$name" skipped "$want" "out of time")")
		return 0
	fi
	echo
	echo "== STEP $name (timeout ${t}s, expect $want)"
	echo "\$ $cmd"
	s=$(date +%s.%N)
	timeout -k 5 "$t" bash -c "$cmd" </dev/null
	rc=$?
	case $want:$rc in
	0:0 | any:* | nz:[1-9]* | np:0) verdict=ok ;;
	np:3) verdict="not present" ;;
	*) verdict=UNEXPECTED ;;
	esac
	((rc == 124 || rc == 137)) && verdict="$verdict (TIMED OUT)"
	s=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	LAST_RC=$rc
	echo "== STEP $name: exit $rc, expected $want: $verdict (${s}s)"
	SUMMARY+=("$(printf '%-28s exit %-3s %-4s %s %ss' "$name" "$rc" "$want" "$verdict" "$s")")
	return 0
}

echo "gpukit: $(date -u '+%F %T') UTC, repo $ROOT, out $OUT, tmp $T"

# --- Where the driver, CUDA runtime, NCCL and tools are (one bounded find) ------------
timeout 60 find -H /usr/local /usr/lib /usr/lib64 /lib64 /usr/bin /opt /root /home /workspace \
	/run/nvidia -maxdepth 10 \( -name 'libcuda.so.1' -o -name 'libcudart.so*' -o \
	-name 'libnccl.so.2' -o -name 'libnvidia-ml.so.1' -o -name nvidia-smi -o -name nvcc \) \
	2>/dev/null | grep -v -e /stubs/ -e /compat/ | sort -u > "$T/found.txt"
first() { grep -E "$1" "$T/found.txt" | head -1; }
LIBCUDA=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$LIBCUDA" ] || LIBCUDA=$(first '/libcuda\.so\.1$')
# The toolkit's runtime first, else the pip wheel's (nvidia-cuda-runtime-cu13), else any.
CUDART=$(first '^/usr/local/cuda[^/]*/(lib64|targets/x86_64-linux/lib)/libcudart\.so\.13')
[ -n "$CUDART" ] || CUDART=$(first '/libcudart\.so\.13')
[ -n "$CUDART" ] || CUDART=$(first '/libcudart\.so\.[0-9]+$')
NCCL=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 .*x86-64/ {print $NF; exit}')
[ -n "$NCCL" ] || NCCL=$(first '/libnccl\.so\.2$')
SMI=$(command -v nvidia-smi || first '/nvidia-smi$')
NVCC=$(command -v nvcc || first '/nvcc$')
[ -n "$NVCC" ] || NVCC=/usr/local/cuda/bin/nvcc
LDP=
for f in "$LIBCUDA" "$CUDART" "$NCCL"; do
	[ -n "$f" ] && case ":$LDP:" in *":$(dirname "$f"):"*) ;; *) LDP=$LDP${LDP:+:}$(dirname "$f") ;; esac
done
export LD_LIBRARY_PATH=$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# ctrun and its helpers and runc first; the hook gets this PATH (it finds nvidia-smi in it).
export PATH=$KIT/bin${SMI:+:$(dirname "$SMI")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export TMPDIR=$T/tmp CTRUN_CACHE_DIR=$T/cache HOME=${HOME:-/root}
mkdir -p "$TMPDIR" "$CTRUN_CACHE_DIR"
unset XDG_RUNTIME_DIR CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES CTRUN_CONFIG
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export LIBCUDA CUDART NCCL SMI NVCC KIT OUT T
# The host GPU's minor: /dev/nvidiaN's N (a pod may have /dev/nvidia3 as its only GPU).
GPU=$(ls /dev 2>/dev/null | sed -n 's/^nvidia\([0-9][0-9]*\)$/\1/p' | sort -n | head -1)
export GPU=${GPU:-0}
IMG=$KIT/images/tiny.sqsh IMG2=$KIT/images/shipslibcuda.sqsh LAST_RC=0
OCI="ctrun --runtime oci --no-python --image"
echo "gpukit: libcuda=${LIBCUDA:-NOT FOUND} libcudart=${CUDART:-NOT FOUND} libnccl=${NCCL:-NOT FOUND}"
echo "gpukit: nvidia-smi=${SMI:-NOT FOUND} nvcc=$NVCC first GPU minor=$GPU"
echo "gpukit: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "gpukit: PATH=$PATH"

# --- a. facts ---------------------------------------------------------------------------
step facts-system 20 any 'uname -a; head -3 /etc/os-release; id; nproc; free -g | head -2;
	echo "runc: $(command -v runc)"; runc --version | head -1; echo "found:"; cat "$T/found.txt"'
step facts-nvidia-smi 30 any '"${SMI:-nvidia-smi}" -L; "${SMI:-nvidia-smi}"; "${SMI:-nvidia-smi}" topo -m'
step facts-driver 20 any 'ls -l /dev/nvidia* /dev/nvidia-caps 2>&1; echo "module: $(cat /sys/module/nvidia/version 2>&1)";
	cat /proc/driver/nvidia/version; for f in /proc/driver/nvidia/gpus/*/information; do echo "$f:"; cat "$f"; done;
	echo "ld.so.cache:"; ldconfig -p | grep -E "libcuda\.|libnvidia-ml|libcudart|libnccl" ;
	echo "driver dir:"; ls -l "$(dirname "${LIBCUDA:-/nonexistent/x}")" | head -40'
step facts-nvcc 20 any '"$NVCC" --version'
step facts-ctrun-version 20 any 'ctrun --version'
step facts-container-env 20 any 'echo "caps: $(grep CapEff /proc/self/status)"; echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup)";
	cat /proc/self/cgroup; grep -E " /sys/fs/cgroup| /usr/local/nvidia| /dev " /proc/self/mounts;
	echo "user namespaces: $(cat /proc/sys/user/max_user_namespaces 2>&1)"; unshare -m true && echo "unshare -m: ok"'

# --- b. ctrun check on the host (standalone) --------------------------------------------
step check-json 60 0 'ctrun check --json > "$OUT/check.json"; rc=$?; cat "$OUT/check.json"; exit $rc'
step check-table 60 0 'ctrun check'
step check-verdict 10 0 'f="$OUT/check.json";
	grep -q "\"backend\":\"nccl\"" "$f" && echo "all-reduce backend: nccl" || { echo "all-reduce backend: NOT nccl"; grep "\"note\"" "$f"; exit 1; };
	grep -E "\"(bus_id|gpu_name|gpu_numa|gpu_cpus|numa)\"" "$f"; ! grep -q "\"bus_id\":null" "$f"'

# --- c. ctrun bench (1 rank: NCCL all-reduce is a local copy) ----------------------------
step bench-nccl 90 0 'ctrun bench --backend nccl -b 8 -e 256M -f 4 2>&1 | tee "$OUT/bench-nccl.txt"; rc=${PIPESTATUS[0]};
	grep -m1 "^# ctrun bench" "$OUT/bench-nccl.txt" | grep -q "nccl backend" || { echo "bench: NOT the nccl backend"; exit 1; }; exit $rc'
step bench-nccl-json 90 0 'ctrun bench --backend nccl -b 8 -e 256M -f 4 --json > "$OUT/bench-nccl.json"; rc=$?;
	head -c 1200 "$OUT/bench-nccl.json"; echo; f="$OUT/bench-nccl.json";
	echo "backend: $(grep -m1 "\"backend\"" "$f"); sizes: $(grep -c "\"size\"" "$f"); nwrong>0: $(grep -c "\"nwrong\":[1-9]" "$f")";
	grep -q "\"backend\":\"nccl\"" "$f" && ! grep -q "\"nwrong\":[1-9]" "$f" && exit $rc; exit 1'
step bench-nccl-all 90 0 'ctrun bench all --backend nccl -b 1M -e 16M -f 4 -d float 2>&1 | tee "$OUT/bench-nccl-all.txt"; rc=${PIPESTATUS[0]};
	grep -m1 "^# ctrun bench" "$OUT/bench-nccl-all.txt" | grep -q "nccl backend" || { echo "bench: NOT the nccl backend"; exit 1; }; exit $rc'
step bench-socket 45 0 'ctrun bench --backend socket -b 8 -e 64M -f 8'
step bench-2ranks-1gpu 60 nz 'ctrun --nproc-per-node 2 bench --backend nccl -b 1M -e 1M --rdzv-timeout 20 2>&1 | tee "$T/2ranks.txt"; rc=${PIPESTATUS[0]};
	grep -q "duplicate GPU per node" "$T/2ranks.txt" || { echo "bench: no line naming the shared GPU"; exit 0; }; exit $rc'

# --- d. the CUDA program: host, then in the container through runc and ctrun-hook -------
step saxpy-host 30 0 '"$KIT/saxpy"'
step hook-driver-files 20 any 'ctrun-hook driver-files /usr/lib/x86_64-linux-gnu; echo "($(ctrun-hook driver-files /usr/lib/x86_64-linux-gnu | grep -c libcuda) libcuda lines)"'
# The hook finds the driver's libraries through /etc/ld.so.cache only: when the driver's
# directory (a read-only mount under /usr/local/nvidia) is not in it, add it for this run.
if [ -n "$LIBCUDA" ] && ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
	ADDED_LDCONF=1
	step ldconfig-add-driver-dir 30 0 'echo "$(dirname "$LIBCUDA")" > '"$LDCONF"' && ldconfig -X && ldconfig -p | grep -E "libcuda\.so|libnvidia-ml" &&
		ctrun-hook driver-files /usr/lib/x86_64-linux-gnu'
fi
# The squashfs needs a loop device and the kernel's squashfs (else ctrun unpacks it with
# unsquashfs): when that fails, the same trees as directory images, from the tarball.
step image-mount-probe 60 0 "CTRUN_NV=false $OCI $IMG --image-mode mount -v -- true"
if [ "$LAST_RC" != 0 ] || [ "${GPUKIT_IMAGES:-}" = dir ]; then
	step image-use-directories 60 0 'set -e; for d in tiny shipslibcuda; do mkdir -p "$T/img/$d"; tar -C "$T/img/$d" -xzf "$KIT/images/tiny.tar.gz"; done;
		cp "$KIT/images/libcuda.so.999.99" "$T/img/shipslibcuda/usr/lib/x86_64-linux-gnu/";
		ln -s libcuda.so.999.99 "$T/img/shipslibcuda/usr/lib/x86_64-linux-gnu/libcuda.so.1"; ls "$T/img/tiny"'
	[ "$LAST_RC" = 0 ] && IMG=$T/img/tiny IMG2=$T/img/shipslibcuda
	echo "gpukit: images now $IMG and $IMG2"
fi
step oci-dry-run 30 0 "CUDA_VISIBLE_DEVICES=\$GPU $OCI $IMG --nv --dry-run -- probe > \$T/dry.txt; rc=\$?;
	grep -E -i 'runtime|hook|nvidia|CUDA_VISIBLE|org.ctrun|\"type\": \"c\"|major|minor' \$T/dry.txt; exit \$rc"
step oci-nv 60 0 "$OCI $IMG --nv -- probe"
step oci-default-nv-auto 60 0 "$OCI $IMG -- probe"
step oci-nv-pinned-isolated 60 0 "CUDA_VISIBLE_DEVICES=\$GPU $OCI $IMG --nv --gpu-isolation -- probe"
step oci-2workers-isolated 60 0 "CUDA_VISIBLE_DEVICES=\$GPU $OCI $IMG --nv --gpu-isolation --nproc-per-node 2 -- probe 1048576"
step env-isolated-host 20 any 'CUDA_VISIBLE_DEVICES=$GPU ctrun --gpu-isolation --nproc-per-node 2 env | grep -E "^(CUDA_VISIBLE_DEVICES|LOCAL_RANK)="'

# --- e. failure paths -------------------------------------------------------------------
step fail-oci-nv-false 60 nz "CTRUN_NV=false $OCI $IMG -- probe"
step fail-oci-cvd-7 60 nz "CUDA_VISIBLE_DEVICES=7 $OCI $IMG --nv -- probe"
step fail-host-cvd-7 30 nz 'CUDA_VISIBLE_DEVICES=7 "$KIT/saxpy"'
step image-ships-libcuda 60 any "$OCI $IMG2 --nv -- probe"
# runc as root failed (cgroups in a container?): the rootless path, as a plain user.
if ! grep -q '^oci-nv  *exit 0 ' <(printf '%s\n' "${SUMMARY[@]}"); then
	step oci-nv-as-nobody 60 any 'chmod 755 "$T"; mkdir -p "$T/u" "$T/kit" && cp -a "$KIT/bin" "$KIT/lib" "$T/kit/" &&
		mkdir "$T/kit/tiny" && tar -C "$T/kit/tiny" -xzf "$KIT/images/tiny.tar.gz" && chmod -R a+rX "$T/kit" && chown -R 65534:65534 "$T/kit/tiny" &&
		chown 65534:65534 "$T/u" && cd "$T/u" &&
		setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$T/u" TMPDIR="$T/u" CTRUN_CACHE_DIR="$T/u/cache" \
		PATH="$T/kit/bin:$PATH" ctrun --runtime oci --image "$T/kit/tiny" --no-python --nv -- probe'
fi

# --- e2. the enroot runtime with a real driver: ctrun's own enroot hook (ctrun-hook through a
#     per-run ENROOT_CONFIG_PATH), `enroot start` on the squashfs (squashfuse, fuse-overlayfs).
if [ -x "$KIT/enroot/bin/enroot" ]; then
	step enroot-setup 20 0 'sed -i "s|/opt/enroot|$KIT/enroot|g" "$KIT/enroot/bin/enroot" "$KIT/enroot/etc/enroot/enroot.conf" &&
		chmod a+x "$KIT"/enroot/bin/* && ls -l /dev/fuse && PATH=$KIT/enroot/bin:$PATH enroot version'
	# enroot's hooks.d/10-devices.sh, which ENROOT_RESTRICT_DEV=y (ctrun's GPU runs) wakes, binds
	# the host's /dev/log and /dev/mqueue without `nofail`: a host without them (this dev
	# machine, some VMs) gets enroot's "failed to mount: /dev/log". A fact of enroot's, not
	# ctrun's: say it, and give the run an empty /dev/log, removed at the end.
	if [ ! -e /dev/log ] && [ ! -L /dev/log ]; then
		echo "gpukit: this host has no /dev/log (enroot's 10-devices.sh needs one): an empty file for the enroot steps"
		: > /dev/log && ADDED_DEVLOG=1
	fi
	if ! mountpoint -q /dev/mqueue; then
		echo "gpukit: this host has no /dev/mqueue (enroot's 10-devices.sh binds it): mounted for the enroot steps"
		mkdir -p /dev/mqueue && mount -t mqueue -o nosuid,nodev,noexec mqueue /dev/mqueue && ADDED_MQUEUE=1
	fi
	ENR="env PATH=$KIT/enroot/bin:$PATH ENROOT_RUNTIME_PATH=$T/enroot-run ENROOT_CACHE_PATH=$T/enroot-cache ctrun --runtime enroot --no-python --image"
	step enroot-nv 90 0 "$ENR $IMG --nv -- probe"
	step enroot-nv-pinned-isolated 90 0 "CUDA_VISIBLE_DEVICES=\$GPU $ENR $IMG --nv --gpu-isolation -- probe"
	step enroot-2workers 90 0 "CUDA_VISIBLE_DEVICES=\$GPU $ENR $IMG --nv --nproc-per-node 2 -- probe 1048576"
	step fail-enroot-nv-false 90 nz "CTRUN_NV=false $ENR $IMG -- probe"
	step enroot-leftovers 20 0 'if grep -E "fuse|overlay" /proc/self/mounts | grep -E "$T|enroot"; then exit 1; fi; echo "no enroot mounts left"'
fi

# --- g. devices by CDI (docs/hooks.md "Devices and fabric"): a spec of this machine's GPUs
#     as the toolkit writes one, --device and [gpu] source under runc (and enroot).
CDI="env CTRUN_CDI_SPEC_DIRS=$T/cdi"
step cdi-spec-write 30 0 'bash tests/gpu/cdispec.sh "$T/cdi" && cat "$T/cdi/nvidia.yaml" && cp "$T/cdi/nvidia.yaml" "$OUT/"'
step cdi-device-gpu 60 0 "$CDI $OCI $IMG --device nvidia.com/gpu=\$GPU -- probe"
step cdi-device-all 60 0 "$CDI $OCI $IMG --device nvidia.com/gpu=all -- probe"
VIEW="sh -c 'ls /dev | grep ^nvidia | sort; nvidia-smi -L 2>&1 || true'"
step cdi-source-cdi 60 0 "CUDA_VISIBLE_DEVICES=\$GPU CTRUN_GPU_SOURCE=cdi $CDI $OCI $IMG -v -- probe 2>&1 | tee \$T/src-cdi.txt; rc=\${PIPESTATUS[0]};
	grep -q 'GPUs from CDI' \$T/src-cdi.txt || rc=1; exit \$rc"
step cdi-source-hook 60 0 "CUDA_VISIBLE_DEVICES=\$GPU CTRUN_GPU_SOURCE=hook $CDI $OCI $IMG -v -- probe 2>&1 | tee \$T/src-hook.txt; rc=\${PIPESTATUS[0]};
	grep -q 'GPUs from ctrun-hook' \$T/src-hook.txt || rc=1; exit \$rc"
step cdi-view-compare 60 0 "CUDA_VISIBLE_DEVICES=\$GPU CTRUN_GPU_SOURCE=cdi $CDI $OCI $IMG -q -- $VIEW > \$T/view-cdi.txt;
	CUDA_VISIBLE_DEVICES=\$GPU CTRUN_GPU_SOURCE=hook $CDI $OCI $IMG -q --nv -- $VIEW > \$T/view-hook.txt;
	cat \$T/view-cdi.txt; diff \$T/view-hook.txt \$T/view-cdi.txt && echo 'the same view from CDI and from ctrun-hook'"
if command -v nvidia-ctk >/dev/null; then
	step cdi-toolkit-spec 90 0 'mkdir -p "$T/cdi-ctk" && nvidia-ctk cdi generate --output="$T/cdi-ctk/nvidia.yaml" &&
		CTRUN_CDI_SPEC_DIRS=$T/cdi-ctk ctrun --runtime oci --no-python --image '"$IMG"' --device nvidia.com/gpu=all -- probe'
fi
if [ -n "${ENR:-}" ]; then
	step cdi-enroot 90 0 "$CDI $ENR $IMG --device nvidia.com/gpu=\$GPU -- probe"
fi
step fail-cdi-unknown 30 nz "$CDI $OCI $IMG --device nvidia.com/gpu=99 -- true"
# MIG and IMEX: what one lent machine usually lacks, said as such.
step mig 30 np 'if ! "${SMI:-nvidia-smi}" -q 2>/dev/null | grep -q "MIG Mode.*Current.*: Enabled"; then
	echo "MIG: not present (no GPU in MIG mode)"; exit 3; fi
	"${SMI:-nvidia-smi}" mig -lgi; ls -l /dev/nvidia-caps; m=$("${SMI:-nvidia-smi}" -L | sed -n "s/.*(UUID: \(MIG-[^)]*\)).*/\1/p" | head -1)
	[ -n "$m" ] && CUDA_VISIBLE_DEVICES=$m '"$OCI $IMG"' --nv -- probe'
step imex 30 np 'if [ ! -d /dev/nvidia-caps-imex-channels ]; then echo "IMEX channels: not present (no /dev/nvidia-caps-imex-channels)"; exit 3; fi
	ls -l /dev/nvidia-caps-imex-channels'

# --- f. the unit tests that depend on the GPU, the driver or /dev ------------------------
step unit-gpu-aware 90 0 'CTRUN_BUILD="$T/unit" bash tests/unit/run.sh "$KIT"/unit/* > "$T/unit.log" 2>&1; rc=$?;
	grep -E "FAILED|SKIPPED|exited|unit:" "$T/unit.log"; cp "$T/unit.log" "$OUT/unit.log"; exit $rc'
step torch-crosscheck 60 any 'py=python3; [ -x /opt/torch/.venv/bin/python ] && py=/opt/torch/.venv/bin/python;
	"$py" -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count()); print(torch.cuda.get_device_name(0), torch.cuda.nccl.version()) if torch.cuda.is_available() else None"'

echo
echo "== SUMMARY ($(($(date +%s) - START))s)"
printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
echo "gpukit: log $LOG; files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
cleanup
trap - EXIT
exec >&- 2>&-
wait "$TEE_PID" 2>/dev/null
exit 0
