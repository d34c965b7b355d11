// Command lite-agent runs LLM agents confined by the kernel: see doc.go.
package main

import "os"

func main() {
	os.Exit(runCLI(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
