#!/bin/bash
# ctrun --unshare net,ipc,uts (pyxis's --container-unshare, enroot's --net
# --ipc --uts): namespaces of the container's own under runc (oci), crun
# and a real enroot, as the unprivileged test user through srun; the host's
# without it; apptainer/Singularity and charliecloud refuse it in one line
# (exit 2), as does an unknown name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
rt_rows_setup "$user"
node=${NODES[0]}
host_ns=$("$CLUSTER" exec "$node" sh -c 'echo $(readlink /proc/self/ns/net) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/uts)')
f=ctrun-it-unshare-shm-$$
trap '"$CLUSTER" exec "$node" rm -f "/dev/shm/$f"; cleanup_tmp' EXIT

# What the worker sees: its network, IPC and UTS namespaces, its network's
# interfaces and whether the loopback is up, and whether a file it makes in
# /dev/shm is the host's.
cat > u/probe.sh <<SH
echo \$(readlink /proc/self/ns/net) \$(readlink /proc/self/ns/ipc) \$(readlink /proc/self/ns/uts)
echo \$(awk -F: 'NR > 2 { print \$1 }' /proc/net/dev | tr -d ' ') \$(ip link show lo | grep -c '[<,]UP[,>]')
touch /dev/shm/$f
SH
chmod 644 u/probe.sh
run() { # RUNTIME [CTRUN OPTION...]
	local rt=$1
	shift
	as_user srun -N1 -n1 -w "$node" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image "$BB" \
		sh "$TMPD/u/probe.sh"
}

shm_is_hosts() { "$CLUSTER" exec "$node" test -e "/dev/shm/$f"; }
shm_gone() { "$CLUSTER" exec "$node" rm -f "/dev/shm/$f"; }
own_namespaces() { # RUNTIME NAMESPACES
	local out i
	out=$(run "$1" --unshare "$2")
	echo "$out"
	for i in 1 2 3; do
		case $i:$2 in 2:*ipc*|1:*net*|3:*uts*) ;; *) continue ;; esac
		[ "$(sed -n 1p <<<"$out" | cut -d' ' -f"$i")" != "$(cut -d' ' -f"$i" <<<"$host_ns")" ] ||
			fail "namespace $i is the node's ($1): $out / $host_ns"
	done
	case $2 in
	*net*) assert_eq "lo 1" "$(sed -n 2p <<<"$out")" "the network: the loopback alone, up ($1)" ;;
	esac
	case $2 in
	*ipc*) ! shm_is_hosts || { shm_gone; fail "--unshare ipc wrote the host's /dev/shm ($1)"; } ;;
	*) shm_gone ;;
	esac
}
host_namespaces() { # RUNTIME
	local out
	out=$(run "$1")
	assert_eq "$host_ns" "$(sed -n 1p <<<"$out")" "the node's namespaces without --unshare ($1)"
	shm_is_hosts || fail "without --unshare /dev/shm is the host's ($1)"
	shm_gone
}
for rt in oci crun; do
	behaviour "$rt: --unshare net,ipc,uts: namespaces of its own" with_rt "$rt" own_namespaces net,ipc,uts
	behaviour "$rt: without it, the node's" with_rt "$rt" host_namespaces
done
# enroot 4.1.2 fails by itself on these test machines with its other two:
# --ipc's hook (10-devices.sh) binds the host's /dev/log, which they lack
# (no syslog), and --net mounts a sysfs of its own and then cannot make
# /sys/fs/cgroup/systemd in it (a cgroup2-only host).  ctrun's arguments to
# it are test_enroot.c's.
behaviour "enroot: --unshare uts: a namespace of its own" with_rt enroot own_namespaces uts
behaviour "enroot: without it, the node's" with_rt enroot host_namespaces

refused() { # RUNTIME
	run_rc run "$1" --unshare net 2> err
	assert_eq 2 "$rc" "exit status ($1)"
	assert_eq 1 "$(grep -v -c '^srun: ' err)" "one line: $(cat err)"
	grep -q -- "--unshare net: .* cannot give the container namespaces of its own" err ||
		fail "the line: $(cat err)"
}
for rt in charliecloud singularity; do
	behaviour "$rt: refused in one line" with_rt "$rt" refused
done
bad_name() {
	run_rc run oci --unshare net,pid 2> err
	assert_eq 2 "$rc" "exit status"
	grep -q -- "--unshare net,pid: unknown namespace 'pid'" err || fail "the line: $(cat err)"
}
behaviour "an unknown name: exit 2, one line" bad_name
behaviour "no container left" assert_no_containers
