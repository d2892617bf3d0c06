#!/bin/bash
# A group's image store (docs/images.md: setgid, group-writable, its
# members trusted) as two members use it (issue 29, points 4, 7 and 8):
# ctrunuser and ctrunmate, both in the group ctrunproj, each with the
# umask most users have (022), a registry with TLS and basic auth serving
# the test images.  busybox:latest and busybox:oci are two images that
# share their config blob.
#  - Each member pulls, the second an image sharing a blob with the
#    first's; after one member's `ctrun cache gc` the other still pulls.
#  - A member swaps the content of a blob in blobs/ (same size): the other
#    member's next pull uses the registry's bytes, never the swapped ones.
#  - A member plants tmp/HEX.part (a FIFO, a link to a file of the other's,
#    bytes that are not the blob's): the other's pull neither hangs nor
#    fails nor writes through the link, and applies only the registry's
#    bytes.
# ctrunmate and ctrunproj are this test's own: made here (with
# ensure-user.sh's options) and removed on exit, also when an earlier run
# that was killed left them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
a=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser)
b=ctrunmate grp=ctrunproj
cd "$TMPD"

trap 'test_members_gone "$grp" "$b"; cleanup_tmp' EXIT
test_members "$grp" "$b"
usermod -a -G "$grp" "$a"

reg_start --storage "$STORAGE"
latest=docker://$REG_HOST/ctrun-test/busybox:latest
oci=docker://$REG_HOST/ctrun-test/busybox:oci
d_latest=$(reg_digest ctrun-test/busybox:latest)
d_oci=$(reg_digest ctrun-test/busybox:oci)
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:oci" > oci.json
reg_skopeo inspect --raw "$(_reg_tls_opts)" "$(_reg_creds_opts)" \
	"docker://$REG_HOST/ctrun-test/busybox:latest" > latest.json
config=$("$PY" -c 'import json; print(json.load(open("oci.json"))["config"]["digest"])')
assert_eq "$config" "$("$PY" -c 'import json; print(json.load(open("latest.json"))["config"]["digest"])')" \
	"the two images' config (the blob they share)"
layer=$("$PY" -c 'import json; print(json.load(open("latest.json"))["layers"][0]["digest"])')
blob_file() { echo "$STORAGE/docker/registry/v2/blobs/sha256/${1:7:2}/${1#sha256:}/data"; }

# The group's store, made by an admin as docs/images.md says.
store=$TMPD/gstore
install -d -m 2770 -o root -g "$grp" "$store"
printf '{"auths": {"%s": {"auth": "%s"}}}\n' "$REG_HOST" \
	"$(printf '%s:%s' "$REG_USER" "$REG_PASSWORD" | base64 -w0)" > auth.json
for u in "$a" "$b"; do
	install -m 600 -o "$u" auth.json "auth-$u.json"
done

# as USER CTRUN-ARGS...: ctrun as that member, umask 022, the group store.
as() {
	local u=$1
	shift
	su "$u" -s /bin/bash -c "umask 022 && cd '$TMPD' && CTRUN_REGISTRY_STORE='$store' \
		CTRUN_REGISTRY_AUTH_FILE='$TMPD/auth-$u.json' CTRUN_REGISTRY_CA_FILE='$REG_CA' \
		exec timeout 120 '$CTRUN' $*"
}
img() { echo "$store/images/sha256-${1#sha256:}.sqsh"; }

two_members() {
	run_rc as "$a" -q pull "$latest" > out 2> err
	cat err
	assert_eq 0 "$rc" "$a's pull into the group store"
	run_rc as "$b" -q pull "$oci" > out 2> err
	cat err
	assert_eq 0 "$rc" "$b's pull of an image sharing a blob with $a's"
	assert_eq "$b $grp 644" "$(stat -c '%U %G %a' "$(img "$d_oci")")" "$b's image"
	assert_eq "2770 $grp" "$(stat -c '%a %G' "$store/blobs/sha256")" "blobs/sha256"
	# Each member runs the other's image.
	run_rc as "$a" -q pull "$oci" > out 2> err
	assert_eq 0 "$rc" "$a's pull of $b's image ($(cat err))"
	assert_eq "$(img "$d_oci")" "$(cat out)" "the image $a got"
}
behaviour "two members of a group store: the second pulls an image sharing a blob with the first's" two_members

