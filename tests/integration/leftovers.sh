# leftovers.sh - sourced by run.sh: what a test may not leave behind, checked
# after every test on every node and on the host.
#
#   leftover_baseline   records the cluster as it is between tests: each
#                       node's mounts, the machine's network namespaces and
#                       ctrun-related mounts
#   leftover_check      waits (15 s at most) until the test's jobs are gone
#                       and nothing is left, then prints each leftover on a
#                       line and returns 1 if there is any:
#                       - a job still queued or running;
#                       - a node that cannot be entered (a dead node is not a
#                         clean one);
#                       - a process in a node other than its init, slurmd and
#                         the init's `sleep`;
#                       - a container runtime, FUSE, image tool or ctrun
#                         process, or any process of the test user, on the
#                         machine;
#                       - a mount in a node, or a ctrun mount or network
#                         namespace on the machine, that was not there before.
# Uses run.sh's $cluster and the cluster's environment (CTRUN_CLUSTER_*).
# shellcheck shell=bash

declare -A leftover_node_mounts
leftover_netns="" leftover_host_mounts=""

leftover_host_mount_list() {
	grep -E 'ctrun|/var/cache/ctrun-tests|overlay|fuse|squashfuse' /proc/self/mounts | sort || true
}

leftover_baseline() {
	local n
	for n in $CTRUN_CLUSTER_NODE_NAMES; do
		leftover_node_mounts[$n]=$("$cluster" exec "$n" cat /proc/self/mounts 2>/dev/null | sort)
	done
	leftover_netns=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
	leftover_host_mounts=$(leftover_host_mount_list)
}

# One pass; prints what is left.
leftover_scan() {
	local n procs jobs
	jobs=$(squeue -h -o '%i %u %T %j' 2>&1)
	[ -z "$jobs" ] || echo "job still in Slurm: $jobs"
	for n in $CTRUN_CLUSTER_NODE_NAMES; do
		if ! procs=$("$cluster" exec "$n" ps -e -o pid=,comm=,args= 2>&1); then
			echo "node $n cannot be entered: $procs"
			continue
		fi
		# The node's init (PID 1), slurmd, the init's `sleep 1`, and this ps.
		awk '$1 != 1 && $2 != "slurmd" && $2 != "ps" && !($2 == "sleep" && $3 == "sleep" && $4 == "1" && NF == 4)' \
			<<<"$procs" | sed "s/^/process on $n: /"
		comm -13 <(echo "${leftover_node_mounts[$n]}") \
			<("$cluster" exec "$n" cat /proc/self/mounts 2>/dev/null | sort) | sed "s/^/mount on $n: /"
	done
	# Anything still in the test's session (run.sh sets leftover_sid).
	[ -n "${leftover_sid:-}" ] && ps -e -o pid=,sid=,args= |
		awk -v s="$leftover_sid" '$2 == s' | sed 's/^/process of the test on the machine: /'
	ps -e -o pid=,user=,comm=,args= |
		awk '$3 ~ /^(runc|crun|enroot|enroot-.*|squashfuse.*|fuse-overlayfs|unsquashfs|mksquashfs|ctrun|ctrun-agent|ctrun-worker|ctrun-hook|singularity|apptainer|starter.*)$/ || $2 == "ctrunuser"' |
		sed 's/^/process on the machine: /'
	comm -13 <(echo "$leftover_netns") <(ip netns list 2>/dev/null | awk '{print $1}' | sort) |
		sed 's/^/network namespace on the machine: /'
	comm -13 <(echo "$leftover_host_mounts") <(leftover_host_mount_list) | sed 's/^/mount on the machine: /'
}

# After a test that left something: end it, so the next test starts clean
# (the test has failed already).
leftover_cleanup() {
	local n
	scancel --quiet --full --user=root 2>/dev/null
	scancel --quiet --full --user=ctrunuser 2>/dev/null
	pkill -KILL -u ctrunuser 2>/dev/null
	[ -n "${leftover_sid:-}" ] && pkill -KILL -s "$leftover_sid" 2>/dev/null
	pkill -KILL -x 'runc|crun|squashfuse|squashfuse_ll|fuse-overlayfs|ctrun|ctrun-agent|ctrun-worker' 2>/dev/null
	for n in $CTRUN_CLUSTER_NODE_NAMES; do
		"$cluster" exec "$n" sh -c 'for p in $(ps -e -o pid=,comm= | awk '"'"'$1 != 1 && $2 != "slurmd" && $2 != "ps" && $2 != "sh" && $2 != "awk" {print $1}'"'"'); do kill -9 $p 2>/dev/null; done' 2>/dev/null
	done
	leftover_check > /dev/null || true
}

leftover_check() {
	local i left
	for ((i = 0; i < 150; i++)); do
		left=$(leftover_scan)
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	printf '%s\n' "$left"
	return 1
}
