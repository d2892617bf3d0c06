#!/bin/bash
# The image store against another local user (issue 29, point 2):
# ctrunevil is the attacker, root and ctrunuser the victims.  The store
# path is one anyone can create first (a site's `[registry] store =
# /scratch/...`, here under the test's world-writable directory); the
# attacker does, and plants a squashfs of its own at
# images/sha256-HEX.sqsh for the tag's current digest.  Neither victim
# may run it: each run is refused with one line naming the store and its
# owner (exit 125), whichever way the store is reached (a tag, the digest
# a batch step hands on).  A group's store is refused to root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
need_image ROOTFS busybox-rootfs
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser)
evil=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunevil)
cd "$TMPD"
reg_start --storage "$STORAGE"
ref=docker://$REG_HOST/ctrun-test/busybox:latest
want=$(reg_digest ctrun-test/busybox:latest)
reg_client "$TMPD/auth.json"
chmod 644 auth.json # the victims' credentials; the attacker is no client here

# The attacker's image: busybox with /PWNED.
cp -a "$ROOTFS" evil-rootfs
echo pwned > evil-rootfs/PWNED
mksquashfs evil-rootfs evil.sqsh -noappend -quiet -no-progress >/dev/null
chmod 644 evil.sqsh

# plant DIR MODE: the attacker makes DIR (mode MODE) with its image at the
# tag's digest, as it could before any victim ran.
plant() {
	su "$evil" -s /bin/sh -c "mkdir -m $2 '$1' && chmod $2 '$1' && mkdir -m 755 '$1/images' &&
		cp '$TMPD/evil.sqsh' '$1/images/sha256-${want#sha256:}.sqsh'" || fail "could not plant $1"
}

# refused RC WHAT: the run's exit and its one line naming the store and owner.
refused() {
	cat err
	assert_eq 125 "$rc" "$2"
	if grep -q pwned out; then fail "$2: the attacker's image ran"; fi
	assert_eq 1 "$(wc -l < err)" "lines of the refusal"
	grep -q "image store $1.*owner $evil" err || fail "the refusal does not name $1 and $evil"
}

plant "$TMPD/site-store" 777
root_refuses() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/site-store" "$CTRUN" --image "$ref" -- cat /PWNED > out 2> err
	refused "$TMPD/site-store" "root's run from a store the attacker made"
	assert_no_containers
}
behaviour "root: a store another user made first, with an image planted for the tag, is refused" root_refuses

handed_digest() {
	# A batch step's ctrun takes the digest the batch script pulled from the
	# store alone (CTRUN_IMAGE_PULLED), without the registry.
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/site-store" CTRUN_IMAGE_PULLED="$want $ref" \
		"$CTRUN" --image "$ref" -- cat /PWNED > out 2> err
	refused "$TMPD/site-store" "root's run of the digest a batch script handed on"
}
behaviour "root: the digest a batch script hands on is not taken from that store either" handed_digest

user_refuses() {
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && CTRUN_REGISTRY_STORE='$TMPD/site-store' \
		CTRUN_REGISTRY_AUTH_FILE='$TMPD/auth.json' CTRUN_REGISTRY_CA_FILE='$REG_CA' \
		'$CTRUN' pull '$ref'" > out 2> err
	refused "$TMPD/site-store" "$user's pull into a store the attacker made"
}
behaviour "a user: the same store is refused" user_refuses

plant "$TMPD/ro-store" 755
readonly_store() {
	# Read-only to everyone else, still the attacker's images.
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && CTRUN_REGISTRY_STORE='$TMPD/ro-store' \
		CTRUN_REGISTRY_AUTH_FILE='$TMPD/auth.json' CTRUN_REGISTRY_CA_FILE='$REG_CA' \
		'$CTRUN' --image '$ref' -- cat /PWNED" > out 2> err
	refused "$TMPD/ro-store" "$user's run from another user's read-only store"
}
behaviour "a user: another user's store that only its owner can write is refused" readonly_store

# A group's store (setgid, group-writable) of the attacker's own group.
plant "$TMPD/group-store" 2770
chgrp "$evil" "$TMPD/group-store"
chmod 2770 "$TMPD/group-store"
group_store_root() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/group-store" "$CTRUN" --image "$ref" -- cat /PWNED > out 2> err
	refused "$TMPD/group-store" "root's run from a group's store"
	grep -q "a store of group $evil, which its members can write" err || fail "the reason is not said"
}
behaviour "root: a group's store is refused (root's runs use a store only root writes)" group_store_root

own_store() {
	run_rc env CTRUN_REGISTRY_STORE="$TMPD/root-store" "$CTRUN" -q --image "$ref" -- cat /etc/environment > out 2> err
	cat err
	assert_eq 0 "$rc" "root's run from its own store"
	grep -q CTRUN_IMAGE_ENV=busybox out || fail "the registry's image did not run"
	assert_no_containers
}
behaviour "root's own store is used as before" own_store
