#!/bin/bash
# tag: every-slurm
# The user namespace of the SPANK plugin's tasks as tools see it, under
# the plugin's runtimes (runc and crun): pyxis's remap_root.bats and
# env_vars.bats read /proc/self/uid_map ("UID UID 1" as the user, "0 UID
# 1" with --container-remap-root), and unshare_uts.bats sets the
# container's host name as the user.  A task is the user in a namespace
# that maps them to themselves, with no capability there, and owns the
# runtime's namespace below it (runner/container/userns.h): so it may
# change what is the container's own (its UTS namespace) and nothing of
# the node's: the node's host name, its mounts, its files' owners.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
uid=$(id -u "$SPANK_USER")
gid=$(id -g "$SPANK_USER")
# Each task's maps on one line.
maps='echo $(cat /proc/self/uid_map) / $(cat /proc/self/gid_map)'
tally() { sort | uniq -c | sed 's/^ *//'; }

maps_of() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" --container-runtime="$rt" \
		sh -c "$maps")
	assert_eq "4 $uid $uid 1 / $gid $gid 1" "$(tally <<<"$out")" \
		"$rt: the maps of each of 2 x 2 tasks (the user as themselves)"
	out=$(as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" --container-runtime="$rt" \
		--container-remap-root sh -c "$maps")
	assert_eq "4 0 $uid 1 / 0 $gid 1" "$(tally <<<"$out")" \
		"$rt: with --container-remap-root (root mapped to the user)"
	# env_vars.bats: the variable, and the command line over it.
	assert_eq "0 $uid 1 / 0 $gid 1" "$(PYXIS_CONTAINER_REMAP_ROOT=1 as_user srun -N1 \
		--container-image="$BB" --container-runtime="$rt" sh -c "$maps")" \
		"$rt: PYXIS_CONTAINER_REMAP_ROOT=1"
	assert_eq "$uid $uid 1 / $gid $gid 1" "$(PYXIS_CONTAINER_REMAP_ROOT=1 as_user srun -N1 \
		--container-image="$BB" --container-runtime="$rt" --no-container-remap-root sh -c "$maps")" \
		"$rt: --no-container-remap-root over PYXIS_CONTAINER_REMAP_ROOT=1"
}
behaviour "runc: uid_map and gid_map of every task (remap_root.bats, env_vars.bats)" maps_of oci
behaviour "crun: uid_map and gid_map of every task (remap_root.bats, env_vars.bats)" maps_of crun

# unshare_uts.bats "isolates sethostname", then what the task cannot do:
# no capability in its own namespace, the node's host name, a new mount,
# the owner of a node's file it may write, a node's file it may not.
uts() { # RUNTIME
	local rt=$1 node=${NODES[0]} name out rc
	local run=(as_user srun -N1 -w "$node" --container-image="$BB" --container-runtime="$rt")
	name=$("$CLUSTER" exec "$node" hostname)
	assert_eq "$name" "$("${run[@]}" --container-unshare=uts hostname)" "$rt: the node's name first"
	assert_eq "container-test" "$("${run[@]}" --container-unshare=uts \
		sh -c 'hostname container-test && hostname')" "$rt: hostname container-test as the user"
	assert_eq "$name" "$("$CLUSTER" exec "$node" hostname)" "$rt: the node's name after it"
	out=$(as_user srun -N1 -w "$node" --ntasks-per-node=2 --container-image="$BB" \
		--container-runtime="$rt" --container-unshare=uts sh -c \
		'[ "$SLURM_LOCALID" = 1 ] || hostname container-2; sed -n "s/^CapEff:[[:space:]]*//p" /proc/self/status')
	assert_eq "2 0000000000000000" "$(tally <<<"$out")" "$rt: no capability in the task's own namespace"
	run_rc "${run[@]}" hostname container-test 2> err
	[ "$rc" -ne 0 ] || fail "$rt: hostname changed the node's UTS namespace (no --container-unshare=uts)"
	assert_eq "$name" "$("$CLUSTER" exec "$node" hostname)" "$rt: the node's name after the refusal"
	mkdir -p "$TMPD/m-$rt"
	chmod 777 "$TMPD/m-$rt"
	run_rc "${run[@]}" mount -t tmpfs tmpfs "$TMPD/m-$rt" 2> err
	[ "$rc" -ne 0 ] || fail "$rt: a tmpfs mounted over a node's directory"
	"$CLUSTER" exec "$node" sh -c "! grep -q ' $TMPD/m-$rt ' /proc/self/mountinfo" ||
		fail "$rt: a mount on the node at $TMPD/m-$rt"
	# A file made in a bound directory is the user's on the node; a chown
	# of it to root succeeds (root emulation) and changes nothing.
	"${run[@]}" sh -c "touch '$TMPD/m-$rt/f' && chown 0:0 '$TMPD/m-$rt/f'" ||
		fail "$rt: touch, chown in a bound directory"
	assert_eq "$uid:$gid" "$(stat -c %u:%g "$TMPD/m-$rt/f")" "$rt: the owner on the node"
	run_rc "${run[@]}" sh -c 'echo 10.0.0.1 ctrun-it-userns >> /etc/hosts' 2> err
	[ "$rc" -ne 0 ] || fail "$rt: the task wrote the node's /etc/hosts"
	"$CLUSTER" exec "$node" sh -c '! grep -q ctrun-it-userns /etc/hosts' || fail "$rt: /etc/hosts changed"
}
behaviour "runc: hostname under --container-unshare=uts as the user, nothing of the node's (unshare_uts.bats)" uts oci
behaviour "crun: hostname under --container-unshare=uts as the user, nothing of the node's (unshare_uts.bats)" uts crun
