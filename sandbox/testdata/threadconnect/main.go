// Command threadconnect is the Go caller of the sandbox's thread tests:
// it dials from a goroutine that cannot run on the main thread (init
// locks main's goroutine to it), as Go's resolver and dialer do in any
// real program, and prints "ok" or the errno's name.
//
//	threadconnect unix|tcp|udp ADDR   dial ADDR from another thread
//	threadconnect serve               an httptest-style server on ":0"
//	                                  (the wildcard), fetched by itself
//	                                  through 127.0.0.1
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() { runtime.LockOSThread() }

func main() {
	res := make(chan string)
	switch {
	case len(os.Args) == 2 && os.Args[1] == "serve":
		go func() { res <- serve() }()
	case len(os.Args) == 3:
		go func() { res <- dial(os.Args[1], os.Args[2]) }()
	default:
		fmt.Println("usage: threadconnect unix|tcp|udp ADDR | serve")
		os.Exit(2)
	}
	fmt.Println(<-res)
}

func dial(kind, addr string) string {
	c, err := net.Dial(kind, addr)
	if err != nil {
		return name(err)
	}
	defer c.Close()
	if kind == "unix" {
		// The peer writes one byte: the connection is real.
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 'y' {
			return "EPROTO"
		}
	}
	return "ok"
}

func serve() string {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return "listen " + name(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "y") }))
	port := ln.Addr().(*net.TCPAddr).Port
	r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		return "get " + name(err)
	}
	defer r.Body.Close()
	if b, _ := io.ReadAll(r.Body); string(b) != "y" {
		return "get: body " + string(b)
	}
	return "ok bound=" + ln.Addr().(*net.TCPAddr).IP.String()
}

func name(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}
