package main

// The C constructor of entry_linux.c hands `lite-agent sandbox run` over
// to lite-agent-sandbox, built from the same code, before the Go runtime
// starts; this file only makes cgo compile it into the program.

import "C"
