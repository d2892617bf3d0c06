# Sourced by the t_hook_*.sh tests (after lib.sh) and by the step scripts
# they run inside Slurm tasks: busybox OCI bundles for real runc, and jobs
# that hold GPUs so a test's own step gets GPUs other than 0.
# Functions only: nothing here runs when it is sourced.

HOOK=${HOOK:-$CTRUN_REPO/build/ctrun-hook}
BUSYBOX=${BUSYBOX:-/bin/busybox}
PY=${PY:-/usr/bin/python3}

# Skips (exit 77) when the machine lacks what the hook tests run on.
hook_requirements() {
	command -v runc >/dev/null || skip "runc is not installed (Debian package runc)"
	"$BUSYBOX" --list >/dev/null 2>&1 || skip "no $BUSYBOX (Debian package busybox-static)"
	[ -x "$HOOK" ] || fail "$HOOK is missing: run make"
}

# make_rootfs DIR: a busybox root file system (static, so it needs no libc).
make_rootfs() {
	local a
	mkdir -p "$1/bin" "$1/proc" "$1/sys" "$1/dev" "$1/etc" "$1/tmp"
	cp "$BUSYBOX" "$1/bin/busybox"
	for a in $("$1/bin/busybox" --list); do
		[ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"
	done
}

# make_bundle DIR SCRIPT [KEY=VALUE...]: `runc spec` with SCRIPT as the
# container's process (/bin/sh -c) and the given environment.
make_bundle() {
	local dir=$1 script=$2
	shift 2
	mkdir -p "$dir"
	make_rootfs "$dir/rootfs"
	(cd "$dir" && runc spec)
	"$PY" - "$dir/config.json" "$script" "$@" <<'EOF'
import json, sys
path, script, env = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c", script]
c["process"]["env"] = ["PATH=/bin"] + env
c["root"]["readonly"] = False
json.dump(c, open(path, "w"), indent=1)
EOF
}

# add_hook DIR [ANNOTATION=VALUE...]: what a hooks.d runtime (podman) does
# for a container carrying org.ctrun.enabled=true: the annotation and the
# hook at createContainer, nothing else (no device rules, no renumbering).
add_hook() {
	local dir=$1
	shift
	"$PY" - "$dir/config.json" "$HOOK" "$@" <<'EOF'
import json, sys
path, hook, anns = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(path))
a = c.setdefault("annotations", {})
a["org.ctrun.enabled"] = "true"
for kv in anns:
    k, v = kv.split("=", 1)
    a[k] = v
c.setdefault("hooks", {}).setdefault("createContainer", []).append(
    {"path": hook, "args": ["ctrun-hook", "createContainer"]})
json.dump(c, open(path, "w"), indent=1)
EOF
}

# What the test containers print: each /dev/nvidia* node with its major and
# minor (hex, as stat %t %T), the GPU variables, and what opening each GPU
# node gives (the fake GPUs have no driver: ENXIO when the device cgroup
# lets the open through, EPERM when it does not).
# shellcheck disable=SC2016
REPORT='for f in /dev/nvidia*; do [ -e "$f" ] && stat -c "node %n %t %T" "$f"; done
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
echo "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset}"
for f in /dev/nvidia[0-9]*; do [ -e "$f" ] && echo "open $f: $(head -c1 "$f" 2>&1 >/dev/null)"; done
true'

# hold_gpus N: a batch job holding N GPUs of the first node for the rest of
# the test, so the test's own steps get the next ones (2,3 after 0,1).
hold_gpus() {
	local id i
	id=$(sbatch --parsable -N1 -w "${NODES[0]}" --gpus-per-node="$1" -o /dev/null \
		--wrap "sleep 300")
	for ((i = 0; i < 200; i++)); do
		[ "$(squeue -h -j "$id" -o %T)" = RUNNING ] && return 0
		sleep 0.1
	done
	fail "job $id holding $1 GPUs did not start"
}

# mount_count: mounts in this process's mount namespace.
mount_count() {
	wc -l </proc/self/mountinfo
}
