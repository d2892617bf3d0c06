#!/bin/bash
# [fabric] libraries, lib_dirs, net_env: the host's network stack in the
# container, every runtime, bound only once the image can load it.  The
# stack here is made for the test as a site's would be laid out: a
# libfabric (libfabric.so.1 -> libfabric.so.1.22.0, needing GLIBC_2.36:
# it calls arc4random) and an NCCL net plugin that links it
# (libnccl-net-fake.so); the image has this machine's glibc (2.36) and a
# probe that dlopens the plugin by name, as NCCL does with NCCL_NET_PLUGIN,
# and prints what its libfabric says.
#  runc, crun, enroot (unpacked), Singularity, charliecloud: the plugin
#    loads the host's libfabric from /.ctrun/fabric/lib (on
#    LD_LIBRARY_PATH), NCCL_NET_PLUGIN from net_env, CTRUN_FABRIC_BOUND
#    names what was bound, a lib_dirs directory is there;
#  an image that ships another libfabric.so.1 (1.18.0): refused in one
#    line naming both versions (exit 125); on_conflict = image: the
#    image's own loads;
#  an image whose glibc is older than the library needs (a libc.so.6 that
#    defines up to GLIBC_2.17), and one with no glibc (busybox): refused,
#    naming both;
#  bad settings (not a library, a relative path): exit 2, one line;
#  enroot starting the squashfs from its file (ctrun cannot read its root
#    before the start): refused with the way out;
#  the same stack as a CDI spec named in [fabric] devices: its library
#    binds checked the same way (refused against the image with its own
#    libfabric, that bind dropped with on_conflict = image).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/fabriclib.sh"
command -v runc >/dev/null || skip "runc is not installed (Debian package runc)"
command -v cc >/dev/null || fail "no C compiler (make deps installs gcc)"
ROOTFS=$("$CTRUN_REPO/tests/images/build.sh" path busybox-rootfs)
[ -d "$ROOTFS" ] || skip "test image busybox-rootfs missing (run: tests/images/build.sh busybox)"
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
rt_rows_setup "$user"
chmod 755 "$TMPD"
mkdir -p host/lib host/prov src

cat >src/fabric.c <<'C'
#include <stdlib.h>
const char *fi_version_str(void) { return arc4random() != 0 || 1 ? VERSION : ""; }
C
cat >src/plugin.c <<'C'
const char *fi_version_str(void);
const char *plugin_net(void) { return fi_version_str(); }
C
cat >src/probe.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	const char *name = getenv("NCCL_NET_PLUGIN");
	char lib[256];
	void *h;
	const char *(*f)(void);

	snprintf(lib, sizeof(lib), "libnccl-net-%s.so", name != NULL ? name : "none");
	if ((h = dlopen(lib, RTLD_NOW)) == NULL) {
		printf("probe: %s\n", dlerror());
		return 1;
	}
	f = (const char *(*)(void))dlsym(h, "plugin_net");
	printf("probe: %s -> %s\n", lib, f());
	return 0;
}
C
cc -shared -fPIC -DVERSION='"host libfabric 1.22.0"' -Wl,-soname,libfabric.so.1 \
	-o host/lib/libfabric.so.1.22.0 src/fabric.c
ln -s libfabric.so.1.22.0 host/lib/libfabric.so.1
cc -shared -fPIC -Wl,-soname,libnccl-net-fake.so -o host/lib/libnccl-net-fake.so src/plugin.c \
	-Lhost/lib -l:libfabric.so.1
cc -shared -fPIC -o host/prov/libefa-fi.so src/plugin.c
cc -o src/probe src/probe.c
chmod -R a+rX host

glibc_image "$TMPD/img" src/probe
# The same image with a libfabric of its own, another version.
cp -a "$TMPD/img" "$TMPD/img-own"
cc -shared -fPIC -DVERSION='"image libfabric 1.18.0"' -Wl,-soname,libfabric.so.1 \
	-o "$TMPD/img-own/usr/lib/x86_64-linux-gnu/libfabric.so.1.18.0" src/fabric.c
ln -s libfabric.so.1.18.0 "$TMPD/img-own/usr/lib/x86_64-linux-gnu/libfabric.so.1"
# An image whose glibc is 2.17: its libc.so.6 defines GLIBC_2.2.5 .. 2.17.
cp -a "$TMPD/img" "$TMPD/img-old"
printf 'GLIBC_2.2.5 { global: old_a; local: *; };\nGLIBC_2.17 { global: old_b; } GLIBC_2.2.5;\n' \
	>src/old.map
printf 'int old_a(void) { return 1; }\nint old_b(void) { return 2; }\n' >src/old.c
cc -shared -fPIC -nostdlib -Wl,-soname,libc.so.6 -Wl,--version-script=src/old.map \
	-o "$TMPD/img-old/lib/x86_64-linux-gnu/libc.so.6" src/old.c
