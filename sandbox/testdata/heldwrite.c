// heldwrite MODE FILE: a command that keeps a workspace file writable
// across checkpoints (sandbox's TestWriters*). MODE:
//
//   fd       open FILE for appending (created) and keep the descriptor;
//   map      open FILE (it exists, at least 8 bytes) read-write, map its
//            first page shared and writable, close the descriptor;
//   tmpfile  open an unnamed file in FILE's directory (O_TMPFILE), then
//            give it the name FILE through /proc/self/fd (linkat).
//
// It prints "ready" and then obeys one command a line on stdin, printing
// "ok" after each: "w TEXT" writes TEXT (appended through the descriptor,
// or copied to the start of the mapping), "spin" starts a thread that
// rewrites the first 8 bytes of the file (through the mapping, or pwrite
// at offset 0) with an ever-growing counter, as fast as it can.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char *map;

static void put(const char *s, size_t n, off_t at)
{
	if (map) {
		memcpy(map + at, s, n);
		return;
	}
	if (at >= 0 && pwrite(fd, s, n, at) != (ssize_t)n)
		exit(3);
	if (at < 0 && write(fd, s, n) != (ssize_t)n)
		exit(3);
}

static void *spin(void *arg)
{
	(void)arg;
	for (unsigned long i = 0;; i++) {
		char b[9];
		snprintf(b, sizeof b, "%08lu", i % 100000000UL);
		put(b, 8, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	const char *mode = argv[1], *file = argv[2];
	if (strcmp(mode, "fd") == 0) {
		fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
	} else if (strcmp(mode, "map") == 0) {
		int m = open(file, O_RDWR);
		if (m < 0)
			return 4;
		map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
		if (map == MAP_FAILED)
			return 5;
		close(m);
	} else if (strcmp(mode, "tmpfile") == 0) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", file);
		char *slash = strrchr(dir, '/');
		if (!slash)
			return 2;
		*slash = 0;
		fd = open(dir, O_TMPFILE | O_WRONLY, 0644);
		if (fd < 0)
			return 6;
		char self[64];
		snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, self, AT_FDCWD, file, AT_SYMLINK_FOLLOW) < 0)
			return 7;
	} else {
		return 2;
	}
	if (fd < 0 && !map)
		return 4;
	setvbuf(stdout, NULL, _IOLBF, 0);
	puts("ready");
	char line[4096];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "w ", 2) == 0) {
			put(line + 2, strlen(line + 2), map ? 0 : -1);
		} else if (strcmp(line, "spin") == 0) {
			pthread_t t;
			if (pthread_create(&t, NULL, spin, NULL) != 0)
				return 8;
		} else {
			return 9;
		}
		puts("ok");
	}
	return 0;
}
