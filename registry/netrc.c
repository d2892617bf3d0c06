/* netrc.c - enroot's .credentials, a netrc file, read as curl --netrc-file
 * and enroot's docker.sh read it (see creds.h: creds_netrc): `machine HOST
 * login USER password PASS` entries over one or more lines, "quoted" words,
 * # comments and macdef; a password written $VAR or ${VAR} is taken from
 * the environment, never through a shell. */
#include "creds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "strv.h"
#include "util.h"

struct netrc {
	const char *p, *file;
	size_t line;
	struct err *e;
	char tok[sizeof(((struct cred *)0)->pass)];
	bool quoted;
};

static int netrc_bad(struct netrc *n, const char *why, const char *what)
{
	return err_set(n->e, EXIT_USAGE, "%s line %zu: %s%s (enroot's .credentials lines are "
		       "'machine HOST login USER password PASS')", n->file, n->line, why, what);
}

/* Skips blanks, newlines (counted) and, where a keyword is due, # comments. */
static void netrc_skip(struct netrc *n, bool comments)
{
	for (;;) {
		n->p += strspn(n->p, " \t\r\f\v");
		if (*n->p == '\n') {
			n->line++;
			n->p++;
		} else if (comments && *n->p == '#') {
			n->p += strcspn(n->p, "\n");
		} else {
			return;
		}
	}
}

/* The next word into n->tok ("quoted" with \ escapes, as curl reads them);
 * 0 at the end of the text. */
static int netrc_word(struct netrc *n, bool keyword)
{
	size_t len = 0;

	netrc_skip(n, keyword);
	n->quoted = *n->p == '"';
	if (*n->p == '\0')
		return 0;
	if (n->quoted)
		n->p++;
	while (*n->p != '\0') {
		char ch = *n->p;

		if (n->quoted ? ch == '"' : strchr(" \t\r\n\f\v", ch) != NULL)
			break;
		if (n->quoted && ch == '\n')
			return netrc_bad(n, "a quoted word runs past the end of the line", "");
		if (n->quoted && ch == '\\' && n->p[1] != '\0')
			ch = *++n->p;
		if (len + 1 >= sizeof(n->tok))
			return netrc_bad(n, "a word is too long", "");
		n->tok[len++] = ch;
		n->p++;
	}
	if (n->quoted) {
		if (*n->p != '"')
			return netrc_bad(n, "a quoted word has no closing '\"'", "");
		n->p++;
	}
	n->tok[len] = '\0';
	return 1;
}

/* The word after keyword key: -1 (e set) at the end of the text. */
static int netrc_value(struct netrc *n, const char *key)
{
	int r = netrc_word(n, false);

	if (r == 0)
		return netrc_bad(n, key, " without its value");
	return r < 0 ? -1 : 0;
}

/* A value written $NAME or ${NAME}: NAME into name, else false. */
static bool var_name(const char *v, char *name, size_t size)
{
	size_t n;

	if (v[0] != '$')
		return false;
	v += v[1] == '{' ? 2 : 1;
	n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	if (n == 0 || (v[0] >= '0' && v[0] <= '9') || n >= size ||
	    strcmp(v + n, v[-1] == '{' ? "}" : "") != 0)
		return false;
	memcpy(name, v, n);
	name[n] = '\0';
	return true;
}

/* One entry as read: machine (or default), login, password. */
struct netrc_entry {
	bool used, matches, is_default, has_login, has_pass, pass_runs;
	size_t line;
	char machine[256], login[sizeof(((struct cred *)0)->user)],
		pass[sizeof(((struct cred *)0)->pass)];
};

/* The entry's credentials into c: 1, or -1 when the entry cannot give them. */
static int netrc_take(struct netrc *n, const struct netrc_entry *en, char *const *envp,
		      struct cred *c)
{
	char name[128];
	const char *v;

	n->line = en->line;
	if (!en->has_login || !en->has_pass)
		return netrc_bad(n, en->has_login ? "no password for machine " : "no login for machine ",
				 en->machine);
	if (en->pass_runs)
		return err_set(n->e, EXIT_USAGE, "%s line %zu: the password of %s runs a command, "
			       "which ctrun does not do (it reads credentials as data): write the "
			       "value, or $VARIABLE", n->file, en->line, en->machine);
	/* nvcr.io's login is the literal "$oauthtoken": a login is a variable's
	 * value only where that variable is set. */
	v = var_name(en->login, name, sizeof(name)) ? envp_get(envp, name) : NULL;
	if (creds_copy_value(c->user, sizeof(c->user), v != NULL ? v : en->login,
			     strlen(v != NULL ? v : en->login)) < 0)
		return netrc_bad(n, "the login's value is too long", "");
	v = en->pass;
	if (var_name(en->pass, name, sizeof(name)) && (v = envp_get(envp, name)) == NULL)
		return err_set(n->e, EXIT_USAGE, "%s line %zu: the password of %s is $%s, which is "
			       "not set", n->file, en->line, en->machine, name);
	if (creds_copy_value(c->pass, sizeof(c->pass), v, strlen(v)) < 0)
		return netrc_bad(n, "the password's value is too long", "");
	if (xsnprintf(c->source, sizeof(c->source), "%s (machine %s, line %zu)", n->file,
		      en->machine, en->line) < 0)
		snprintf(c->source, sizeof(c->source), "%s", "(a file with a long name)");
	c->found = true;
	return 1;
}

/* Does machine name host?  Also without host's :PORT, as curl and enroot
 * match (curl looks up the URL's host name; enroot greps ${registry%:*}). */
