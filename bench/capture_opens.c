// capture_opens DIR N: N opens for writing (O_RDWR|O_CREAT, no truncation)
// of 50 files in DIR, made on the first pass and existing afterwards —
// the pattern of SQLite's tests, which open their database and journal
// files again and again. Each open is one captured call under change
// capture; BENCHMARKS.md ("Change capture in a session, per file") times
// it under `lite-agent-sandbox run` against the same program unconfined:
//   cc -O2 -o capture_opens bench/capture_opens.c
//   lite-agent-sandbox run --workspace WS -- ./capture_opens /tmp 20000
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: capture_opens DIR N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	char p[4096];
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/f%d", argv[1], i % 50);
		int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}
	return 0;
}
