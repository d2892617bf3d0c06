#!/bin/bash
# The --dry-run corpus: `ctrun --dry-run` (and `ctrun shell`, `ctrun env`,
# the image's default command) over every runtime x image kind x container
# option x launch mode x user, each case's stdout, stderr and exit status
# recorded, so that two builds can be compared byte for byte (a refactor
# that must not change behaviour, issue 30).  docs/testing.md, "The
# --dry-run corpus".
#
#   corpus.sh run OUT [BINDIR]   every case with BINDIR/ctrun (default
#                                build/) into OUT/CASE (one file each: stdout,
#                                then "--- stderr", stderr, "--- exit N")
#   corpus.sh diff A B           diff -r of two such directories: 0 = same
#   corpus.sh compare REV        REV's build (made once, in build/dryrun/REV)
#                                against this tree's build/: the cases whose
#                                output differs, and exit 1 if any does
#   corpus.sh list               the case names
# CTRUN_CORPUS_FILTER=REGEX runs only the cases whose name matches.
#
# The environment is pinned: as root, the cases run in a private mount and
# UTS namespace (host name cnode1, an /etc/hosts of the fake nodes, a /dev
# with fake GPUs where a context has them), with env -i and fixed variables;
# the runtimes are stubs on a PATH of the corpus's own (apptainer and
# singularity answer --version, enroot is a script whose configuration
# paths ctrun reads), the images are tiny ones built here from a tree of a
# few files (squashfs, SIF, docker and OCI archives, the directory).  What
# changes from run to run and build to build is written as a placeholder:
# the work directory <W>, the build directory <BIN>, the run id's pid and
# random part, the image identity <ID>.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$repo/tests/dryrun

