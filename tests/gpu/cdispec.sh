#!/bin/bash
# cdispec.sh DIR: writes DIR/nvidia.yaml, a CDI spec of this machine's GPUs as NVIDIA's
# container toolkit writes one (`nvidia-ctk cdi generate`): kind nvidia.com/gpu, a device
# per GPU by index and by UUID, and `all`; the control nodes and the driver's libraries
# and tools of the spec's own edits (mounts of the host's files, read-only, as the
# toolkit lists them; ctrun-hook's choice of libraries: `ctrun-hook driver-files`).  No
# hooks: the toolkit's nvidia-cdi-hook is not on every machine, and the image's library
# directory is in the loader's default path.  Needs ctrun-hook and nvidia-smi on PATH.
set -euo pipefail
dir=$1
mkdir -p "$dir"
libdir=/usr/lib/x86_64-linux-gnu
out=$dir/nvidia.yaml
gpus=$(ls /dev | sed -n 's/^nvidia\([0-9][0-9]*\)$/\1/p' | sort -n)
[ -n "$gpus" ] || { echo "cdispec: no /dev/nvidiaN" >&2; exit 1; }
uuid() { # MINOR: the GPU's UUID from the driver's information file, else nothing
	local f
	for f in /proc/driver/nvidia/gpus/*/information; do
		[ -r "$f" ] || continue
		grep -q "^Device Minor:[[:space:]]*$1\$" "$f" &&
			sed -n 's/^GPU UUID:[[:space:]]*//p' "$f" && return 0
	done
	return 0
}
{
	echo "---"
	echo "cdiVersion: 0.5.0"
	echo "kind: nvidia.com/gpu"
	echo "containerEdits:"
	echo "  deviceNodes:"
	for n in nvidiactl nvidia-uvm nvidia-uvm-tools; do
		[ -c "/dev/$n" ] && echo "  - {path: /dev/$n}"
	done
	echo "  mounts:"
	ctrun-hook driver-files "$libdir" | while read -r src dst; do
		echo "  - {hostPath: $src, containerPath: $dst, options: [ro, nosuid, nodev, bind]}"
	done
	echo "devices:"
	for g in $gpus; do
		echo "- {name: \"$g\", containerEdits: {deviceNodes: [{path: /dev/nvidia$g}]}}"
		u=$(uuid "$g")
		[ -z "$u" ] || echo "- {name: \"$u\", containerEdits: {deviceNodes: [{path: /dev/nvidia$g}]}}"
	done
	echo "- name: all"
	echo "  containerEdits:"
	echo "    deviceNodes:"
	for g in $gpus; do echo "    - {path: /dev/nvidia$g}"; done
} > "$out"
echo "cdispec: wrote $out ($(grep -c 'name:' "$out") devices, $(grep -c hostPath "$out") mounts)"
