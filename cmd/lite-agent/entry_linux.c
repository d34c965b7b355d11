// The hand-over of `lite-agent sandbox run` to lite-agent-sandbox.
//
// A Go program initialises every package it links before main, whether
// or not the command uses it: for lite-agent that is the providers' and
// MCP SDKs, the terminal UI and the runtime's start over a 100 MB binary,
// several milliseconds before `sandbox run` could start its command. So
// this constructor, which the dynamic loader runs before the Go runtime
// starts, execs the program built from the same `sandbox run` code
// without those packages (cmd/lite-agent-sandbox, internal/sandboxrun)
// when it is installed beside this binary. That program checks that both
// come from one build and, when they do not, execs this binary again with
// the variable below set, which runs `sandbox run` here.
//
// Nothing happens (the command runs in this process) when the arguments
// are not `sandbox run ...`, when LITE_AGENT_SANDBOX_ENTRY is already
// set (the entry point sent the command back, or the person asked for
// in-process), when /proc/self/exe cannot be read or names a deleted
// file, or when there is no lite-agent-sandbox beside it that the
// person could have installed (below). The arguments
// and the environment pass unchanged, plus the variable naming this
// binary (so the entry point can compare the two builds).
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define LA_ENTRY_ENV "LITE_AGENT_SANDBOX_ENTRY"
#define LA_ENTRY_NAME "lite-agent-sandbox"
#define LA_DELETED " (deleted)"

__attribute__((constructor)) static void la_sandbox_entry(int argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], "sandbox") != 0 || strcmp(argv[2], "run") != 0)
		return;
	if (getenv(LA_ENTRY_ENV) != NULL)
		return;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0 || (size_t)n >= sizeof self - 1 || self[0] != '/')
		return;
	self[n] = '\0';
	size_t dl = strlen(LA_DELETED);
	if ((size_t)n >= dl && strcmp(self + n - dl, LA_DELETED) == 0)
		return; // replaced since it started: its pair is not known
	char *slash = strrchr(self, '/');
	size_t dir = (size_t)(slash - self) + 1;
	char entry[PATH_MAX];
	if (dir + sizeof LA_ENTRY_NAME > sizeof entry)
		return;
	memcpy(entry, self, dir);
	memcpy(entry + dir, LA_ENTRY_NAME, sizeof LA_ENTRY_NAME);
	if (access(entry, X_OK) != 0)
		return;
	// Only a program the person could have installed: a regular file
	// (not a link to elsewhere), owned by this binary's owner or root,
	// that nobody else may write — in a shared directory such as /tmp,
	// another user's lite-agent-sandbox beside a copy of lite-agent is
	// not run. It is executed through the descriptor checked.
	int fd = open(entry, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat es, ss;
	if (fstat(fd, &es) != 0 || stat(self, &ss) != 0 || !S_ISREG(es.st_mode) ||
	    (es.st_mode & (S_IWGRP | S_IWOTH)) != 0 || (es.st_uid != ss.st_uid && es.st_uid != 0)) {
		close(fd);
		return;
	}

	size_t envc = 0;
	while (environ[envc] != NULL)
		envc++;
	char **env = malloc((envc + 2) * sizeof *env);
	char *var = malloc(sizeof LA_ENTRY_ENV + 1 + (size_t)n + 1);
	if (env == NULL || var == NULL) {
		free(env);
		free(var);
		close(fd);
		return;
	}
	snprintf(var, sizeof LA_ENTRY_ENV + 1 + (size_t)n + 1, "%s=%s", LA_ENTRY_ENV, self);
	memcpy(env, environ, envc * sizeof *env);
	env[envc] = var;
	env[envc + 1] = NULL;
	fexecve(fd, argv, env);
	// Not executable after all: run here.
	close(fd);
	free(env);
	free(var);
}