usage() { sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d' >&2; exit 2; }

# --- the work directory: images, stubs, data, caches --------------------------

# make_tree DIR [bare]: an image's root file system, a few files: enough for
# every question ctrun asks of a root (passwd, group, Debian's apt, bash,
# /etc/rc, a SIF's runscript and env scripts, the escape bait of a symlink).
# bare: nothing but /bin/sh (no /etc, /dev, /proc, /sys, /tmp).
make_tree() {
	local r=$1
	mkdir -p "$r/bin"
	printf '#!/bin/sh\n' >"$r/bin/sh"
	chmod 755 "$r/bin/sh"
	[ "${2:-}" = bare ] && return 0
	mkdir -p "$r/etc/apt/apt.conf.d" "$r/dev" "$r/proc" "$r/sys" "$r/tmp" "$r/mnt" "$r/opt" \
		"$r/home" "$r/root" "$r/.singularity.d/env" "$r/usr/bin"
	cp "$r/bin/sh" "$r/bin/bash"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		>"$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
	echo 12.0 >"$r/etc/debian_version"
	printf 'PATH=/usr/local/bin:/usr/bin:/bin\nIMAGE_VAR="from the image"\n' >"$r/etc/environment"
	printf '#!/bin/sh\nexec "$@"\n' >"$r/etc/rc"
	printf '#!/bin/sh\nexec "$@"\n' >"$r/.singularity.d/runscript"
	printf 'export SIF_VAR=1\n' >"$r/.singularity.d/env/90-environment.sh"
	chmod 755 "$r/etc/rc" "$r/.singularity.d/runscript"
	ln -s /etc "$r/mnt/evil"
}

# stub DIR NAME TEXT: an executable shell script.
stub() {
	mkdir -p "$1"
	printf '#!/bin/sh\n%s\n' "$3" >"$1/$2"
	chmod 755 "$1/$2"
}

# The enroot script's lines that ctrun reads for its configuration's place.
enroot_stub() { # DIR CONF SYSCONF
	mkdir -p "$1"
	printf '#!/bin/bash\n# a stub of enroot 4.1.2\nconfig::init "%s"\nconfig::export ENROOT_SYSCONF_PATH "%s"\nexit 0\n' \
		"$2" "$3" >"$1/enroot"
	chmod 755 "$1/enroot"
}

# The PATH sets: each a directory of runtime stubs, plus one of the host's
# image tools (unsquashfs, squashfuse, squashfuse_ll, fuse-overlayfs),
# where they are installed.
make_paths() {
	local p=$W/path t
	mkdir -p "$p/tools"
	for t in unsquashfs squashfuse squashfuse_ll fuse-overlayfs; do
		t=$(command -v "$t") && ln -s "$t" "$p/tools/"
	done
	# every runtime; enroot as it installs itself (auto: ctrun's own start)
	enroot_stub "$p/all" "$W/enroot-etc/enroot.conf" "$W/enroot-etc"
	stub "$p/all" runc 'exit 0'
	stub "$p/all" crun 'exit 0'
	stub "$p/all" ch-run 'exit 0'
	stub "$p/all" apptainer 'echo "apptainer version 1.3.4"'
	stub "$p/all" singularity 'echo "singularity-ce version 4.1.0"'
	# enroot with a site's mount (auto takes enroot), runc, Singularity 3
	enroot_stub "$p/site" "$W/enroot-site/enroot.conf" "$W/enroot-site"
	stub "$p/site" runc 'exit 0'
	stub "$p/site" singularity 'echo "singularity version 3.4.2"'
	mkdir -p "$W/enroot-site/mounts.d" "$W/enroot-etc"
	echo '/scratch /scratch none x-create=dir,bind,rw' >"$W/enroot-site/mounts.d/site.fstab"
	# one runtime each
	stub "$p/s3" singularity 'echo "singularity version 3.4.2"'
	stub "$p/old" apptainer 'echo "apptainer version 0.9.0"'
	stub "$p/ch" ch-run 'exit 0'
	stub "$p/crun" crun 'exit 0'
	mkdir -p "$p/none"
}

make_images() {
	local i=$W/img
	mkdir -p "$i"
	make_tree "$i/rootfs"
	make_tree "$i/bare" bare
	mksquashfs "$i/rootfs" "$i/image.sqsh" -noappend -all-root -quiet -no-progress >/dev/null
	mksquashfs "$i/bare" "$i/bare.sqsh" -noappend -all-root -quiet -no-progress >/dev/null
	python3 "$repo/tests/images/mksif.py" "$i/image.sqsh" "$i/image.sif"
	python3 "$repo/tests/images/mkdocker.py" --format docker --tag corpus/img:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env CORPUS=docker \
		"$i/image-docker.tar" "$i/rootfs" >/dev/null
	python3 "$repo/tests/images/mkdocker.py" --format oci --tag corpus/img:latest \
		--env PATH=/usr/sbin:/usr/bin:/sbin:/bin --env CORPUS=oci \
		"$i/image-oci.tar" "$i/rootfs" >/dev/null
	head -c 4096 /dev/zero >"$i/unknown.img"
	mkfifo "$i/fifo.img"
	chmod -R a+rX "$i"
}

make_data() {
	mkdir -p "$W/data" "$W/cwd" "$W/logs" "$W/out" "$W/we,ird:dir" "$W/nl"$'\n'"dir" \
		"$W/home-root" "$W/home-user" "$W/tmp-root" "$W/tmp-user" "$W/cache-root" "$W/cache-user" \
		"$W/warm-root" "$W/warm-user"
	echo data >"$W/data/file.txt"
	mkdir -p "$W/cwd/data"
	echo text >"$W/file.txt"
	printf 'FROM_FILE=1\n# a comment\nQUOTED="a b"\n' >"$W/envfile"
	chown 1003:1003 "$W/home-user" "$W/tmp-user" "$W/cache-user" "$W/warm-user" "$W/out"
	chmod 700 "$W/tmp-root" "$W/tmp-user" "$W/cache-root" "$W/cache-user" "$W/warm-root" "$W/warm-user"
	chmod 755 "$W"
	# /etc/hosts in the namespace: the fake nodes (MASTER_ADDR resolves).
	printf '127.0.0.1 localhost\n10.250.0.1 cnode1\n10.250.0.2 cnode2\n' >"$W/hosts"
}

# --- contexts: who runs ctrun, and under which Slurm variables -----------------

# ctx_env CTX: the environment of a context, one KEY=VALUE a line.
# CTX = USER-MODE-PATHSET[-warm]: USER root|user, MODE standalone|node|node1|
# task|batch, PATHSET a directory of $W/path; warm: the warm node cache.
ctx_env() {
	local user mode pathset cache
	IFS=- read -r user mode pathset cache <<<"$1"
	echo "PATH=$W/path/$pathset:$W/path/tools:/nonexistent-bin"
	echo "LANG=C.UTF-8"
	echo "TERM=dumb"
	echo "HOSTVAR=from the host"
	echo "CTRUN_NO_LIBSLURM=1"
	if [ "$user" = root ]; then
		printf '%s\n' "HOME=$W/home-root" USER=root LOGNAME=root "TMPDIR=$W/tmp-root"
	else
		printf '%s\n' "HOME=$W/home-user" USER=ctrunuser LOGNAME=ctrunuser "TMPDIR=$W/tmp-user"
	fi
	echo "CTRUN_CACHE_DIR=$W/${cache:-cache}-$user"
	case $mode in
	standalone) echo "CTRUN_MASTER_PORT=29400" ;;
	batch)
		printf '%s\n' SLURM_JOB_ID=4242 SLURM_JOB_NODELIST='cnode[1-2]' SLURM_JOB_NUM_NODES=2 \
			SLURM_NTASKS=2 SLURM_TASKS_PER_NODE='1(x2)' SLURMD_NODENAME=cnode1 ;;
	node | node1)
		printf '%s\n' SLURM_JOB_ID=4242 SLURM_STEP_ID=3 SLURM_JOB_NODELIST='cnode[1-2]' \
			SLURM_STEP_NODELIST='cnode[1-2]' SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=2 \
			SLURM_STEP_TASKS_PER_NODE='1(x2)' SLURM_LOCALID=0 CUDA_VISIBLE_DEVICES=0,1,2,3 \
			SLURM_STEP_GPUS=0,1,2,3 SLURM_GPUS_ON_NODE=4
		if [ "$mode" = node ]; then
			printf '%s\n' SLURMD_NODENAME=cnode1 SLURM_NODEID=0 SLURM_PROCID=0
		else
			printf '%s\n' SLURMD_NODENAME=cnode2 SLURM_NODEID=1 SLURM_PROCID=1
		fi ;;
	task)
		printf '%s\n' SLURM_JOB_ID=4242 SLURM_STEP_ID=5 SLURM_JOB_NODELIST='cnode[1-2]' \
			SLURM_STEP_NODELIST='cnode[1-2]' SLURM_STEP_NUM_NODES=2 SLURM_STEP_NUM_TASKS=8 \
			SLURM_STEP_TASKS_PER_NODE='4(x2)' SLURMD_NODENAME=cnode1 SLURM_NODEID=0 \
			SLURM_PROCID=1 SLURM_LOCALID=1 CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=1 \
			SLURM_GPUS_ON_NODE=1 ;;
	esac
}

