#!/usr/bin/env python3
"""addlayer.py BASE OUT TREE: an OCI image layout OUT that is the image of
the OCI layout BASE (its only manifest) plus one gzip layer made of the
directory TREE (its files as they are: a file named .wh.NAME is a whiteout,
.wh..wh..opq an opaque marker), as `docker build` adds a layer: the
config's rootfs.diff_ids and history get one entry each.  OUT's blobs are
hard links to BASE's where they can be.  Used by the layer-reuse test and
benchmark (issue 32, point 3)."""
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile


def blob(out, data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return "sha256:" + d


def read(base, digest):
    with open(os.path.join(base, "blobs", "sha256", digest.split(":", 1)[1]), "rb") as f:
        return f.read()


def layer_tar(tree):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for top, dirs, files in os.walk(tree):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(top, name)
                info = t.gettarinfo(path, os.path.relpath(path, tree))
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                info.mtime = 1700000000
                if info.isreg():
                    with open(path, "rb") as f:
                        t.addfile(info, f)
                else:
                    t.addfile(info)
    return raw.getvalue()


def main():
    base, out, tree = sys.argv[1:4]
    index = json.loads(open(os.path.join(base, "index.json")).read())
    mdesc = index["manifests"][0]
    manifest = json.loads(read(base, mdesc["digest"]))
    config = json.loads(read(base, manifest["config"]["digest"]))
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    for name in os.listdir(os.path.join(base, "blobs", "sha256")):
        src = os.path.join(base, "blobs", "sha256", name)
        dst = os.path.join(out, "blobs", "sha256", name)
        if not os.path.exists(dst):
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    shutil.copyfile(os.path.join(base, "oci-layout"), os.path.join(out, "oci-layout"))
    tar = layer_tar(tree)
    gz = gzip.compress(tar, compresslevel=6, mtime=0)
    ldigest = blob(out, gz)
    config.setdefault("rootfs", {"type": "layers", "diff_ids": []})
    config["rootfs"]["diff_ids"].append("sha256:" + hashlib.sha256(tar).hexdigest())
    config.setdefault("history", []).append(
        {"created": "2026-11-27T00:00:00Z", "created_by": "addlayer.py " + os.path.basename(tree)})
    cdata = json.dumps(config).encode()
    manifest["config"] = {"mediaType": manifest["config"]["mediaType"],
                          "digest": blob(out, cdata), "size": len(cdata)}
    manifest["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                               "digest": ldigest, "size": len(gz)})
    mdata = json.dumps(manifest).encode()
    index["manifests"] = [{"mediaType": mdesc["mediaType"], "digest": blob(out, mdata),
                           "size": len(mdata)}]
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)


if __name__ == "__main__":
    main()
