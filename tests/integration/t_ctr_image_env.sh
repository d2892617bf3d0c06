#!/bin/bash
# A docker/OCI archive's own environment (its config's Env, as enroot's import
# keeps it in /etc/environment) reaches the workers on every node, over the
# /etc/environment its layers carry; --env still wins over it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image ROOTFS busybox-rootfs
private_node_cache ctenv-cache
cd "$TMPD"

# The busybox rootfs's own /etc/environment says CTRUN_IMAGE_ENV=busybox; the
# config says from-image, and carries a value a naive writer would change
# (trailing blank, '=' and quotes inside).
tricky='a=b  "c" '
for fmt in docker oci; do
	python3 "$CTRUN_REPO/tests/images/mkdocker.py" --format "$fmt" --tag ctrun-test/env:latest \
		--env PATH=/usr/local/bin:/usr/bin:/bin:/custom --env CTRUN_IMAGE_ENV=from-image \
		--env "CTRUN_TRICKY=$tricky" "$TMPD/env-$fmt.tar" "$ROOTFS"
done

# One line per rank: host, then the variables between bars (blanks kept).
# shellcheck disable=SC2016
show='printf "%s|%s|%s|%s|\n" "$(hostname)" "$CTRUN_IMAGE_ENV" "$PATH" "$CTRUN_TRICKY" >"out.$RANK"'
check() { # what expected-CTRUN_IMAGE_ENV
	local r line
	for r in 0 1; do
		[ -f "out.$r" ] || fail "$1: rank $r wrote nothing"
		line=$(cat "out.$r")
		assert_eq "${NODES[$r]}|$2|/usr/local/bin:/usr/bin:/bin:/custom|$tricky|" "$line" \
			"$1: rank $r"
	done
	rm -f out.*
}

image_env() { # docker|oci
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TMPD/env-$1.tar" -- sh -c "$show"
	assert_eq 0 "$rc" "$1: srun exit status"
	check "$1" from-image
}

env_wins() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TMPD/env-docker.tar" \
		--env CTRUN_IMAGE_ENV=x -- sh -c "$show"
	assert_eq 0 "$rc" "--env: srun exit status"
	check "--env over the image" x
}

# What each node's cache holds: the config's file, not the layers'.
cached_environment() {
	local n env_file
	for n in "${NODES[@]}"; do
		env_file=$("$CLUSTER" exec "$n" sh -c "cat '$CTRUN_CACHE_DIR'/entries/*/rootfs/etc/environment" |
			sort -u | tr '\n' ';')
		assert_eq "CTRUN_IMAGE_ENV=from-image;CTRUN_TRICKY=\"$tricky\";PATH=/usr/local/bin:/usr/bin:/bin:/custom;" \
			"$env_file" "$n: cached /etc/environment"
	done
}

behaviour "a docker archive's Env reaches the workers on every node" image_env docker
behaviour "an OCI archive's Env reaches the workers on every node" image_env oci
behaviour "--env wins over the image's Env" env_wins
behaviour "each node's cache holds the config's /etc/environment" cached_environment
behaviour "no container is left" assert_no_containers