# --- running a case -------------------------------------------------------------

# The placeholders of what differs between runs and builds, over every file
# of OUT at once.
normalize() {
	local bin w
	bin=$(sed 's/[][\\.*^$|]/\\&/g' <<<"$BIN") w=$(sed 's/[][\\.*^$|]/\\&/g' <<<"$W")
	find "$OUT" -type f -name '*.[oe]' -print0 | xargs -0 -r sed -i -E \
		-e "s|$bin|<BIN>|g" -e "s|$w|<W>|g" \
		-e 's/(ctrun-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-)[0-9]+-[0-9a-f]{8}/\1<PID>-<RND>/g' \
		-e 's/[0-9a-f]{32}/<ID>/g' -e 's/[0-9]+\.[0-9]+ ms/<T> ms/g' \
		-e 's/^ctrun [0-9a-zA-Z.+-]+$/ctrun <VERSION>/'
}

ncases=0
declare -A CTXENV
# one CASE CTX [ARG...]: ctrun ARGS under context CTX, recorded as OUT/CASE.o
# (stdout), OUT/CASE.e (stderr) and OUT/CASE.x (exit status).
one() {
	local name=$1 ctx=$2 uid=0 env
	shift 2
	[[ $name =~ ${CTRUN_CORPUS_FILTER:-.} ]] || return 0
	ncases=$((ncases + 1))
	[ "${LIST:-}" = 1 ] && { echo "$name"; return 0; }
	[ -n "${CTXENV[$ctx]+set}" ] || CTXENV[$ctx]=$(ctx_env "$ctx")
	mapfile -t env <<<"${CTXENV[$ctx]}"
	[ "${ctx%%-*}" = user ] && uid=1003
	if [ $uid = 0 ]; then
		(cd "$W/cwd" && exec env -i "${env[@]}" "$BIN/ctrun" "$@" >"$OUT/$name.o" \
			2>"$OUT/$name.e" </dev/null)
	else
		(cd "$W/cwd" && exec setpriv --reuid=$uid --regid=$uid --clear-groups \
			env -i "${env[@]}" "$BIN/ctrun" "$@" >"$OUT/$name.o" 2>"$OUT/$name.e" </dev/null)
	fi
	echo $? >"$OUT/$name.x"
}

