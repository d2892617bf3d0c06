#!/bin/bash
# tag: every-slurm
# ctrun -v names the libslurm of the Slurm running the job: the newest
# libslurm.so.N of the install whose srun is on PATH (Debian's .38 under
# /usr, a 26.05 build's .45 under its prefix), never another install's.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
srun_path=$(readlink -f "$(command -v srun)")
prefix=$(dirname "$(dirname "$srun_path")")
want=$(find "$prefix"/lib64 "$prefix"/lib "$prefix"/lib/*-linux-* -maxdepth 1 \
	-regex '.*/libslurm\.so\.[0-9]+' 2>/dev/null | sort -t. -k3 -n | tail -1 || true)
[ -n "$want" ] || fail "no libslurm.so.N under $prefix (the install of $srun_path)"
want=$(readlink -f "$want")
of_srun() {
	srun -N1 "$CTRUN" -v env --nproc-per-node 1 > env.txt 2> err.txt
	cat err.txt
	grep -qF "hostlists on ${NODES[0]}: libslurm $want (the Slurm of srun on PATH ($srun_path))" err.txt ||
		fail "ctrun -v did not name $want of $prefix"
}
# The choice follows PATH: with no Slurm command on it, the dynamic
# linker's newest soname (Debian's, when no other is in its path).
without_srun() {
	srun -N1 env PATH=/nonexistent "$CTRUN" -v env --nproc-per-node 1 > /dev/null 2> err2.txt || true
	cat err2.txt
	grep -q "hostlists on ${NODES[0]}: libslurm .*libslurm.so.[0-9.]* (no Slurm install found from PATH" err2.txt ||
		grep -q "hostlists on ${NODES[0]}: libslurm .*(the Slurm of SLURM_CONF" err2.txt ||
		fail "without srun on PATH, ctrun -v did not say where the library came from"
}
behaviour "the libslurm of the install whose srun is on PATH" of_srun
behaviour "without srun on PATH: the library and where it came from" without_srun
