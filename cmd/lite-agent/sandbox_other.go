//go:build !linux

package main

// execFailureCode: elsewhere the sandbox does not start commands at all.
func execFailureCode(error) (int, bool) { return 0, false }
