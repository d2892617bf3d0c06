#!/usr/bin/env python3
"""mklayers.py - splits a Debian root file system into layer directories by package.

A layer NAME=PKG[,PKG...] holds those packages and everything they depend on (Depends and
Pre-Depends, recursively, as installed: dpkg's status) but the base system (Essential or
Priority required/important, what debootstrap --variant=minbase installs) and the packages
of the layers before it.  Moves, out of ROOTFS into OUTDIR/NAME, every file and symbolic
link of the layer's packages (var/lib/dpkg/info/*.list), and every file no package lists
(.pyc, generated files) whose nearest listed directory belongs to that layer's packages
only.  Directories stay in ROOTFS (the layers
get the parents they need, with ROOTFS's modes and times).  What is left in ROOTFS is the
first layer; stacking ROOTFS, then each OUTDIR/NAME in the order given, gives back the
root file system as it was.  Prints each layer's file count and size.

usage: mklayers.py ROOTFS OUTDIR NAME=PKG[,PKG...]...
"""
import os
import re
import stat
import sys


def installed(root):
    """dpkg's status: {package: fields} of the installed packages."""
    pkgs, cur, last = {}, {}, None
    with open(os.path.join(root, "var/lib/dpkg/status"), errors="surrogateescape") as f:
        for line in f.read().split("\n") + [""]:
            if not line:
                if "Package" in cur and cur.get("Status", "").endswith(" installed"):
                    pkgs[cur["Package"]] = cur
                cur, last = {}, None
            elif line[0] in " \t":
                if last:
                    cur[last] += "\n" + line
            else:
                last, _, v = line.partition(":")
                cur[last] = v.strip()
    return pkgs


def closure(pkgs, names):
    """names and what they depend on, recursively: the first installed alternative of
    each dependency, a virtual package by what provides it."""
    provides = {}
    for p, f in pkgs.items():
        for v in f.get("Provides", "").split(","):
            v = re.sub(r"\(.*?\)|:\S+", "", v).strip()
            if v:
                provides.setdefault(v, p)
    seen, todo = set(), list(names)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        if p not in pkgs:
            sys.exit(f"package '{p}' is not installed")
        seen.add(p)
        deps = pkgs[p].get("Pre-Depends", "") + "," + pkgs[p].get("Depends", "")
        for d in deps.split(","):
            for alt in d.split("|"):
                alt = re.sub(r"\(.*?\)|\[.*?\]|:\S+", "", alt).strip()
                alt = alt if alt in pkgs else provides.get(alt, "")
                if alt:
                    todo.append(alt)
                    break
    return seen


def in_root(root, rel):
    """rel with every symbolic link among its directories resolved inside root (Debian's
    merged /usr: dpkg lists /lib/udev/x, which is usr/lib/udev/x)."""
    parts, out, hops = rel.split("/"), [], 0
    last = parts.pop() if parts else ""
    while parts:
        c = parts.pop(0)
        if c in ("", "."):
            continue
        if c == "..":
            out = out[:-1]
            continue
        full = os.path.join(root, *out, c)
        if os.path.islink(full):
            hops += 1
            if hops > 40:
                sys.exit(f"{rel}: too many symbolic links")
            t = os.readlink(full)
            if t.startswith("/"):
                out = []
            parts = t.split("/") + parts
        else:
            out.append(c)
    return "/".join(out + [last]) if last not in ("", ".") else "/".join(out)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    root, outdir = sys.argv[1], sys.argv[2]
    pkgs = installed(root)
    base = {p for p, f in pkgs.items()
            if f.get("Essential") == "yes" or f.get("Priority") in ("required", "important")}
    taken = closure(pkgs, sorted(base))
    layers = []  # (name, its packages)
    for spec in sys.argv[3:]:
        name, sep, names = spec.partition("=")
        if not sep or not name or "/" in name or not names:
            sys.exit(f"bad layer '{spec}': expected NAME=PKG[,PKG...]")
        mine = closure(pkgs, names.split(",")) - taken
        taken |= mine
        layers.append((name, mine))
    info = os.path.join(root, "var/lib/dpkg/info")
    owner = {}      # path (no leading /) of a file or link -> layer index
    dir_layers = {}  # listed directory -> set of layer indexes (-1: the base)
    for f in sorted(os.listdir(info)):
        if not f.endswith(".list"):
            continue
        pkg = f[:-5].split(":")[0]
        li = next((i for i, (_, mine) in enumerate(layers) if pkg in mine), -1)
        with open(os.path.join(info, f), errors="surrogateescape") as fh:
            for line in fh:
                p = line.rstrip("\n").lstrip("/")
                if not p or p == ".":
                    continue
                p = in_root(root, p)
                try:
                    st = os.lstat(os.path.join(root, p))
                except FileNotFoundError:
                    continue
                if stat.S_ISDIR(st.st_mode) or os.path.isdir(os.path.join(root, p)):
                    # A directory, or a link to one (/lib -> usr/lib): stays in the base.
                    dir_layers.setdefault(p, set()).add(li)
                elif p not in owner:
                    owner[p] = li
    # Files no package lists: the layer of their nearest listed directory, if only one
    # layer's packages list it.
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root)
        rel = "" if rel == "." else rel
        if rel == "var/lib/dpkg":
            continue  # dpkg's own database stays in the base layer
        for fn in files:
            p = os.path.join(rel, fn)
            if p in owner:
                continue
            d = rel
            while d and d not in dir_layers:
                d = os.path.dirname(d)
            ls = dir_layers.get(d, {-1})
            owner[p] = next(iter(ls)) if len(ls) == 1 else -1
    made = set()
    times = {}  # directory -> its times before anything moved out of it

    def parents(li, p):
        """The parent directories of p in layer li, with ROOTFS's modes."""
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if (li, d) in made:
                continue
            dst = os.path.join(outdir, layers[li][0], d)
            src_st = os.lstat(os.path.join(root, d))
            times.setdefault(d, (src_st.st_atime_ns, src_st.st_mtime_ns))
            os.makedirs(dst, exist_ok=True)
            os.chmod(dst, stat.S_IMODE(src_st.st_mode))
            os.chown(dst, src_st.st_uid, src_st.st_gid)
            made.add((li, d))

    counts = [[0, 0] for _ in layers]
    for p, li in sorted(owner.items()):
        if li < 0:
            continue
        parents(li, p)
        src = os.path.join(root, p)
        st = os.lstat(src)
        os.rename(src, os.path.join(outdir, layers[li][0], p))
        counts[li][0] += 1
        counts[li][1] += st.st_size if stat.S_ISREG(st.st_mode) else 0
    # Directories' times as they were (moving their children changed them).
    for li, d in made:
        os.utime(os.path.join(outdir, layers[li][0], d), ns=times[d])
    for d, t in times.items():
        os.utime(os.path.join(root, d), ns=t)
    for (name, mine), (n, size) in zip(layers, counts):
        print(f"layer {name}: {len(mine)} packages, {n} files, {size // (1 << 20)} MiB")


if __name__ == "__main__":
    sys.exit(main())
