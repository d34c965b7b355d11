// capture_race: a hostile confined process racing change capture.
//
//   capture_race CLASS ATTACK WS HARMLESS TRIES
//
// One thread makes the call CLASS (open, truncate, chmod, unlink, rename,
// mkdir, symlink, creat, link) on a path that names HARMLESS/victim (a
// directory outside the workspace; "-": the command's TMPDIR, "-DIR":
// DIR, where the program makes victim, as WS/victim exists, and src
// itself) while a second thread makes the same path name WS/victim:
//
//   buf: the path buffer itself is rewritten between the two names (both
//        padded with slashes to the same length, so every read is one or
//        the other or a torn mix that names nothing);
//   cwd: the path is "victim", relative, and the second thread moves the
//        process's working directory between HARMLESS and WS (chdir is
//        not a captured call);
//   link: the path is HARMLESS/dl/victim, and the second thread swaps the
//        symlink dl (renaming a fresh link over it) between HARMLESS and
//        WS.
//
// After each call the first thread looks at WS/victim; as soon as it has
// changed it prints "hit N" (N: tries made) and exits; after TRIES calls
// without a change it prints "miss". A hit whose change the capture hook
// never heard of is an unrecorded workspace change.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char buf[4096];
static char pa[4096], pb[4096]; // harmless, workspace: same length
static const char *ws, *harmless;
static atomic_int stop;
static int attack_cwd, attack_link;
static char dl[4096], tmpl[4096];

static void *flipper(void *arg) {
	(void)arg;
	size_t n = strlen(pa) + 1;
	while (!atomic_load(&stop)) {
		if (attack_link) {
			unlink(tmpl);
			if (symlink(ws, tmpl) != 0 || rename(tmpl, dl) != 0 ||
			    symlink(harmless, tmpl) != 0 || rename(tmpl, dl) != 0) {
				perror("swap");
				exit(2);
			}
		} else if (attack_cwd) {
			if (chdir(harmless) != 0 || chdir(ws) != 0) {
				perror("chdir");
				exit(2);
			}
		} else {
			memcpy(buf, pb, n);
			memcpy(buf, pa, n);
		}
	}
	return NULL;
}

// pad writes s into out, with extra slashes after the first so that it is
// len bytes long.
static void pad(char *out, const char *s, size_t len) {
	size_t sl = strlen(s);
	out[0] = '/';
	memset(out + 1, '/', len - sl);
	memcpy(out + 1 + (len - sl), s + 1, sl);
	out[len] = 0;
}

// put makes the file p hold s (mode 0644).
static int put(const char *p, const char *s) {
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: capture_race CLASS ATTACK WS HARMLESS TRIES\n");
		return 2;
	}
	const char *class = argv[1];
	attack_cwd = strcmp(argv[2], "cwd") == 0;
	attack_link = strcmp(argv[2], "link") == 0;
	ws = argv[3];
	harmless = argv[4];
	int own = harmless[0] == '-';
	if (own && (harmless = harmless[1] ? harmless + 1 : getenv("TMPDIR")) == NULL) {
		fprintf(stderr, "no TMPDIR\n");
		return 2;
	}
	long tries = atol(argv[5]);
	char wv[4096], hv[4096], hsrc[4096], moved[4096];
	snprintf(wv, sizeof wv, "%s/victim", ws);
	snprintf(hv, sizeof hv, "%s/victim", harmless);
	snprintf(hsrc, sizeof hsrc, "%s/src", harmless);
	snprintf(moved, sizeof moved, "%s/moved", harmless);
	if (own) {
		struct stat w;
		if ((lstat(wv, &w) == 0 && put(hv, "HARMLESS") != 0) || put(hsrc, "SRC") != 0) {
			perror("setup");
			return 2;
		}
	}
	size_t len = strlen(wv) > strlen(hv) ? strlen(wv) : strlen(hv);
	pad(pa, hv, len);
	pad(pb, wv, len);
	const char *path = buf;
	static char lpath[4096];
	snprintf(dl, sizeof dl, "%s/dl", harmless);
	snprintf(tmpl, sizeof tmpl, "%s/dl.new", harmless);
	snprintf(lpath, sizeof lpath, "%s/victim", dl);
	if (attack_link) {
		path = lpath;
		unlink(dl);
		if (symlink(harmless, dl) != 0) {
			perror("symlink");
			return 2;
		}
	} else if (attack_cwd) {
		path = "victim";
		if (chdir(harmless) != 0) {
			perror("chdir");
			return 2;
		}
	} else {
		memcpy(buf, pa, len + 1);
	}
	struct stat before;
	int existed = lstat(wv, &before) == 0;
	pthread_t t;
	pthread_create(&t, NULL, flipper, NULL);
	for (long i = 1; i <= tries; i++) {
		int r = 0, fd;
		if (!strcmp(class, "open")) {
			if ((fd = open(path, O_WRONLY | O_TRUNC)) >= 0)
				close(fd);
		} else if (!strcmp(class, "truncate")) {
			r = truncate(path, 0);
		} else if (!strcmp(class, "chmod")) {
			r = chmod(path, 0600);
		} else if (!strcmp(class, "unlink") || !strcmp(class, "rename")) {
			r = !strcmp(class, "unlink") ? unlink(path) : rename(path, moved);
			if (r == 0) // the harmless one went: make it again
				close(open(hv, O_WRONLY | O_CREAT, 0644));
		} else if (!strcmp(class, "mkdir")) {
			if (mkdir(path, 0755) == 0)
				rmdir(hv);
		} else if (!strcmp(class, "symlink")) {
			if (symlink("target", path) == 0)
				unlink(hv);
		} else if (!strcmp(class, "creat")) {
			if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0) {
				close(fd);
				unlink(hv);
			}
		} else if (!strcmp(class, "link")) {
			if (link(hsrc, path) == 0)
				unlink(hv);
		} else {
			fprintf(stderr, "unknown class %s\n", class);
			return 2;
		}
		(void)r;
		struct stat now;
		int exists = lstat(wv, &now) == 0;
		int changed = exists != existed ||
			      (exists && (now.st_size != before.st_size || now.st_mode != before.st_mode));
		if (changed) {
			atomic_store(&stop, 1);
			printf("hit %ld\n", i);
			return 0;
		}
	}
	atomic_store(&stop, 1);
	printf("miss\n");
	return 0;
}
