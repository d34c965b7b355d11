package pidinit

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-result
#include "init.h"

static const char *la_init_marker(void) { return LA_INIT_MARKER; }
*/
import "C"

// Marker is the argv[0] that makes a program linking this package the
// init of a PID namespace (init_linux.c). The argv that follows it:
// the status pipe's fd, RLIMIT_AS for the command in bytes or "-", the
// command's path, then its argv.
var Marker = C.GoString(C.la_init_marker())