after_gc() {
	run_rc as "$a" -q cache gc --budget 100G > out 2> err
	cat err
	assert_eq 0 "$rc" "$a's cache gc"
	[ -z "$(ls "$store/blobs/sha256")" ] || fail "gc left blobs"
	assert_eq "2770 $grp" "$(stat -c '%a %G' "$store/blobs/sha256")" "blobs/sha256 after gc"
	run_rc as "$b" -q cache remove "$oci" 2> err
	assert_eq 0 "$rc" "$b's cache remove ($(cat err))"
	run_rc as "$b" -q pull "$oci" > out 2> err
	cat err
	assert_eq 0 "$rc" "$b's pull after $a's gc"
}
behaviour "after one member's cache gc the other still pulls" after_gc

# From here on $b plays the member who turned on the others.
swapped_blob() {
	local f=$store/blobs/sha256/${config#sha256:} size
	size=$(stat -c %s "$f")
	# A config of b's that sets PWNED, padded with spaces to the size.
	"$PY" - "$size" > swap <<'EOF'
import json, sys
c = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Env": ["PWNED=1"]},
                "rootfs": {"type": "layers", "diff_ids": []}})
print(c + " " * (int(sys.argv[1]) - len(c)), end="")
EOF
	assert_eq "$size" "$(stat -c %s swap)" "the swapped config's size"
	chmod 644 swap
	su "$b" -s /bin/sh -c "cp '$TMPD/swap' '$store/tmp/swap' && mv -f '$store/tmp/swap' '$f'" ||
		fail "$b could not swap the blob"
	run_rc as "$b" -q cache remove "$oci"
	run_rc as "$a" pull "$oci" > out 2> err
	cat err
	assert_eq 0 "$rc" "$a's pull over the swapped blob"
	unsquashfs -cat "$(img "$d_oci")" etc/environment > env
	if grep -q PWNED env; then fail "the swapped config went into $a's image"; fi
	grep -q CTRUN_IMAGE_ENV=busybox env || fail "the image's own config is missing: $(cat env)"
	grep -q "blob $config in the image store is not the bytes its digest names" err ||
		fail "the swap is not said"
	cmp -s "$(blob_file "$config")" "$f" || fail "the store keeps the swapped blob"
}
behaviour "a member swaps a blob's bytes: the other's pull uses the registry's" swapped_blob

# tmp/HEX.part planted by $b for the first layer, which gc removed from blobs/.
planted_part() { # KIND
	run_rc as "$a" -q cache gc --budget 100G
	run_rc as "$a" -q cache remove "$latest"
	case $1 in
	fifo) su "$b" -s /bin/sh -c "mkfifo '$store/tmp/${layer#sha256:}.part'" ;;
	link) su "$b" -s /bin/sh -c "ln -s '$TMPD/auth-$a.json' '$store/tmp/${layer#sha256:}.part'" ;;
	bytes) su "$b" -s /bin/sh -c "head -c 500000 /dev/urandom > '$store/tmp/${layer#sha256:}.part'" ;;
	esac || fail "$b could not plant the partial download"
	run_rc as "$a" -v pull "$latest" > out 2> err
	cat err
	[ "$rc" -ne 124 ] || fail "$a's pull hung on the planted $1"
	assert_eq 0 "$rc" "$a's pull over a planted $1"
	cmp -s "$(blob_file "$layer")" "$store/blobs/sha256/${layer#sha256:}" ||
		fail "the layer in the store is not the registry's"
	unsquashfs -l "$(img "$d_latest")" > list
	grep -qx 'squashfs-root/bin/busybox' list || fail "the layer is missing from the image"
	[ -z "$(ls "$store/tmp")" ] || fail "tmp/ not empty: $(ls "$store/tmp")"
}
fifo_part() { planted_part fifo; }
behaviour "a FIFO planted as a partial download: the pull goes on without it" fifo_part
link_part() {
	planted_part link
	cmp -s auth.json "auth-$a.json" || fail "the link's target was written"
}
behaviour "a link planted as a partial download: not followed, the pull goes on" link_part
bytes_part() {
	planted_part bytes
	grep -q "the partial download was not the blob's; downloading it whole" err ||
		fail "the discarded partial download is not said"
}
behaviour "bytes planted as a partial download: hashed, found wrong, downloaded whole" bytes_part
