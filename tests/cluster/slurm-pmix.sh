#!/bin/bash
# slurm-pmix.sh — Slurm's own mpi/pmix plugin for a Slurm install that was built without it,
# so the test cluster of that release runs `srun --mpi=pmix` (t_spank_mpi) as Debian's 22.05
# does. ../shared/tools/build-slurm.sh configures its build (e.g. 26.05 into /opt/slurm-new)
# without --with-pmix: Slurm looks for PMIx under PREFIX/include and PREFIX/lib only, and
# Debian's libpmix-dev lives in /usr/lib/x86_64-linux-gnu/pmix2.
#
# usage: slurm-pmix.sh PREFIX OUT
#   PREFIX  the Slurm install (PREFIX/lib/slurm, PREFIX/.built-from: the commit it was built from)
#   OUT     a directory of ours for the plugin (the cluster's PluginDir lists it after
#           PREFIX/lib/slurm, so the install under /opt is never touched)
# Prints OUT when OUT holds mpi_pmix.so for that commit (made now, or before), else prints
# nothing and says why on stderr: PREFIX has mpi/pmix already; no source tree of that commit
# (build-slurm.sh's, $SLURM_NEW_SRC or /var/tmp/slurm-new-src); no libpmix-dev. Exits 0 in
# those cases; non-zero only when a build that should work failed (its log: OUT.log).
# The same release's source, configured as build-slurm.sh configures it plus
# --with-pmix=Debian's PMIx, in a copy under OUT.src (the original tree is configured in place
# and configure refuses to build out of tree from it); only src/plugins/mpi/pmix is compiled.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX OUT}
out=${2:?usage: $0 PREFIX OUT}
src=${SLURM_NEW_SRC:-/var/tmp/slurm-new-src}
pmix=/usr/lib/x86_64-linux-gnu/pmix2

say() { echo "slurm-pmix.sh: $*" >&2; }

if [[ -e $prefix/lib/slurm/mpi_pmix.so ]]; then
    say "$prefix has mpi/pmix already"; exit 0
fi
commit=$(cat "$prefix/.built-from" 2>/dev/null || true)
if [[ -z $commit ]]; then
    say "$prefix has no .built-from (not a build-slurm.sh install): no source to build mpi/pmix from"; exit 0
fi
if [[ -e $out/mpi_pmix.so && $(cat "$out/.built-from" 2>/dev/null) == "$commit" ]]; then
    echo "$out"; exit 0
fi
if [[ $(cat "$src/.built-from" 2>/dev/null) != "$commit" || ! -x $src/configure ]]; then
    say "no source tree of $commit in $src (build-slurm.sh's): cannot build mpi/pmix"; exit 0
fi
if [[ ! -e $pmix/include/pmix.h ]]; then
    say "no $pmix/include/pmix.h (Debian's libpmix-dev): cannot build mpi/pmix"; exit 0
fi

rm -rf "$out" "$out.src"
mkdir -p "$out.src"
log=$out.log
# The sources without build-slurm.sh's objects and configuration.
tar -C "$src" --exclude=.libs --exclude=.deps --exclude='*.o' --exclude='*.lo' --exclude='*.la' \
    --exclude='*.a' --exclude='*.so' --exclude=config.status --exclude=config.log --exclude='*.out' \
    -cf - . | tar -C "$out.src" -xf -
(
    cd "$out.src"
    nice ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" \
        --disable-debug --disable-static --without-munge --without-hdf5 \
        --disable-sview --disable-slurmrestd --without-rpath --with-pmix="$pmix"
    grep -Eq "^HAVE_PMIX_V[0-9]+_TRUE=(''|)$" config.log
    nice make -C src/plugins/mpi/pmix
) > "$log" 2>&1 || { say "building mpi/pmix failed (log: $log)"; tail -20 "$log" >&2; rm -rf "$out.src"; exit 1; }
so=$(find "$out.src/src/plugins/mpi/pmix/.libs" -maxdepth 1 -name 'mpi_pmix_v*.so' -type f | sort -V | tail -1)
[[ -n $so ]] || { say "no mpi_pmix_v*.so was built (log: $log)"; rm -rf "$out.src"; exit 1; }
mkdir -p "$out"
install -m 755 "$so" "$out/$(basename "$so")"
# As Slurm's install-exec-hook: mpi/pmix is the newest PMIx version's plugin.
ln -sf "$(basename "$so")" "$out/mpi_pmix.so"
echo "$commit" > "$out/.built-from"
rm -rf "$out.src"
echo "$out"