# The container options, each a variant of a case (name, arguments).
variants() {
	cat <<X
plain
mount-src|--mount|$W/data
mount-dst|--mount|$W/data:/data
mount-ro|--mount|$W/data:/data:ro
mount-suid-dev|--mount|$W/data:/data:rw,suid,dev
mount-relative|--mount|data:/rel
mount-symlink-dst|--mount|$W/data:/mnt/evil/x
mount-odd-chars|--mount|$W/we,ird\\:dir:/we\\:ird
mount-newline|--mount|$W/nl@NL@dir:/nl
mount-missing|--mount|$W/missing:/x
mount-file|--mount|$W/file.txt:/etc/x.txt
mount-dst-relative|--mount|$W/data:relative
mount-two|--mount|$W/data:/a|--mount|$W/data/file.txt:/a/f:ro
workdir|--workdir|/work
workdir-relative|--workdir|rel
env|--env|FOO=bar|--env|HOSTVAR
env-file|--env-file|$W/envfile
clean-env|--clean-env
clean-env-keep|--clean-env|--env|KEEP=1|--env|HOSTVAR
writable|--writable
name|--name|n1
name-reset|--name|n1|--name-reset
name-reset-alone|--name-reset
name-bad|--name|bad/name
save|--save|$W/out/saved.sqsh
save-baddir|--save|/nonexistent/x.sqsh
save-name|--name|n1|--save|$W/out/saved.sqsh
root|--root
no-home|--no-home
root-no-home|--root|--no-home
nv|--nv
gpu-isolation|--gpu-isolation
nv-isolation|--nv|--gpu-isolation
entrypoint|--entrypoint
log-dir|--log-dir|$W/logs
log-dir-relative|--log-dir|logs
image-mode-mount|--image-mode|mount
image-mode-unpack|--image-mode|unpack
verbose|-v
quiet|-q
nproc|--nproc-per-node|3
stage-sbcast|--stage|sbcast
combo-a|--root|--writable|--mount|$W/data:/d:ro|--workdir|/w|--env|A=1
combo-b|--no-home|--clean-env|--entrypoint|--log-dir|$W/logs|--nv|--gpu-isolation
X
}

runtimes="auto oci crun enroot apptainer singularity charliecloud"
images="squashfs:image.sqsh sif:image.sif docker:image-docker.tar oci:image-oci.tar dir:rootfs"

