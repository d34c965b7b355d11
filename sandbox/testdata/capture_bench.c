// capture_bench DIR N [rel]: the per-file cost of change capture
// (sandbox's BenchmarkCapturePerFile). Three passes over N files in DIR,
// named by absolute paths (or, with "rel", relative to DIR, made the
// working directory), each timed on its own:
//
//   create   open(O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC), write 100 bytes,
//            close — a new file each time (what an install or an
//            extraction does);
//   rewrite  the same on the files that now exist (an editor, a build
//            rewriting its outputs);
//   unlink   remove each file.
//
// It prints "create NS rewrite NS unlink NS", nanoseconds per file.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int pass(const char *dir, int n, int unlinking)
{
	char p[4096], data[100];
	memset(data, 'x', sizeof data);
	for (int i = 0; i < n; i++) {
		if (dir)
			snprintf(p, sizeof p, "%s/f%d", dir, i);
		else
			snprintf(p, sizeof p, "f%d", i);
		if (unlinking) {
			if (unlink(p) != 0) {
				perror(p);
				return -1;
			}
			continue;
		}
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, data, sizeof data) != (ssize_t)sizeof data || close(fd) != 0) {
			perror(p);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: capture_bench DIR N [rel]\n");
		return 2;
	}
	int n = atoi(argv[2]);
	const char *dir = argv[1];
	if (argc == 4 && strcmp(argv[3], "rel") == 0) {
		if (chdir(dir) != 0) {
			perror(dir);
			return 1;
		}
		dir = NULL;
	}
	long long t[4];
	t[0] = now();
	if (pass(dir, n, 0))
		return 1;
	t[1] = now();
	if (pass(dir, n, 0))
		return 1;
	t[2] = now();
	if (pass(dir, n, 1))
		return 1;
	t[3] = now();
	printf("create %lld rewrite %lld unlink %lld\n", (t[1] - t[0]) / n, (t[2] - t[1]) / n, (t[3] - t[2]) / n);
	return 0;
}
