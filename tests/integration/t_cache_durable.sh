#!/bin/bash
# A cache entry is on disk before it is visible: the finished temp is
# synced (syncfs) before the rename that publishes it, and the rename is
# synced (fsync of entries/) after, so a node crash never leaves an entry
# of empty files under an identity that would be reused for ever.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
command -v strace >/dev/null || fail "strace missing (make deps installs it)"
cd "$TMPD"
export CTRUN_CACHE_DIR=$TMPD/cache
strace -f -o trace.txt -e trace=syncfs,rename,renameat,renameat2,fsync "$CTRUN" cache create "$BB" > root.txt
grep -E 'syncfs|rename|fsync' trace.txt | grep -v ENOENT > calls.txt || true
cat calls.txt
publish=$(grep -n 'rename.*ctrun-tmp.*entries/[0-9a-f]\{32\}"' calls.txt | head -1 | cut -d: -f1) || true
[ -n "$publish" ] || fail "no rename publishing the entry"
synced_before() {
	head -n "$publish" calls.txt | grep -q 'syncfs(' || fail "the entry was published before syncfs"
}
synced_after() {
	tail -n +"$publish" calls.txt | grep -q 'fsync(' || fail "the publishing rename was not synced"
}
complete() {
	[ -x "$(cat root.txt)/bin/busybox" ] || fail "the published entry has no busybox"
}
behaviour "the entry's files are synced (syncfs) before the rename that publishes it" synced_before
behaviour "the publishing rename is synced (fsync) after" synced_after
behaviour "the published entry is complete" complete