# Every case, in a fixed order.  $1: gpu or nogpu (the /dev of this pass).
cases() {
	local pass=$1 rt img kind file v vname args ctx mode user pathset cmd
	if [ "$pass" = gpu ]; then
		# Every runtime x kind x option, root in node mode with GPUs.
		for rt in $runtimes; do
			for img in $images; do
				kind=${img%%:*} file=${img#*:}
				while IFS= read -r v; do
					vname=${v%%|*}
					IFS='|' read -r -a args <<<"${v#"$vname"}"
					args=("${args[@]:1}")
					args=("${args[@]//@NL@/$'\n'}")
					# -v in a step waits for the other nodes' timings: standalone
					ctx=root-node-all
					[ "$vname" = verbose ] && ctx=root-standalone-all
					one "opt.$rt.$kind.$vname" $ctx --dry-run --runtime "$rt" \
						--image "$W/img/$file" "${args[@]}" -- /bin/echo hi
				done < <(variants)
			done
		done
	fi
	# What names the runtimes: --help, --version on each PATH set, a name
	# that is none.
	if [ "$pass" = gpu ]; then
		one "misc.help" root-standalone-all --help
		for pathset in all site s3 old ch crun none; do
			one "misc.version.$pathset" "root-standalone-$pathset" --version
		done
		one "misc.runtime-unknown" root-standalone-all --dry-run --runtime bogus \
			--image "$W/img/image.sqsh" -- /bin/true
		one "misc.runtime-unknown-noimage" root-standalone-all --dry-run --runtime bogus \
			-- /bin/true
	fi
	# Every runtime x kind x mode x user, plain and with a few options.
	for user in root user; do
		for mode in standalone node node1 task batch; do
			for rt in $runtimes; do
				for img in $images; do
					kind=${img%%:*} file=${img#*:}
					ctx=$user-$mode-all
					one "ctx.$pass.$user.$mode.$rt.$kind.plain" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" -- /bin/echo "a b" '$HOME'
					[ "$mode" = batch ] && continue
					one "ctx.$pass.$user.$mode.$rt.$kind.options" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" --mount "$W/data:/data:ro" --workdir /work \
						--env FOO=bar --writable --entrypoint -- /bin/echo hi
					one "ctx.$pass.$user.$mode.$rt.$kind.root" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" --root --no-home -- /bin/echo hi
					one "ctx.$pass.$user.$mode.$rt.$kind.isolation" "$ctx" --dry-run \
						--runtime "$rt" --image "$W/img/$file" --gpu-isolation -- /bin/echo hi
				done
			done
		done
		# The shell, the image's default command, ctrun env --image.
		for rt in $runtimes; do
			for img in $images; do
				kind=${img%%:*} file=${img#*:}
				for mode in standalone node; do
					ctx=$user-$mode-all
					one "cmd.$pass.$user.$mode.$rt.$kind.shell" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" shell
					one "cmd.$pass.$user.$mode.$rt.$kind.shell-cmd" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" --workdir /w shell /bin/echo hi
					one "cmd.$pass.$user.$mode.$rt.$kind.default" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file"
					one "cmd.$pass.$user.$mode.$rt.$kind.env" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" env
					one "cmd.$pass.$user.$mode.$rt.$kind.env-cmd" "$ctx" --dry-run --runtime "$rt" \
						--image "$W/img/$file" --env X=1 env /bin/true
				done
			done
		done
		# --runtime auto on each PATH set, and the images that are no image.
		for pathset in all site s3 old ch crun none; do
			for img in $images bare:bare.sqsh unknown:unknown.img fifo:fifo.img missing:missing.img; do
				kind=${img%%:*} file=${img#*:}
				one "auto.$pass.$user.$pathset.$kind" "$user-standalone-$pathset" --dry-run -v \
					--image "$W/img/$file" -- /bin/echo hi
				one "auto.$pass.$user.$pathset.$kind.writable" "$user-node-$pathset" --dry-run \
					--image "$W/img/$file" --writable --name n2 -- /bin/echo hi
			done
			for rt in $runtimes; do
				one "named.$pass.$user.$pathset.$rt" "$user-standalone-$pathset" --dry-run \
					--runtime "$rt" --image "$W/img/image.sqsh" -- /bin/true
			done
		done
		# The image kinds' odd trees: no /etc, no pseudo file systems.
		for rt in $runtimes; do
			one "bare.$pass.$user.$rt" "$user-node-all" --dry-run --runtime "$rt" \
				--image "$W/img/bare" -- /bin/echo hi
			one "bare.$pass.$user.$rt.shell" "$user-node-all" --dry-run --runtime "$rt" \
				--image "$W/img/bare"
		done
		# A warm node cache: the archives' unpacked trees and enroot's container are there.
		for rt in $runtimes; do
			for img in $images; do
				kind=${img%%:*} file=${img#*:}
				one "warm.$pass.$user.$rt.$kind" "$user-node-all-warm" --dry-run --runtime "$rt" \
					--image "$W/img/$file" --mount "$W/data:/mnt/evil/d" --root -- /bin/true
			done
		done
	done
}

# --- the passes -----------------------------------------------------------------

# Inside the namespace: the pinned host, then every case of this pass.
inside() {
	local pass=$1 g
	hostname cnode1
	mount --bind "$W/hosts" /etc/hosts
	[ ! -d /etc/ctrun ] || mount -t tmpfs none /etc/ctrun
	# A /dev of our own (the machine's is never written): a copy, with
	# NVIDIA's nodes in the GPU pass, without them in the other.
	mount -t tmpfs -o mode=755,size=16m corpus-dev "$W/dev"
	cp -a -x /dev/. "$W/dev/" 2>/dev/null
	rm -f "$W"/dev/nvidia*
	if [ "$pass" = gpu ]; then
		for g in 0 1 2 3; do mknod -m 666 "$W/dev/nvidia$g" c 195 $g; done
		mknod -m 666 "$W/dev/nvidiactl" c 195 255
		mknod -m 666 "$W/dev/nvidia-uvm" c 235 0
	fi
	mount --move "$W/dev" /dev
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
	mount -t tmpfs -o mode=1777 shm /dev/shm
	warm_up
	cases "$pass"
	normalize
	echo "$ncases" >"$OUT/.count-$pass"
	# What a dry run must not leave: run directories, cache entries, logs,
	# saved images (the base directories and the caches' own are made).
	(cd "$W" && find tmp-root tmp-user cache-root cache-user logs out -mindepth 1 \
		! -path 'tmp-*/ctrun-[0-9]*' -o -path 'tmp-*/ctrun-[0-9]*/*' | sort) >"$OUT/.leftovers-$pass"
}

# The warm caches: `ctrun cache create` of the archives, enroot's container
# of the squashfs made by hand where ctrun would look for it.
warm_up() {
	local u uid id
	for u in root user; do
		uid=0; [ $u = user ] && uid=1003
		[ -d "$W/warm-$u/entries" ] && continue
		[ $u = user ] && chown 1003:1003 "$W/warm-$u"
		setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin \
			CTRUN_CACHE_DIR="$W/warm-$u" HOME="$W/home-$u" TMPDIR="$W/tmp-$u" \
			"$BIN/ctrun" -q cache create "$W/img/image-docker.tar" "$W/img/image-oci.tar" \
			"$W/img/image.sqsh" >/dev/null 2>&1
		id=$(cd "$W/cwd" && setpriv --reuid=$uid --regid=$uid --clear-groups env -i \
			PATH="$W/path/all" CTRUN_CACHE_DIR="$W/warm-$u" HOME="$W/home-$u" TMPDIR="$W/tmp-$u" \
			"$BIN/ctrun" --dry-run --runtime enroot --image-mode unpack --image "$W/img/image.sqsh" \
			/bin/true 2>/dev/null | sed -n 's/.* --conf [^ ]* \(ctrun-[0-9a-f]*\) .*/\1/p' | head -1)
		if [ -n "$id" ]; then
			mkdir -p "$W/warm-$u/enroot-data"
			cp -a "$W/img/rootfs" "$W/warm-$u/enroot-data/$id"
			chown -R $uid:$uid "$W/warm-$u/enroot-data"
		fi
	done
}

run() {
	[ $# -ge 1 ] && [ $# -le 2 ] || usage
	OUT=$(mkdir -p "$1" && cd "$1" && pwd)
	BIN=$(cd "${2:-$repo/build}" && pwd)
	[ -x "$BIN/ctrun" ] || { echo "corpus: no $BIN/ctrun (make first)" >&2; exit 2; }
	[ "$(id -u)" = 0 ] || { echo "corpus: needs root (a mount namespace, the test user)" >&2; exit 2; }
	find "$OUT" -mindepth 1 -delete
	# One work directory for every run: its path is in no output (<W>), but
	# the images' identity (<ID>) and their order are the same from run to run.
	W=$(mktemp -d /tmp/ctrun-corpus.XXXXXX)
	trap 'rm -rf "$W"' EXIT
	mkdir -p "$W/dev"
	make_paths && make_images && make_data || { echo "corpus: set-up failed" >&2; exit 1; }
	export W OUT BIN
	for pass in gpu nogpu; do
		unshare --mount --uts --propagation private bash -c \
			"source '$here/corpus.sh' --lib; inside $pass" || exit 1
	done
	echo "corpus: $(($(cat "$OUT/.count-gpu") + $(cat "$OUT/.count-nogpu"))) cases in $OUT"
	rm -f "$OUT"/.count-*
}

# --- comparing ------------------------------------------------------------------

diff_dirs() {
	[ $# -eq 2 ] || usage
	local changed
	changed=$(diff -rq "$1" "$2" | sed -n 's|^Files .*/\([^/]*\) and .* differ$|\1|p; s|^Only in \(.*\): \(.*\)$|\2 (only in \1)|p' |
		sed 's/\.[oex]\( \|$\)/\1/' | sort -u)
	if [ -z "$changed" ]; then
		echo "corpus: $(find "$1" -type f -name '*.x' | wc -l) cases, the same byte for byte"
		return 0
	fi
	echo "corpus: $(wc -l <<<"$changed") case(s) differ:"
	sed 's/^/  /' <<<"$changed"
	return 1
}

compare() {
	[ $# -eq 1 ] || usage
	local rev dir base key
	rev=$(git -C "$repo" rev-parse --verify "$1^{commit}") || exit 2
	dir=$repo/build/dryrun/$rev
	if [ ! -x "$dir/build/ctrun" ]; then
		rm -rf "$dir" && mkdir -p "$dir"
		git -C "$repo" archive "$rev" | tar -x -C "$dir" &&
			make -C "$dir" -j2 build/ctrun build/ctrun-agent build/ctrun-hook build/ctrun-worker \
			>"$dir.log" 2>&1 || { echo "corpus: building $1 failed ($dir.log)" >&2; exit 1; }
	fi
	# REV's outputs are kept while this script (its cases) stays the same.
	key=$(sha256sum "$here/corpus.sh" | cut -c1-12)
	base=$repo/build/dryrun/out-${rev:0:12}-$key${CTRUN_CORPUS_FILTER:+-$(sha256sum <<<"$CTRUN_CORPUS_FILTER" | cut -c1-8)}
	if [ ! -e "$base/.complete" ]; then
		run "$base" "$dir/build" >/dev/null || exit 1
		touch "$base/.complete"
	fi
	run "$repo/build/dryrun/out-tree" "$repo/build" >/dev/null || exit 1
	touch "$repo/build/dryrun/out-tree/.complete"
	diff_dirs "$base" "$repo/build/dryrun/out-tree"
}

[ "${1:-}" = --lib ] && return 0
case ${1:-} in
run) shift; run "$@" ;;
diff) shift; diff_dirs "$@" ;;
compare) shift; compare "$@" ;;
list) W=/W LIST=1; cases gpu; cases nogpu ;;
*) usage ;;
esac
