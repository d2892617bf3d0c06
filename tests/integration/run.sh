#!/bin/bash
# Integration tests on a real Slurm cluster on this machine: brings the
# cluster up once, runs every tests/integration/t_*.sh (or those named in
# $CTRUN_TESTS), tears the cluster down even when a test fails or the run
# is interrupted.  Then, for every other Slurm install on the machine
# (/opt/*/sbin/slurmctld, or those in $CTRUN_SLURM_PREFIXES), a second
# cluster of that Slurm runs the tests tagged `# tag: every-slurm`, named
# t_x@slurm-26.05.3.  Ends with "integration: N passed, N failed, N
# skipped".  A test exits 0 (pass), 77 (skip: says why) or anything else
# (fail); a skip whose name tests/skips.allowed does not list is a
# failure.  Skips are written to build/tests/integration.skips for check.sh.
set -u
cd "$(dirname "$0")/../.."
repo=$(pwd)
cluster=$repo/tests/cluster/cluster.sh
logs=$repo/build/tests/integration
mkdir -p "$logs"

name0=${CTRUN_CLUSTER_NAME:-ctit} subnet0=${CTRUN_CLUSTER_SUBNET:-10.232.0}
port0=${CTRUN_CLUSTER_PORT_BASE:-17817}
# The second Slurm's cluster, beside the first (a killed run may leave either).
name1=${name0}s subnet1=${subnet0%.*}.$((${subnet0##*.} + 1)) port1=$((port0 + 500))
down_all() {
	CTRUN_CLUSTER_NAME=$name0 "$cluster" down
	CTRUN_CLUSTER_NAME=$name1 "$cluster" down
}
down_all >/dev/null 2>&1 || true # what a killed earlier run left
# ctrun keeps per-user run directories under $TMPDIR; tests get a private
# one (every node and test user can reach it: /tmp is shared) that goes away.
TMPDIR=$(mktemp -d /tmp/ctrun-it-tmp.XXXXXX)
chmod 1777 "$TMPDIR"
export TMPDIR
# Tests run as root and as a test user with ctrun's default node caches
# (/tmp/ctrun-cache-UID): those this run creates go at the end, ones that
# were there before stay.
caches_before=$(ls -d /tmp/ctrun-cache-* 2>/dev/null || true)
# ... and so do the per-user job keys (check, bench, --timings) in homes.
job_keys() { ls -d /root/.config/ctrun/job.key /home/ctrun*/.config/ctrun/job.key 2>/dev/null || true; }
keys_before=$(job_keys)
cleanup() {
	down_all
	rm -rf "$TMPDIR"
	for d in /tmp/ctrun-cache-* $(job_keys); do
		[ -e "$d" ] && ! grep -qxF "$d" <<<"$caches_before"$'\n'"$keys_before" && rm -rf "$d"
	done
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The test images (busybox: seconds; torch: debootstrap + python3-torch,
# minutes the first time; registry: the storage of a registry they are pushed
# to, a minute or two; then cached in /var/cache/ctrun-tests).  Built
# here, after the TMPDIR above on purpose: a fresh machine (CI) builds them
# under the runner's own environment, so a build that lets the host's
# environment into the image (issue 20) fails here, by name, rather than
# only where images were left by an earlier run.
# Sets only some tests use (mpi: a minute or two) are built when a test to
# run names them on a line `# images: SET...`.
tests=${CTRUN_TESTS:-$(cd tests/integration && ls t_*.sh)}
# shellcheck disable=SC2086
image_sets=$(cd tests/integration && for t in $tests; do sed -n 's/^# images: //p' "${t%.sh}.sh"; done 2>/dev/null |
	tr ' ' '\n' | sort -u | tr '\n' ' ')
echo "building test images (log: $logs/images.log)"
images_failed=
# shellcheck disable=SC2086
tests/images/build.sh busybox torch registry $image_sets > "$logs/images.log" 2>&1 ||
	images_failed="$(tail -1 "$logs/images.log") (log: $logs/images.log)"

passed=0 failed=0 skipped=0
if [ -n "$images_failed" ]; then
	failed=1; echo "FAIL images: the test images did not build, container tests will skip: $images_failed"
fi
# shellcheck source=leftovers.sh
. tests/integration/leftovers.sh
: > "$repo/build/tests/integration.skips"
allowed() { grep -qE "^${1%@*}([[:space:]]|$)" tests/skips.allowed; }
skip_line() { # NAME REASON: a skip, or a failure when NAME is not allowed to skip
	if allowed "$1"; then
		skipped=$((skipped + 1)); echo "SKIP $1: $2"
		echo "$1: $2" >> "$repo/build/tests/integration.skips"
	else
		failed=$((failed + 1)); echo "FAIL $1: skipped ($2), and tests/skips.allowed does not list it"
	fi
}

# up LABEL: the cluster of the settings in the environment; on failure one failed test.
up() {
	if ! "$cluster" up > "$logs/cluster-up$1.log" 2>&1; then
		cat "$logs/cluster-up$1.log"
		failed=$((failed + 1)); echo "FAIL cluster$1: the cluster did not come up"
		return 1
	fi
	eval "$("$cluster" env)"
	export CTRUN_REPO=$repo CTRUN=$repo/build/ctrun CLUSTER=$cluster
}

# run_tests SUFFIX TEST...: each test, its log in $logs/TEST SUFFIX.log,
# then the leftover check (leftovers.sh): a test that leaves anything
# behind fails, and the next one starts only once its jobs are gone.
run_tests() {
	local suffix=$1 t rc start ms secs left bad
	shift
	leftover_baseline
	for t in "$@"; do
		t=${t%.sh}
		start=$(date +%s%N)
		# A session of its own: whatever it starts on this machine and
		# leaves running is found by its session id.
		setsid timeout -k 10 600 bash "tests/integration/$t.sh" > "$logs/$t$suffix.log" 2>&1 &
		leftover_sid=$!
		wait "$leftover_sid"
		rc=$?
		ms=$((($(date +%s%N) - start) / 1000000)); secs=$((ms / 1000)).$((ms % 1000 / 100))
		# The test's jobs end here at the latest.
		scancel --quiet --full "--user=root" 2>/dev/null; scancel --quiet --full --user=ctrunuser 2>/dev/null
		left=$(leftover_check) || rc=${rc/#0/leftovers}
		# A failed behaviour (lib.sh) fails its file, even one whose
		# EXIT trap lost lib.sh's verdict.
		bad=$(grep '^FAIL behaviour ' "$logs/$t$suffix.log")
		[ -z "$bad" ] || [ "$rc" != 0 ] || rc="0, but a behaviour failed"
		case $rc in
		0) passed=$((passed + 1)); echo "PASS $t$suffix (${secs}s)"
		   # Behaviours it skipped alone (lib.sh: allowed as FILE:PREFIX).
		   while IFS= read -r l; do
			l=${l#SKIP behaviour }
			skipped=$((skipped + 1)); echo "SKIP $t$suffix:${l%%: *}: ${l#*: }"
			echo "$t$suffix:${l%%: *}: ${l#*: }" >> "$repo/build/tests/integration.skips"
		   done < <(grep '^SKIP behaviour ' "$logs/$t$suffix.log") ;;
		77) skip_line "$t$suffix" "$(grep -v '^behaviours: ' "$logs/$t$suffix.log" | tail -1)" ;;
		*) failed=$((failed + 1)); echo "FAIL $t$suffix (exit $rc, ${secs}s); last lines of $logs/$t$suffix.log:"
		   tail -25 "$logs/$t$suffix.log" | sed 's/^/    /'
		   [ -z "$bad" ] || { echo "    its failed behaviours:"; sed 's/^/      /' <<<"$bad"; } ;;
		esac
		if [ -n "$left" ]; then
			echo "    left behind by $t$suffix (the runner cleans it up before the next test):"
			sed 's/^/      /' <<<"$left" | head -20
			leftover_cleanup
		fi
	done
}

# A test that needs a cluster of another size than the default 2 nodes says
# so on a line `# nodes: N` (t_resilience: a spare beside 2 training
# nodes); the tests of each size run on a cluster of that size, brought up
# for them, in the order of their sizes.
nodes_of() {
	local n
	n=$(sed -n 's/^# nodes: \([1-9][0-9]*\)$/\1/p' "tests/integration/${1%.sh}.sh" 2>/dev/null | head -1)
	echo "${n:-2}"
}
sizes_of() { local t; for t in "$@"; do nodes_of "$t"; done | sort -n -u; }
of_size() { local n=$1 t; shift; for t in "$@"; do [ "$(nodes_of "$t")" = "$n" ] && echo "$t"; done; return 0; }
size_label() { [ "$1" = 2 ] || echo "-${1}n"; }

# shellcheck disable=SC2086
for size in $(sizes_of $tests); do
	# shellcheck disable=SC2086
	group=$(of_size "$size" $tests)
	label=$(size_label "$size")
	if CTRUN_CLUSTER_NAME=$name0 CTRUN_CLUSTER_SUBNET=$subnet0 CTRUN_CLUSTER_PORT_BASE=$port0 \
		CTRUN_CLUSTER_NODES=$size up "$label"; then
		echo "cluster: $CTRUN_CLUSTER_SLURM ($(command -v slurmctld)), $size nodes"
		# shellcheck disable=SC2086
		run_tests "" $group
		CTRUN_CLUSTER_NAME=$name0 "$cluster" down > "$logs/cluster-down$label.log" 2>&1 ||
			{ failed=$((failed + 1)); echo "FAIL cluster down$label: $(tail -3 "$logs/cluster-down$label.log")"; }
	fi
done

# Every other Slurm install: the tests that talk to Slurm, on its own cluster.
first=$(readlink -f "$(command -v slurmctld)")
prefixes=${CTRUN_SLURM_PREFIXES:-$(for c in /opt/*/sbin/slurmctld /usr/local/sbin/slurmctld; do
	[ -x "$c" ] && [ "$(readlink -f "$c")" != "$first" ] && dirname "$(dirname "$c")"; done)}
every=$(cd tests/integration && for t in $tests; do grep -lx '# tag: every-slurm' "${t%.sh}.sh"; done 2>/dev/null)
[ -n "$every" ] || prefixes="" # none of the tests chosen talks to Slurm
[ -n "$prefixes" ] || [ -z "$every" ] || skip_line second-slurm "no second Slurm install on this machine (build one with ../shared/tools/build-slurm.sh into /opt/slurm-new)"
for p in $prefixes; do
	v=$("$p/sbin/slurmctld" -V 2>/dev/null | tr ' ' '-')
	# A subshell: that Slurm's PATH and cluster variables stay in it.
	(
		export CTRUN_SLURM_PREFIX=$p CTRUN_CLUSTER_NAME=$name1 CTRUN_CLUSTER_SUBNET=$subnet1 \
			CTRUN_CLUSTER_PORT_BASE=$port1
		# Slurm's mpi/pmix for an install built without it (build-slurm.sh's),
		# from that install's own source tree: t_spank_mpi's pmix rows.
		if pd=$(tests/cluster/slurm-pmix.sh "$p" "$repo/build/slurm-pmix@$v" 2> "$logs/slurm-pmix@$v.log") &&
			[ -n "$pd" ]; then
			export CTRUN_CLUSTER_PLUGINDIR=$pd
			echo "cluster: mpi/pmix for $v built from its source ($pd)"
		else
			echo "cluster: no mpi/pmix for $v: $(tail -1 "$logs/slurm-pmix@$v.log")"
		fi
		# shellcheck disable=SC2086
		for size in $(sizes_of $every); do
			# shellcheck disable=SC2086
			group=$(of_size "$size" $every)
			label=$(size_label "$size")
			if CTRUN_CLUSTER_NODES=$size up "@$v$label"; then
				echo "cluster: $CTRUN_CLUSTER_SLURM ($p), $size nodes"
				# shellcheck disable=SC2086
				run_tests "@$v" $group
				"$cluster" down > "$logs/cluster-down@$v$label.log" 2>&1 ||
					{ failed=$((failed + 1)); echo "FAIL cluster down@$v$label: $(tail -3 "$logs/cluster-down@$v$label.log")"; }
			fi
		done
		echo "$passed $failed $skipped" > "$logs/.counts"
	)
	read -r passed failed skipped < "$logs/.counts"
	rm -f "$logs/.counts"
done

echo "$passed $failed $skipped" > "$repo/build/tests/integration.counts"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
