/* ref.h - image references: `docker://[USER@][HOST[:PORT]/]REPO[:TAG][@sha256:DIGEST]`
 * and enroot/pyxis's `[docker://][USER@][HOST#]REPO[:TAG][@sha256:DIGEST]`
 * (enroot takes USER@ and a digest in both forms).
 *
 * Docker Hub's defaults apply: no host is docker.io, a one-component repo
 * on docker.io is library/REPO, no tag and no digest is :latest; its other
 * names, index.docker.io (docker) and registry-1.docker.io (enroot), are
 * written docker.io.  A first component is a host only when it holds a '.'
 * or a ':' or is "localhost" (docker's rule); with '#' everything before it
 * is the host.  USER@ is an '@' before any '/' or '#' that does not start a
 * digest.
 *
 * Folder registry/: references, credentials, the distribution protocol
 * (HTTP through libcurl, loaded at run time), manifests, the blob cache and
 * the digest-keyed image store.  May use: images/, core/ (the GNUmakefile's
 * include paths enforce it); images/ knows nothing of the network.
 */
#ifndef CTRUN_REF_H
#define CTRUN_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct image_ref {
	char host[256];  /* as users name it: "docker.io", "nvcr.io", "reg:5000", "[::1]:5000" */
	char repo[256];  /* "library/ubuntu", "nvidia/pytorch" */
	char tag[129];   /* "latest" when neither tag nor digest given; "" with a digest alone */
	char digest[80]; /* "sha256:<64 lowercase hex>" or "" */
	char user[128];  /* enroot's USER@ (the credentials entry to use), or "" */
};

/* Pure: true when s is written as a reference: it starts with docker://,
 * or it holds a '#' (enroot/pyxis's HOST#REPO), and it does not start with
 * '/' or '.'.  Such a string is always a reference, whatever the working
 * directory holds: docker://reg/app is also the relative path
 * docker:/reg/app, which another user may have planted; a file of such a
 * name is reached as ./docker:... .  Nothing else is ever guessed to be
 * one. */
bool ref_is_reference(const char *s);

/* Pure: parses s (with or without docker://) into r.  Errors (EXIT_USAGE)
 * say what is wrong and how a reference is written: an empty repo, upper
 * case in the repo, a tag or repo with characters the distribution spec
 * does not allow, a digest that is not sha256:<64 hex>, a bad port. */
int ref_parse(const char *s, struct image_ref *r, struct err *e);

/* Pure: whether the len bytes at host name Docker Hub: docker.io,
 * index.docker.io or registry-1.docker.io, in any case. */
bool ref_is_docker_hub(const char *host, size_t len);

/* Pure: the host to talk HTTP to: registry-1.docker.io for docker.io,
 * else r->host. */
const char *ref_api_host(const struct image_ref *r);

/* Pure: "HOST/REPO:TAG", "HOST/REPO@DIGEST" or "HOST/REPO:TAG@DIGEST" into
 * buf ("HOST#REPO..." where docker's rule would not read HOST as a host: a
 * bare name from enroot's form), so that the text parses back to the same
 * host, repo, tag and digest; USER@ is not written.  -1 if it does not fit. */
int ref_format(const struct image_ref *r, char *buf, size_t size);

#endif
