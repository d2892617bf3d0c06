#!/bin/bash
# Layer reuse (issue 32, point 3): an image whose layers begin with all of a
# stored image's is built from that image's squashfs and its own new layers
# only.  Debian's docker-registry (plain HTTP, writable) serves the busybox
# test image and busybox plus one layer (tests/images/addlayer.py: a whiteout
# of a stored file, an opaque directory over a stored one, a replaced file, a
# new file of 300 kB).  The pull of the second after the first does not
# download the first's layers (the registry's access log; the layer cache
# emptied first, as `ctrun cache gc` empties it), its image equals the one a
# full pull makes ([registry] reuse = false, another store), and it runs; a
# stored image that cannot be a base (another compressor, a damaged file) is
# said so in one line and the image pulled whole.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
need_image OCI busybox-oci.tar
cd "$TMPD"
reg_start --plain --auth none
export CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST CTRUN_CACHE_DIR=$TMPD/cache
unset CTRUN_REGISTRY_COMPRESSION CTRUN_REGISTRY_REUSE
mkdir base tree
tar xf "$OCI" -C base
mkdir -p tree/etc tree/opt tree/usr/local
touch tree/etc/.wh.hostname tree/opt/.wh..wh..opq
echo "from layer 3" > tree/opt/new
echo "motd of layer 3" > tree/etc/motd
head -c 300000 /dev/urandom > tree/usr/local/big
python3 "$CTRUN_REPO/tests/images/addlayer.py" base plus tree
reg_push base ctrun-test/bb:base
reg_push plus ctrun-test/bb:plus
base_ref=docker://$REG_HOST/ctrun-test/bb:base plus_ref=docker://$REG_HOST/ctrun-test/bb:plus
# The base image's layers, as the registry names them in its log.
base_layers=$(python3 -c '
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/index.json"))["manifests"][0]["digest"].split(":")[1]
for l in json.load(open(d + "/blobs/sha256/" + m))["layers"]:
    print(l["digest"])' base)
[ "$(echo "$base_layers" | wc -l)" = 2 ] || fail "the busybox test image has not 2 layers: $base_layers"

# GETs of the base's layer blobs so far.
base_gets() {
	local n=0 d
	for d in $base_layers; do
		n=$((n + $(reg_requests | grep -c "^GET /v2/ctrun-test/bb/blobs/$d 200$" || true)))
	done
	echo "$n"
}
# An image's tree, one line per name: type and mode, size, path (unsquashfs -lln).
listing() { unsquashfs -lln "$1" | awk '{print $1, $3, $6, $8}' | sort; }
pull() { # STORE REF [ENV...]: the image's path on stdout
	local store=$1 ref=$2
	shift 2
	env CTRUN_REGISTRY_STORE="$TMPD/$store" "$@" "$CTRUN" -q pull "$ref"
}

# Each behaviour runs in a subshell: the reference listing is a file, full.list.
full_pull() {
	run_rc pull full "$plus_ref" CTRUN_REGISTRY_REUSE=false > out 2> err
	assert_eq 0 "$rc" "full pull: $(cat err)"
	listing "$(cat out)" > full.tmp
	grep -q 'squashfs-root/opt/new ' full.tmp || fail "the full pull has no /opt/new: $(cat full.tmp)"
	! grep -q 'squashfs-root/etc/hostname ' full.tmp || fail "the full pull has /etc/hostname"
	mv full.tmp full.list
}
behaviour "the full pull of busybox+1 layer ([registry] reuse = false): the reference image" full_pull

reuse() {
	[ -s full.list ] || fail "no reference image"
	run_rc pull s "$base_ref" > out 2> err
	assert_eq 0 "$rc" "pull of the base: $(cat err)"
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s" "$CTRUN" -q cache gc --budget 1T > out 2> err
	assert_eq 0 "$rc" "cache gc: $(cat err)"
	[ -z "$(ls s/blobs/sha256)" ] || fail "the layer cache is not empty: $(ls s/blobs/sha256)"
	before=$(base_gets)
	run_rc pull s "$plus_ref" > out 2> err
	assert_eq 0 "$rc" "pull of busybox+1: $(cat err)"
	reg_wait_requests '^GET /v2/ctrun-test/bb/manifests/plus 200$' 1 || fail "no manifest request"
	assert_eq "$before" "$(base_gets)" "downloads of the base's layers by the second pull"
	listing "$(cat out)" > reuse.list
	diff full.list reuse.list > diff.out || fail "the image differs from the full pull's: $(cat diff.out)"
	cmp <(unsquashfs -cat "$(cat out)" usr/local/big) tree/usr/local/big ||
		fail "the new layer's large file differs"
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/s" "$CTRUN" -q --runtime oci --image-mode mount \
		--image "$plus_ref" -- sh -c 'cat /etc/motd /opt/new; ls /opt; cat /etc/hostname' \
		> run.out 2>&1
	printf 'motd of layer 3\nfrom layer 3\nnew\n' > want
	head -3 run.out | diff want - > diff.out || fail "in the container: $(cat run.out)"
	grep -q "No such file" run.out || fail "/etc/hostname, deleted by the new layer, is there: $(cat run.out)"
}
behaviour "busybox+1 after busybox: built on the stored image, the base's layers not downloaded, the full pull's tree" reuse

fallback() {
	[ -s full.list ] || fail "no reference image"
	# Another compressor: the stored image's blocks cannot be the new one's.
	run_rc pull gz "$base_ref" CTRUN_REGISTRY_COMPRESSION=gzip:1 > out 2> err
	assert_eq 0 "$rc" "pull of the base (gzip): $(cat err)"
	before=$(base_gets)
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/gz" "$CTRUN" pull "$plus_ref" > out 2> err
	assert_eq 0 "$rc" "pull of busybox+1 on a gzip base: $(cat err)"
	grep -q "not built on the stored image .*another compressor.*pulling it whole" err ||
		fail "the fallback is not said: $(cat err)"
	assert_eq 1 "$(grep -c "not built on" err)" "lines saying so"
	listing "$(tail -1 out)" > gz.list
	diff full.list gz.list > diff.out || fail "the image differs from the full pull's: $(cat diff.out)"
	# A damaged stored image (cut short): pulled whole, the same image.
	run_rc pull cut "$base_ref" > out 2> err
	assert_eq 0 "$rc" "pull of the base: $(cat err)"
	truncate -s 4096 "$(cat out)"
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/cut" "$CTRUN" pull "$plus_ref" > out 2> err
	assert_eq 0 "$rc" "pull of busybox+1 on a damaged base: $(cat err)"
	grep -q "not built on the stored image" err || fail "the fallback is not said: $(cat err)"
	listing "$(tail -1 out)" > cut.list
	diff full.list cut.list > diff.out || fail "the image differs from the full pull's: $(cat diff.out)"
}
behaviour "a stored image of another compressor or cut short: said in one line, pulled whole, the same tree" fallback
