// The PID-namespace init of package sandbox (init_linux.c, package pidinit).
#ifndef LITE_AGENT_INIT_H
#define LITE_AGENT_INIT_H

// argv[0] that makes a program linking package sandbox act as the init.
#define LA_INIT_MARKER "lite-agent-sandbox-init"

#endif
