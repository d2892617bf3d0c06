#!/usr/bin/env python3
"""apt_mirror.py - the Debian mirror this machine's apt uses, for build.sh.

A site with a local mirror (no way out to deb.debian.org) has it in its apt
sources; debootstrap of the test image must use the same one.  Reads the
one-line format (sources.list, sources.list.d/*.list:
`deb [arch=amd64 signed-by=...] URI SUITE COMPONENT...`) and the deb822
format (sources.list.d/*.sources: Types:, URIs:, Suites:, Components:,
Enabled:), in apt's order: the list file, then the parts sorted by name.

An entry is a candidate when it is `deb`, has component main and a URI
debootstrap can fetch from (http, https, ftp, file).  The chosen URI is,
in this order:
  1. the first whose Release file in apt's lists (what `apt-get update`
     fetched) says Origin: Debian and Codename: SUITE: Debian's main archive
     of that release, whatever the entry calls the suite (bookworm, stable,
     oldstable), and never -security or -updates (their codenames differ);
  2. the first whose suite is SUITE itself (lists not fetched yet).
Nothing found: exit 1, print nothing (build.sh falls back to its default).

usage: apt_mirror.py [--list FILE] [--parts DIR] [--lists DIR] SUITE
  (by default where apt-config says apt keeps them: Dir::Etc, APT_CONFIG)
prints: URI<TAB>FILE (the sources file it came from)
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

SCHEMES = ("http://", "https://", "ftp://", "file:")
# apt's URItoFileName: these characters (and controls, space, non-ASCII)
# become %xx before '/' becomes '_'.
QUOTED = set('\\|{}[]<>"^~_=!@#$%^&*')


def one_line_entries(text):
    """(types, uris, suites, components) of each line of a .list file."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^(deb|deb-src)\s+(?:\[[^\]]*\]\s*)?(\S+)\s+(\S+)\s*(.*)$", line)
        if m:
            yield [m.group(1)], [m.group(2)], [m.group(3)], m.group(4).split()


def deb822_entries(text):
    """(types, uris, suites, components) of each enabled stanza of a .sources file."""
    stanzas, fields, key = [], {}, None
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, key = {}, None
        elif line[0] in " \t" and key:  # a folded continuation of the field above
            fields[key] += " " + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            fields[key] = value.strip()
    for f in stanzas:
        if f.get("enabled", "yes").lower() == "no":
            continue
        yield (f.get("types", "").split(), f.get("uris", "").split(),
               f.get("suites", "").split(), f.get("components", "").split())


def uri_to_filename(uri):
    """The name apt gives what it fetched from URI in its lists directory."""
    rest = re.sub(r"^[a-z0-9+.-]+:(//)?", "", uri)
    rest = re.sub(r"^[^/@]*@", "", rest)  # user:password@
    out = "".join("%%%02x" % ord(c) if c in QUOTED or ord(c) <= 0x20 or ord(c) >= 0x7F
                  else c for c in rest)
    return out.replace("/", "_")


def release_says(lists, uri, suite):
    """Origin and Codename of the Release file apt fetched for URI SUITE."""
    base = uri_to_filename(uri.rstrip("/") + "/dists/" + suite + "/")
    for name in ("InRelease", "Release"):
        try:
            with open(os.path.join(lists, base + name), errors="replace") as f:
                head = f.read(8192)
        except OSError:
            continue
        info = dict(re.findall(r"^(Origin|Codename):[ \t]*(\S+)", head, re.M))
        return info.get("Origin"), info.get("Codename")
    return None, None


def candidates(list_file, parts_dir):
    """(uri, suite, file) of every deb entry with main, in apt's order."""
    files = [list_file] if list_file else []
    try:
        files += [os.path.join(parts_dir, n) for n in sorted(os.listdir(parts_dir))
                  if n.endswith((".list", ".sources"))]
    except OSError:
        pass
    for path in files:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        parse = deb822_entries if path.endswith(".sources") else one_line_entries
        for types, uris, suites, comps in parse(text):
            if "deb" not in types or "main" not in comps:
                continue
            for uri in uris:
                if uri.startswith(SCHEMES):
                    for s in suites:
                        yield uri.rstrip("/"), s, path


def choose(entries, suite, lists):
    """The URI and file of Debian's main archive of SUITE among entries, or None."""
    entries = list(entries)
    for uri, s, path in entries:
        if lists and release_says(lists, uri, s) == ("Debian", suite):
            return uri, path
    for uri, s, path in entries:
        if s == suite:
            return uri, path
    return None


def apt_dirs():
    """Where this machine's apt keeps its sources and lists: apt-config's
    answer, so a moved Dir::Etc or an APT_CONFIG is honoured."""
    dirs = {"list": "/etc/apt/sources.list", "parts": "/etc/apt/sources.list.d",
            "lists": "/var/lib/apt/lists"}
    keys = {"list": "Dir::Etc::sourcelist/f", "parts": "Dir::Etc::sourceparts/d",
            "lists": "Dir::State::lists/d"}
    argv = ["apt-config", "shell"]
    for name, key in keys.items():
        argv += [name, key]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return dirs
    for line in out.splitlines():
        name, _, value = line.partition("=")
        if name in dirs and value:
            dirs[name] = shlex.split(value)[0]
    return dirs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list")
    ap.add_argument("--parts")
    ap.add_argument("--lists")
    ap.add_argument("suite")
    a = ap.parse_args()
    if not (a.list and a.parts and a.lists):
        dirs = apt_dirs()
        a.list, a.parts, a.lists = (a.list or dirs["list"], a.parts or dirs["parts"],
                                    a.lists or dirs["lists"])
    found = choose(candidates(a.list, a.parts), a.suite, a.lists)
    if not found:
        return 1
    print("%s\t%s" % found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