mkdir -p sqsh && mksquashfs "$TMPD/img" sqsh/img.sqsh -all-root -noappend -quiet >/dev/null

cat >fabric.ini <<EOF2
[fabric]
libraries = $TMPD/host/lib/libnccl-net-fake.so
libraries = $TMPD/host/lib/libfabric.so.1
lib_dirs = $TMPD/host/prov:/opt/site/fi-providers
net_env = NCCL_NET_PLUGIN=fake
net_env = FI_PROVIDER_PATH=/opt/site/fi-providers
EOF2
cp fabric.ini keep.ini
echo 'on_conflict = image' >>keep.ini
chmod 644 fabric.ini keep.ini

PROBE='echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; echo "NCCL_NET_PLUGIN=$NCCL_NET_PLUGIN";
echo "CTRUN_FABRIC_BOUND=$CTRUN_FABRIC_BOUND"; ls /opt/site/fi-providers; probe'

run_probe() { # as_root|as_user RUNTIME IMAGE INI [ARG...]
	local who=$1 rt=$2 img=$3 ini=$4
	shift 4
	"$who" env CTRUN_CONFIG="$TMPD/$ini" srun -N1 -n1 -w "${NODES[0]}" "$CTRUN" -q \
		--no-prefix --runtime "$rt" --image "$img" "$@" -- sh -c "$PROBE"
}

loads_host_stack() { # RUNTIME [ARG...]
	local rt=$1 img=$TMPD/img out
	shift
	[ "$rt" != enroot ] || img=$TMPD/sqsh/img.sqsh
	out=$(run_probe as_root "$rt" "$img" fabric.ini "$@")
	echo "$out"
	grep -qx "probe: libnccl-net-fake.so -> host libfabric 1.22.0" <<<"$out" ||
		fail "$rt: the plugin did not load the host's libfabric"
	grep -qx "NCCL_NET_PLUGIN=fake" <<<"$out" || fail "$rt: net_env"
	grep -qx "CTRUN_FABRIC_BOUND=libnccl-net-fake.so,libfabric.so.1 1.22.0" <<<"$out" ||
		fail "$rt: CTRUN_FABRIC_BOUND"
	grep -q "^LD_LIBRARY_PATH=.*/.ctrun/fabric/lib" <<<"$out" || fail "$rt: LD_LIBRARY_PATH"
	grep -qx "libefa-fi.so" <<<"$out" || fail "$rt: the lib_dirs directory"
}
behaviour "runc: the host's plugin and libfabric load, net_env, lib_dirs" loads_host_stack oci
behaviour "crun: the same" loads_host_stack crun
behaviour "enroot: the same, unpacked" with_rt enroot loads_host_stack --image-mode unpack
behaviour "singularity: the same" with_rt singularity loads_host_stack
behaviour "charliecloud: the same" with_rt charliecloud loads_host_stack
user_runc() {
	local out
	out=$(run_probe as_user oci "$TMPD/img" fabric.ini)
	grep -qx "probe: libnccl-net-fake.so -> host libfabric 1.22.0" <<<"$out" ||
		fail "rootless runc: $out"
}
behaviour "runc as a user: the same" user_runc

# refused IMAGE WANT...: exit 125, one line with every WANT, nothing started.
refused() {
	local img=$1 err w
	shift
	run_rc run_probe as_root oci "$img" fabric.ini 2>"$TMPD/err"
	err=$(grep -v '^srun: ' "$TMPD/err" || true)
	echo "$err"
	assert_eq 125 "$rc" "exit status"
	assert_eq 1 "$(wc -l <<<"$err")" "one line"
	for w; do grep -qF -- "$w" <<<"$err" || fail "the line does not say: $w"; done
	assert_no_containers
}
image_ships_its_own() {
	local out
	refused "$TMPD/img-own" "[fabric] libraries refused for this image: the image ships libfabric.so.1 1.18.0 (/usr/lib/x86_64-linux-gnu/libfabric.so.1 -> libfabric.so.1.18.0), the host's is 1.22.0 ($TMPD/host/lib/libfabric.so.1.22.0)" \
		"on_conflict = image"
	out=$(run_probe as_root oci "$TMPD/img-own" keep.ini)
	echo "$out"
	grep -qx "probe: libnccl-net-fake.so -> image libfabric 1.18.0" <<<"$out" ||
		fail "on_conflict = image: the image's own libfabric should load"
	grep -qx "CTRUN_FABRIC_BOUND=libnccl-net-fake.so" <<<"$out" || fail "only the plugin bound"
}
behaviour "the image ships another libfabric: refused naming both; on_conflict = image keeps it" \
	image_ships_its_own
