/* envfile.h - an image's /etc/environment: the KEY=VALUE lines that enroot
 * and ctrun's unpacker write for a Docker image's ENV (enroot's
 * convention), read by the OCI adapter on the host and by the agent inside
 * an apptainer container.
 *
 * Folder core/: no dependencies. */
#ifndef CTRUN_ENVFILE_H
#define CTRUN_ENVFILE_H

#include "strv.h"

#define ENVFILE_MAX (1u << 20) /* bytes of an environment file that are read */

/* Sets each "KEY=VALUE" line of text over env: blank lines and '#'
 * comments skipped, an "export " prefix dropped, KEY a shell name (others
 * skipped), trailing blanks and one pair of surrounding quotes stripped
 * from VALUE.  text is modified.  -1 on ENOMEM. */
int envfile_parse(char *text, struct strv *env);

#endif
