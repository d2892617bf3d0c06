/* image.c - image kinds: detection from the bytes, and the unpack dispatch (see image.h). */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unpack/sif.h"
#include "unpack/spawn.h"
#include "unpack/unpack.h"
#include "util.h"

const char *image_kind_name(enum image_kind k)
{
	switch (k) {
	case IMAGE_SQUASHFS:
		return "squashfs";
	case IMAGE_SIF:
		return "sif";
	case IMAGE_DOCKER_ARCHIVE:
		return "docker-archive";
	case IMAGE_OCI_ARCHIVE:
		return "oci-archive";
	case IMAGE_DIR:
		return "dir";
	case IMAGE_UNKNOWN:
	case IMAGE_KINDS: /* the count, no kind */
		break;
	}
	return "unknown";
}

int image_detect(const char *path, enum image_kind *kind, struct err *e)
{
	unsigned char head[64] = { 0 };
	struct stat st;
	ssize_t n;
	int fd;

	*kind = IMAGE_UNKNOWN;
	if (stat(path, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "image %s", path);
	if (S_ISDIR(st.st_mode)) {
		*kind = IMAGE_DIR;
		return 0;
	}
	/* open_regular: a FIFO swapped in after the stat cannot stall the open. */
	fd = open_regular(path, O_RDONLY, NULL);
	if (fd < 0 && errno == EINVAL)
		return err_set(e, EXIT_CTRUN, "image %s: not a regular file or directory", path);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image %s", path);
	n = pread(fd, head, sizeof(head), 0);
	close(fd);
	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "image %s", path);
	if (n >= 4 && memcmp(head, "hsqs", 4) == 0)
		*kind = IMAGE_SQUASHFS;
	else if (n >= 42 && memcmp(head + 32, SIF_MAGIC, sizeof(SIF_MAGIC)) == 0)
		*kind = IMAGE_SIF;
	else if (archive_detect(path, kind, e) < 0)
		return -1;
	if (*kind == IMAGE_UNKNOWN)
		return err_set(e, EXIT_CTRUN, "image %s: unknown format (expected a squashfs, a "
			       "SIF, a docker or OCI archive, or a directory)", path);
	return 0;
}

/* A rootfs directory is copied with cp -a (reflinks where the file system has them). */
static int dir_copy(const char *src, const char *dest, struct err *e)
{
	char from[4096];
	size_t len = strlen(src);

	if (len + 3 > sizeof(from))
		return err_set(e, EXIT_CTRUN, "image %s: path too long", src);
	memcpy(from, src, len);
	memcpy(from + len, "/.", 3);
	return spawn_wait((char *[]){ "cp", "-a", "--reflink=auto", "--", from, (char *)dest,
				      NULL }, false, NULL, e);
}

static int unpack(const char *path, enum image_kind kind, const char *dest, bool progress,
		  unsigned long long max, struct err *e)
{
	switch (kind) {
	case IMAGE_SQUASHFS:
		return squashfs_unpack(path, 0, 0, dest, progress, e);
	case IMAGE_SIF:
		return sif_unpack(path, dest, progress, e);
	case IMAGE_DOCKER_ARCHIVE:
	case IMAGE_OCI_ARCHIVE:
		return archive_unpack(path, kind, dest, progress, max, e);
	case IMAGE_DIR:
		return dir_copy(path, dest, e);
	case IMAGE_UNKNOWN:
	case IMAGE_KINDS: /* the count, no kind */
		break;
	}
	return err_set(e, EXIT_CTRUN, "image %s: unknown format", path);
}

int image_unpack_progress(const char *path, enum image_kind kind, const char *dest,
			  bool progress, unsigned long long max, struct err *e)
{
	if (unpack(path, kind, dest, progress, max, e) < 0)
		return -1;
	/* No device node, setuid or setgid file from an image, whoever unpacks. */
	return image_sanitize(dest, e) < 0 ? err_wrap(e, "image %s", path) : 0;
}

int image_unpack(const char *path, enum image_kind kind, const char *dest, struct err *e)
{
	return image_unpack_progress(path, kind, dest, false, 0, e);
}
