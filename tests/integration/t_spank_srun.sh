#!/bin/bash
# tag: every-slurm
# The SPANK plugin (build/spank_ctrun.so) in srun, as the test user: a job
# without --container-* is not touched; `srun --container-image=SQSH`
# runs the command in the image; the tasks of a node share one container
# (one mount namespace, one image mount); every task gets the torchrun
# contract; DDP 2 nodes x 2 tasks trains with no wrapper; nothing is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image TORCH torch.sqsh
spank_cluster_up
cd "$TMPD"

untouched() {
	local node task
	node=$("$CLUSTER" exec "${NODES[0]}" readlink /proc/self/ns/mnt)
	task=$(as_user srun -N1 -w "${NODES[0]}" readlink /proc/self/ns/mnt)
	assert_eq "$node" "$task" "a plain task's mount namespace"
	as_user srun -N1 test -x /usr/bin/python3 || fail "a plain task does not see the host's files"
}
behaviour "a job without --container-* is not touched" untouched

in_image() {
	local out
	out=$(as_user srun -N1 --container-image="$BB" sh -c \
		'test ! -e /usr/bin/python3 && test -x /bin/busybox && id -u && pwd && ls -d /proc/self/fd')
	# The image's working directory: / (busybox has no WORKDIR, pyxis's rule).
	assert_eq "$(id -u "$SPANK_USER");/;/proc/self/fd;" "$(tr '\n' ';' <<<"$out")" \
		"uid, working directory and /proc in the container"
	run_rc as_user srun -N1 --container-image="$BB" true
	assert_eq 0 "$rc" "srun --container-image=SQSH true"
	run_rc as_user srun -N1 --container-image="$BB" sh -c 'exit 3'
	assert_eq 3 "$rc" "the task's exit status"
}
behaviour "srun --container-image=SQSH runs the command in the image, as the user" in_image

one_per_node() {
	local out
	# An unpacked entry of the image in the user's node cache would win over
	# a mount (ctrroot.c): start from none, whatever ran before.
	as_user "$CTRUN" cache remove "$BB" > /dev/null 2>&1 || true
	assert_eq "" "$(as_user "$CTRUN" cache list | grep -F "$BB" || true)" "no unpacked entry of the image"
	# Each task: its node, its mount namespace, the node's image mounts
	# (rootless: squashfuse processes of the image holder; the node's /proc
	# is the container's).
	out=$(as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" sh -c \
		'echo "$(hostname) $(readlink /proc/self/ns/mnt) $(ps -o comm | grep -c squashfuse)"')
	note "$out"
	assert_eq 4 "$(wc -l <<<"$out")" "tasks"
	assert_eq 2 "$(awk '{print $1}' <<<"$out" | sort -u | wc -l)" "nodes"
	assert_eq 2 "$(awk '{print $1, $2}' <<<"$out" | sort -u | wc -l)" "one mount namespace per node"
	assert_eq "1;1;1;1;" "$(awk '{print $3}' <<<"$out" | tr '\n' ';')" "one image mount per node"
	for n in "${NODES[@]}"; do
		[ "$(grep "^$n " <<<"$out" | awk '{print $2}' | sort -u)" != \
			"$("$CLUSTER" exec "$n" readlink /proc/self/ns/mnt)" ] || fail "$n: tasks on the host"
	done
}
behaviour "the tasks of a node share one container" one_per_node

contract() {
	local out
	out=$(as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" sh -c \
		'echo "$SLURM_PROCID $RANK $SLURM_LOCALID $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK $MASTER_ADDR $MASTER_PORT"')
	note "$out"
	assert_eq 4 "$(wc -l <<<"$out")" "tasks"
	while read -r procid rank localid lrank world lworld noderank addr port; do
		assert_eq "$procid" "$rank" "RANK"
		assert_eq "$localid" "$lrank" "LOCAL_RANK"
		assert_eq "4 2" "$world $lworld" "WORLD_SIZE LOCAL_WORLD_SIZE"
		assert_eq "$((procid / 2))" "$noderank" "NODE_RANK"
		[[ $addr != 127.* && -n $port ]] || fail "MASTER_ADDR $addr MASTER_PORT $port"
	done <<<"$out"
	assert_eq 1 "$(awk '{print $8, $9}' <<<"$out" | sort -u | wc -l)" "one MASTER_ADDR:PORT"
}
behaviour "every task gets the torchrun contract" contract

ddp() {
	mkdir -p ddp && chmod 777 ddp
	cp "$CTRUN_REPO/examples/train_ddp.py" .
	run_rc as_user srun -N2 --ntasks-per-node=2 --container-image="$TORCH" \
		python3 "$TMPD/train_ddp.py" --epochs 1 --out "$TMPD/ddp"
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD/ddp" 2 2
}
behaviour "DDP 2 nodes x 2 tasks through srun --container-image alone" ddp

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_leftovers "squashfuse" 2
	assert_no_rundirs
}
behaviour "nothing is left on the nodes" nothing_left
