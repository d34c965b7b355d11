// capture_stress DIR THREADS FILES: parallel file work under change
// capture, the shape of go's module extraction (sandbox's
// TestCaptureStress). THREADS threads each make FILES files in DIR/tN:
// open(O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC), write, close, then rename
// one file in two, unlink one in three and make and remove a directory
// one in four — while a timer interrupts every thread with a signal
// (SA_RESTART) every 50 µs, as Go's preemption does.
//
// Every result is checked against what the kernel would answer: an open
// gives a descriptor above 2 that is open for writing (a descriptor of
// the process's stdio, or one open for reading, is what a lost answer
// looks like: "write: bad file descriptor"), writes are whole, nothing
// fails. Each failure is printed ("bad ..."); the last line is
// "done N" with N the number of failures.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static const char *dir;
static int files;
static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t ticks;

static void fail(const char *what, const char *path, long got, int err)
{
	pthread_mutex_lock(&mu);
	failures++;
	if (failures <= 20)
		printf("bad %s %s: got %ld errno %d (%s)\n", what, path, got, err, strerror(err));
	pthread_mutex_unlock(&mu);
}

static void tick(int sig)
{
	(void)sig;
	ticks++;
}

static void *work(void *arg)
{
	long id = (long)arg;
	char sub[4096], p[4096], q[4096], d[4096];
	char data[512];
	memset(data, 'x', sizeof data);
	snprintf(sub, sizeof sub, "%s/t%ld", dir, id);
	if (mkdir(sub, 0755) != 0)
		fail("mkdir", sub, -1, errno);
	for (int i = 0; i < files; i++) {
		snprintf(p, sizeof p, "%s/f%d.mod", sub, i);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			fail("open", p, fd, errno);
			continue;
		}
		if (fd <= 2)
			fail("open returned stdio", p, fd, 0);
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) != O_WRONLY)
			fail("open access mode", p, fl, errno);
		int fdfl = fcntl(fd, F_GETFD);
		if (fdfl < 0 || !(fdfl & FD_CLOEXEC))
			fail("open close-on-exec", p, fdfl, errno);
		struct stat a, b;
		if (fstat(fd, &a) != 0 || stat(p, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
			fail("open gave another file", p, fd, errno);
		ssize_t n = write(fd, data, sizeof data);
		if (n != (ssize_t)sizeof data)
			fail("write", p, n, errno);
		if (fd > 2 && close(fd) != 0)
			fail("close", p, -1, errno);
		if (i % 2 == 0) {
			snprintf(q, sizeof q, "%s/r%d.mod", sub, i);
			if (rename(p, q) != 0)
				fail("rename", p, -1, errno);
		}
		if (i % 3 == 0 && unlink(i % 2 == 0 ? q : p) != 0)
			fail("unlink", p, -1, errno);
		if (i % 4 == 0) {
			snprintf(d, sizeof d, "%s/d%d", sub, i);
			if (mkdir(d, 0755) != 0)
				fail("mkdir", d, -1, errno);
			else if (rmdir(d) != 0)
				fail("rmdir", d, -1, errno);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: capture_stress DIR THREADS FILES\n");
		return 2;
	}
	dir = argv[1];
	int threads = atoi(argv[2]);
	files = atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	// The process-directed timer signal goes to whichever thread can take
	// it: one in a captured call as often as not.
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	pthread_t th[256];
	if (threads > 256)
		threads = 256;
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, work, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("done %d (signals %d)\n", failures, (int)ticks);
	return failures != 0;
}
