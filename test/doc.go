// Package test holds end-to-end tests that build the lite-agent binary and
// run it as a user would: scripted agent sessions through the CLI, and (with
// the sandbox and checkpoint issues) the escape suite and rewind scenarios.
//
// Packages are tested in their own directories; this package tests the
// product.
package test