static bool netrc_matches(const char *machine, const char *host)
{
	const char *colon = strrchr(host, ':');
	size_t n = strlen(machine);

	if (creds_same_host(machine, n, host))
		return true;
	return colon != NULL && host[0] != '[' && (size_t)(colon - host) == n &&
	       strncasecmp(machine, host, n) == 0;
}

/* The keywords of a .netrc, as curl and enroot read them. */
enum netrc_key { NETRC_MACHINE, NETRC_DEFAULT, NETRC_LOGIN, NETRC_PASSWORD, NETRC_ACCOUNT,
		 NETRC_PORT, NETRC_MACDEF };
static const struct {
	const char *word;
	enum netrc_key key;
} netrc_keys[] = {
	{ "machine", NETRC_MACHINE }, { "default", NETRC_DEFAULT }, { "login", NETRC_LOGIN },
	{ "password", NETRC_PASSWORD }, { "account", NETRC_ACCOUNT }, { "port", NETRC_PORT },
	{ "macdef", NETRC_MACDEF },
};

/* The keyword `word`: 0, or -1 (e set) when it is none. */
static int netrc_keyword(struct netrc *n, const char *word, enum netrc_key *key)
{
	for (size_t i = 0; i < sizeof(netrc_keys) / sizeof(*netrc_keys); i++)
		if (strcmp(word, netrc_keys[i].word) == 0) {
			*key = netrc_keys[i].key;
			return 0;
		}
	return netrc_bad(n, "unexpected word ", word);
}

/* machine NAME, or default: a new entry. */
static int netrc_entry_start(struct netrc *n, enum netrc_key key, size_t line, const char *host,
			     struct netrc_entry *en)
{
	memset(en, 0, sizeof(*en));
	en->used = true;
	en->line = line;
	en->is_default = key == NETRC_DEFAULT;
	if (en->is_default)
		return 0;
	if (netrc_value(n, "machine") < 0)
		return -1;
	if (creds_copy_value(en->machine, sizeof(en->machine), n->tok, strlen(n->tok)) < 0)
		return netrc_bad(n, "a machine name is too long", "");
	en->matches = netrc_matches(en->machine, host);
	return 0;
}

/* login, password, account or port VALUE of the current entry. */
static int netrc_field(struct netrc *n, enum netrc_key key, const char *word,
		       struct netrc_entry *en)
{
	bool runs;

	if (!en->used)
		return netrc_bad(n, word, " before any machine");
	if (netrc_value(n, word) < 0)
		return -1;
	/* enroot hands a password to the shell: $(...) or `...` runs a
	 * command, to the end of the line. */
	runs = key == NETRC_PASSWORD && !n->quoted &&
	       (strncmp(n->tok, "$(", 2) == 0 || n->tok[0] == '`');
	if (runs)
		n->p += strcspn(n->p, "\n");
	if (key == NETRC_LOGIN) {
		en->has_login = true;
		if (creds_copy_value(en->login, sizeof(en->login), n->tok, strlen(n->tok)) < 0)
			return netrc_bad(n, "a login is too long", "");
	} else if (key == NETRC_PASSWORD) {
		en->has_pass = true;
		en->pass_runs = runs;
		memcpy(en->pass, n->tok, strlen(n->tok) + 1);
	}
	return 0;
}

/* macdef NAME: the macro's lines, up to an empty one. */
static void netrc_macdef(struct netrc *n)
{
	n->p += strcspn(n->p, "\n");
	while (*n->p == '\n' && n->p[1] != '\n' && n->p[1] != '\0') {
		n->line++;
		n->p++;
		n->p += strcspn(n->p, "\n");
	}
}

int creds_netrc_user(const char *text, const char *file, const char *host, const char *user,
		     char *const *envp, struct cred *c, struct err *e)
{
	struct netrc *n = calloc(1, sizeof(*n));
	struct netrc_entry *en = calloc(1, sizeof(*en));
	int rv = -1, r;

	memset(c, 0, sizeof(*c));
	if (n == NULL || en == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", file);
		goto out;
	}
	*n = (struct netrc){ .p = text, .file = file, .line = 1, .e = e };
	for (;;) {
		char word[16];
		enum netrc_key key = NETRC_MACDEF;
		size_t keyline;

		r = netrc_word(n, true);
		if (r < 0)
			goto out;
		keyline = n->line;
		snprintf(word, sizeof(word), "%s", n->tok);
		if (r > 0 && netrc_keyword(n, word, &key) < 0)
			goto out;
		/* An entry ends where the next begins, or at the end. */
		if (en->used && en->matches &&
		    (r == 0 || key == NETRC_MACHINE || key == NETRC_DEFAULT) &&
		    (user[0] == '\0' || strcmp(en->login, user) == 0)) {
			rv = netrc_take(n, en, envp, c);
			goto out;
		}
		if (r == 0)
			break;
		switch (key) {
		case NETRC_MACHINE:
		case NETRC_DEFAULT:
			r = netrc_entry_start(n, key, keyline, host, en);
			break;
		case NETRC_LOGIN:
		case NETRC_PASSWORD:
		case NETRC_ACCOUNT:
		case NETRC_PORT:
			r = netrc_field(n, key, word, en);
			break;
		case NETRC_MACDEF:
			netrc_macdef(n);
			break;
		}
		if (r < 0)
			goto out;
	}
	rv = 0;
out:
	/* They held passwords. */
	if (n != NULL)
		explicit_bzero(n, sizeof(*n));
	if (en != NULL)
		explicit_bzero(en, sizeof(*en));
	free(n);
	free(en);
	return rv;
}

int creds_netrc(const char *text, const char *file, const char *host, char *const *envp,
		struct cred *c, struct err *e)
{
	return creds_netrc_user(text, file, host, "", envp, c, e);
}