old_glibc() {
	refused "$TMPD/img-old" "needs GLIBC_2.36, the image's glibc is 2.17 (/lib/x86_64-linux-gnu/libc.so.6)"
}
behaviour "an image with an older glibc: refused naming both versions" old_glibc
no_glibc() {
	refused "$ROOTFS" "needs GLIBC_2.36, and the image has no glibc"
}
behaviour "an image without glibc: refused" no_glibc

bad_setting() { # LIBRARY WANT
	local err
	printf '[fabric]\nlibraries = %s\n' "$1" >bad.ini
	run_rc env CTRUN_CONFIG="$TMPD/bad.ini" "$CTRUN" -q --runtime oci --image "$TMPD/img" -- true \
		2>"$TMPD/err"
	err=$(cat "$TMPD/err")
	assert_eq 2 "$rc" "exit status ($1)"
	assert_eq 1 "$(wc -l <<<"$err")" "one line: $err"
	grep -qF -- "$2" <<<"$err" || fail "the line: $err"
}
bad_settings() {
	bad_setting /etc/passwd "[fabric] libraries: /etc/passwd is not an ELF file"
	bad_setting lib/libx.so "[fabric] libraries: lib/libx.so: not an absolute path"
	bad_setting /nonexistent/libx.so "[fabric] libraries: /nonexistent/libx.so: No such file"
}
behaviour "bad settings: exit 2, one line" bad_settings

enroot_from_file() {
	local err
	run_rc env PATH="/opt/enroot/bin:$PATH" CTRUN_NV=false CTRUN_CONFIG="$TMPD/fabric.ini" \
		"$CTRUN" -q --runtime enroot --image-mode mount --image "$TMPD/sqsh/img.sqsh" -- true \
		2>"$TMPD/err"
	err=$(cat "$TMPD/err")
	assert_eq 125 "$rc" "exit status"
	grep -qF "enroot starts from the image file, whose root ctrun cannot read before the start" \
		<<<"$err" || fail "the line: $err"
	grep -qF -- "--image-mode unpack" <<<"$err" || fail "the way out"
}
behaviour "enroot: from the squashfs file, refused with the way out" with_rt enroot enroot_from_file
# The stack as a site's CDI spec, bound where the spec says.
mkdir -p cdi
cat >cdi/site.yaml <<EOF2
cdiVersion: 0.5.0
kind: site.example.com/net
devices:
- name: fake
  containerEdits:
    env: [NCCL_NET_PLUGIN=fake, LD_LIBRARY_PATH=/opt/site/lib]
    mounts:
    - {hostPath: $TMPD/host/lib/libfabric.so.1.22.0, containerPath: /opt/site/lib/libfabric.so.1, options: [ro, bind]}
    - {hostPath: $TMPD/host/lib/libnccl-net-fake.so, containerPath: /opt/site/lib/libnccl-net-fake.so, options: [ro, bind]}
EOF2
chmod -R go-w cdi
printf '[container]\ncdi_spec_dirs = %s/cdi\n[fabric]\ndevices = site.example.com/net=fake\n' \
	"$TMPD" >cdi.ini
cp cdi.ini cdi-keep.ini
echo 'on_conflict = image' >>cdi-keep.ini
chmod 644 cdi.ini cdi-keep.ini
cdi_stack() {
	local out err
	out=$(env CTRUN_CONFIG="$TMPD/cdi.ini" "$CTRUN" -q --runtime oci --image "$TMPD/img" -- probe)
	echo "$out"
	grep -qx "probe: libnccl-net-fake.so -> host libfabric 1.22.0" <<<"$out" ||
		fail "the CDI stack did not load the host's libfabric"
	run_rc env CTRUN_CONFIG="$TMPD/cdi.ini" "$CTRUN" -q --runtime oci --image "$TMPD/img-own" \
		-- probe 2>"$TMPD/err"
	err=$(cat "$TMPD/err")
	assert_eq 125 "$rc" "exit status against the image with its own libfabric"
	grep -qF "CDI device site.example.com/net=fake ([fabric] devices) refused for this image: the image ships libfabric.so.1 1.18.0" \
		<<<"$err" || fail "the line: $err"
	out=$(env CTRUN_CONFIG="$TMPD/cdi-keep.ini" "$CTRUN" -q --runtime oci --image "$TMPD/img-own" \
		-- probe)
	grep -qx "probe: libnccl-net-fake.so -> image libfabric 1.18.0" <<<"$out" ||
		fail "on_conflict = image: the image's libfabric should load: $out"
}
behaviour "the stack as a CDI spec ([fabric] devices): checked the same way" cdi_stack
behaviour "no container left" assert_no_containers
