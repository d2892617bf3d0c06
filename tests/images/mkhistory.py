#!/usr/bin/env python3
"""mkhistory.py - gives an image archive's config what `docker build` writes.

  mkhistory.py IN.tar OUT.tar     IN: a `docker save` archive or an OCI layout
                                  (of one image manifest), as mkdocker.py writes them

mkdocker.py writes the config fields a runtime reads (Env, Cmd, WorkingDir,
rootfs).  Images from `docker build` also carry a created time, docker_version,
container_config, the whole config block, and one `history` entry per layer,
and some tools need them: distribution 2.8 answers a client that accepts only
manifest lists (`enroot import docker://` asks that way first) by converting
the image's manifest to schema 1, which it builds from the history, and
refuses with 400 Bad Request when there is none.  The registry set
(build.sh registry) passes its archives through this before pushing them
(the OCI one too: its config stays the docker one's blob); the layers are
copied byte for byte, only the config (and so its digest, manifest.json or
the OCI manifest and index.json) changes.  The time is fixed: the same input gives the same
bytes at every build.
"""
import hashlib
import io
import json
import os
import sys
import tarfile

CREATED = "2024-01-01T00:00:00Z"


def built(cfg, nlayers):
    """cfg (the parsed config) with the fields `docker build` writes added;
    what it has already wins."""
    run = {"Hostname": "", "Domainname": "", "User": "", "AttachStdin": False,
           "AttachStdout": False, "AttachStderr": False, "Tty": False, "OpenStdin": False,
           "StdinOnce": False, "Env": None, "Cmd": None, "Image": "", "Volumes": None,
           "WorkingDir": "", "Entrypoint": None, "OnBuild": None, "Labels": None}
    run.update(cfg.get("config") or {})
    out = dict(cfg)
    out["config"] = run
    out.setdefault("created", CREATED)
    out.setdefault("docker_version", "20.10.24")
    out.setdefault("container", "")
    out.setdefault("container_config", dict(run, Cmd=["/bin/sh", "-c", "#(nop) ADD layers"]))
    if not out.get("history"):
        out["history"] = [{"created": CREATED,
                           "created_by": f"/bin/sh -c #(nop) ADD file:layer{i + 1} in / "}
                          for i in range(nlayers)]
    return json.dumps(out, sort_keys=True).encode()


def add_bytes(t, like, name, data):
    ti = tarfile.TarInfo(name)
    ti.uid, ti.gid, ti.uname, ti.gname = like.uid, like.gid, like.uname, like.gname
    ti.mode, ti.mtime, ti.size = 0o644, like.mtime, len(data)
    t.addfile(ti, io.BytesIO(data))


def ndiff_ids(src, cfg, nlayers):
    n = len(cfg.get("rootfs", {}).get("diff_ids", []))
    if n != nlayers:
        sys.exit(f"mkhistory.py: {src}: {n} diff_ids for {nlayers} layers")
    return n


def docker(src, t):
    """The members of a `docker save` archive to replace: {name: (new name, bytes)}."""
    manifest = json.load(t.extractfile(t.getmember("manifest.json")))
    if len(manifest) != 1:
        sys.exit(f"mkhistory.py: {src}: {len(manifest)} images, one expected")
    old = manifest[0]["Config"]
    cfg = json.load(t.extractfile(t.getmember(old)))
    new_cfg = built(cfg, ndiff_ids(src, cfg, len(manifest[0]["Layers"])))
    manifest[0]["Config"] = hashlib.sha256(new_cfg).hexdigest() + ".json"
    return {old: (manifest[0]["Config"], new_cfg),
            "manifest.json": ("manifest.json", json.dumps(manifest).encode())}


def oci(src, t):
    """The same for an OCI image layout of one image manifest: its config,
    manifest and index.json (the config as in the docker archive made from
    the same layers, so the two still share their config blob)."""
    def blob(digest):
        return "blobs/sha256/" + digest.split(":", 1)[1]

    def sha(data):
        return "sha256:" + hashlib.sha256(data).hexdigest()

    index = json.load(t.extractfile(t.getmember("index.json")))
    if len(index["manifests"]) != 1:
        sys.exit(f"mkhistory.py: {src}: {len(index['manifests'])} manifests, one expected")
    old_man = index["manifests"][0]["digest"]
    man = json.load(t.extractfile(t.getmember(blob(old_man))))
    old_cfg = man["config"]["digest"]
    cfg = json.load(t.extractfile(t.getmember(blob(old_cfg))))
    new_cfg = built(cfg, ndiff_ids(src, cfg, len(man["layers"])))
    man["config"]["digest"], man["config"]["size"] = sha(new_cfg), len(new_cfg)
    new_man = json.dumps(man).encode()
    index["manifests"][0]["digest"], index["manifests"][0]["size"] = sha(new_man), len(new_man)
    return {blob(old_cfg): (blob(sha(new_cfg)), new_cfg),
            blob(old_man): (blob(sha(new_man)), new_man),
            "index.json": ("index.json", json.dumps(index).encode())}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mkhistory.py IN.tar OUT.tar")
    src, dst = sys.argv[1:]
    tmp = dst + ".tmp"
    with tarfile.open(src, "r:") as t:
        names = t.getnames()
        repl = oci(src, t) if "oci-layout" in names else docker(src, t)
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as o:
            for m in t:
                if m.name in repl:
                    add_bytes(o, m, *repl[m.name])
                else:
                    o.addfile(m, t.extractfile(m) if m.isreg() else None)
    os.rename(tmp, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
