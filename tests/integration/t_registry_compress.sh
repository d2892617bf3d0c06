#!/bin/bash
# The compressor of the squashfs ctrun writes (issue 32, point 2): a pull
# writes [registry] compression (default lz4), --save writes [cache]
# compression (default gzip level 1), each image runs, a bad value is exit 2
# naming the setting with nothing published, and a zstd image handed to
# Singularity (which cannot read zstd) is said so in one line before it
# fails.  The registry: Debian's docker-registry, plain HTTP, the busybox
# test image (2 layers: a whiteout, an opaque directory).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
need_image busybox busybox.sqsh
cd "$TMPD"
reg_start --plain --auth none --storage "$STORAGE"
export CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST CTRUN_CACHE_DIR=$TMPD/cache
unset CTRUN_REGISTRY_COMPRESSION CTRUN_CACHE_COMPRESSION
ref=docker://$REG_HOST/ctrun-test/busybox:latest

# The squashfs compressor id of FILE (1 gzip, 4 xz, 5 lz4, 6 zstd).
comp_id() { od -An -tu2 -j20 -N2 "$1" | tr -d ' '; }

default_lz4() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s1" "$CTRUN" -q pull "$ref" > out 2> err
	assert_eq 0 "$rc" "pull: $(cat err)"
	assert_eq 5 "$(comp_id "$(cat out)")" "the pulled image's compressor (lz4)"
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s1" "$CTRUN" -q --runtime oci --image-mode mount \
		--image "$ref" -- cat /etc/layer2 > run.out 2>&1
	assert_eq 0 "$rc" "the lz4 image runs: $(cat run.out)"
	grep -qx 'from the second layer' run.out || fail "the second layer's file: $(cat run.out)"
}
behaviour "a pull writes lz4 by default, and the image runs (kernel mount)" default_lz4

zstd_setting() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s2" CTRUN_REGISTRY_COMPRESSION=zstd:1 "$CTRUN" -q \
		--runtime oci --image-mode mount --image "$ref" -- cat /etc/layer2 > run.out 2>&1
	assert_eq 0 "$rc" "the zstd image runs: $(cat run.out)"
	assert_eq 6 "$(comp_id "$(ls "$TMPD"/s2/images/*.sqsh)")" "the pulled image's compressor (zstd)"
}
behaviour "[registry] compression = zstd:1 is written, and the image runs" zstd_setting

bad_setting() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s3" CTRUN_REGISTRY_COMPRESSION=zip "$CTRUN" pull "$ref" \
		> out 2> err
	cat err
	assert_eq 2 "$rc" "a compressor that does not exist"
	assert_eq 1 "$(wc -l < err)" "lines of the error"
	grep -q "\[registry\] compression 'zip'" err || fail "the error does not name the setting"
	grep -q "lz4" err || fail "the error does not say what it may be"
	[ -z "$(ls s3/images 2>/dev/null)" ] || fail "an image was published"
}
behaviour "a bad [registry] compression: exit 2, one line naming it, nothing published" bad_setting

zstd_to_singularity() {
	# A Singularity 3.4 stand-in: its version, then what the real one says of zstd.
	mkdir -p fakebin
	printf '#!/bin/sh\n[ "$1" = --version ] && { echo "singularity version 3.4.2"; exit 0; }\n%s\n' \
		'echo "FATAL: could not open image: unknown compression algorithm value 6" >&2; exit 255' \
		> fakebin/singularity
	chmod +x fakebin/singularity
	run_rc env PATH="$TMPD/fakebin:$PATH" CTRUN_REGISTRY_STORE="$TMPD/s2" "$CTRUN" \
		--runtime singularity --image "$ref" -- true > out 2> err
	cat err
	[ "$rc" -ne 0 ] || fail "the stand-in ran"
	grep -q "warning: $ref was stored zstd-compressed.*Singularity and apptainer before 1.4 cannot read.*compression = lz4" err ||
		fail "no line saying why Singularity cannot read the image"
	# The lz4 default: no such line.
	run_rc env PATH="$TMPD/fakebin:$PATH" CTRUN_REGISTRY_STORE="$TMPD/s1" "$CTRUN" \
		--runtime singularity --image "$ref" -- true > out 2> err
	if grep -q "zstd-compressed" err; then fail "a warning for an lz4 image"; fi
}
behaviour "a zstd image for Singularity: one line says it cannot read it and what to set" zstd_to_singularity

save_compression() {
	run_rc "$CTRUN" -q --runtime oci --image "$busybox" --save "$TMPD/def.sqsh" -- \
		sh -c 'echo saved > /saved' > run.out 2>&1
	assert_eq 0 "$rc" "--save: $(cat run.out)"
	assert_eq 1 "$(comp_id def.sqsh)" "--save's default compressor (gzip)"
	run_rc env CTRUN_CACHE_COMPRESSION=lz4 "$CTRUN" -q --runtime oci --image "$busybox" \
		--save "$TMPD/lz4.sqsh" -- sh -c 'echo saved > /saved' > run.out 2>&1
	assert_eq 0 "$rc" "--save with lz4: $(cat run.out)"
	assert_eq 5 "$(comp_id lz4.sqsh)" "[cache] compression = lz4"
	run_rc "$CTRUN" -q --runtime oci --image "$TMPD/lz4.sqsh" -- cat /saved > run.out 2>&1
	assert_eq 0 "$rc" "the saved lz4 image runs: $(cat run.out)"
	grep -qx saved run.out || fail "the saved change: $(cat run.out)"
}
behaviour "--save writes gzip by default, [cache] compression otherwise, and the image runs" save_compression
