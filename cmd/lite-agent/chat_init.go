package main

import "github.com/lite-agent/lite-agent/internal/noquery"

// The main package's init runs after every package it imports, Bubble
// Tea's included: TERM, set aside by noquery so that Bubble Tea's init
// does not wait for the terminal's background colour, is back before main
// and before anything reads it (see internal/noquery).
func init() { noquery.Restore() }
