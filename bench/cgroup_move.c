// How long joining a cgroup v1 takes, by the two ways a process can ask:
// writing its tid to "tasks" (the kernel takes its global threadgroup
// rwsem, whose write side waits for an RCU grace period when no migration
// happened lately) and writing "0" (the calling thread moves itself,
// without that lock). Root, with the v1 pids hierarchy at
// /sys/fs/cgroup/pids. Used by `bench/run.sh cgroup`.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double move(const char *dir, const char *value)
{
	char f[300];
	snprintf(f, sizeof f, "%s/tasks", dir);
	double t0 = now_ms();
	int fd = open(f, O_WRONLY);
	if (fd < 0 || write(fd, value, strlen(value)) < 0) {
		perror(f);
		return -1;
	}
	close(fd);
	return now_ms() - t0;
}

int main(void)
{
	char d[256], tid[32];
	snprintf(d, sizeof d, "/sys/fs/cgroup/pids/cgroup-move-bench-%d", getpid());
	snprintf(tid, sizeof tid, "%ld", (long)syscall(SYS_gettid));
	if (mkdir(d, 0755) < 0) {
		perror(d);
		return 1;
	}
	for (int i = 0; i < 5; i++) {
		// 100 ms apart: no migration "lately", as for a CLI run.
		usleep(100000);
		double by_tid = move(d, tid);
		move("/sys/fs/cgroup/pids", tid);
		usleep(100000);
		double by_self = move(d, "0");
		move("/sys/fs/cgroup/pids", "0");
		printf("move by tid %.3f ms   move self (\"0\") %.3f ms\n", by_tid, by_self);
	}
	rmdir(d);
	return 0;
}
