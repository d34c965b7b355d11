package notify

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// Mode is the network mode a server enforces on AF_INET/AF_INET6
// addresses (addr_linux.go has the ranges). The sandbox maps its
// NetworkMode onto it; the zero value is ModeNone, the narrowest.
type Mode uint8

const (
	// ModeNone: no IP destination but the tree's own loopback addresses
	// and the domain proxy.
	ModeNone Mode = iota
	// ModeLoopback: loopback addresses.
	ModeLoopback
	// ModePrivate: loopback and private addresses (10/8, 172.16/12,
	// 192.168/16, fc00::/7) — never link-local, where cloud metadata
	// (169.254.169.254) lives.
	ModePrivate
	// ModeUnrestricted: every address (the AF_UNIX rule still applies).
	ModeUnrestricted
)

func (m Mode) String() string {
	switch m {
	case ModeNone:
		return "none"
	case ModeLoopback:
		return "loopback"
	case ModePrivate:
		return "private"
	case ModeUnrestricted:
		return "unrestricted"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ErrUnsupported is wrapped by Start's errors when this kernel or
// architecture cannot host the server: the caller must then refuse what
// needed it (the sandbox wraps it into its own ErrUnsupported).
var ErrUnsupported = errors.New("notification server: not supported here")

// TestHooks are set only by the sandbox package's end-to-end tests, before
// any server starts; they are not an interface to use.
var TestHooks struct {
	// CaptureFailOpen makes change capture let a call through when it
	// cannot resolve the path it names, as it did before it failed
	// closed: tests set it to show the unrecorded change that the rule
	// prevents.
	CaptureFailOpen bool
	// CaptureKeepCreds makes capture's emulated calls run with the
	// server's own credentials and capabilities: tests set it to show
	// what the emulation would reach without taking the command's.
	CaptureKeepCreds bool
	// Poll, if set, replaces poll(2) on the listener, to inject the
	// interruptions a loaded machine produces.
	Poll func(fds []unix.PollFd, timeout int) (int, error)
	// PollerErr, if set, is asked before each wait of the loop on the
	// runtime's poller: an error it returns is what the wait gives
	// instead, to inject the "not pollable" the poller reports after an
	// EPOLLERR of the listener (see the loop).
	PollerErr func() error
	// ListenerIoctl, if set, is asked before each ioctl that answers or
	// checks a call (SEND, ID_VALID, ADDFD): an errno it returns is what
	// the ioctl gives instead of being made, to inject the EINTR a
	// contended filter lock gives a signalled thread.
	ListenerIoctl func(req uintptr) unix.Errno
	// HardLinkWalkLimit, if not 0, replaces the bound of HardLinkNames.
	HardLinkWalkLimit int
	// HeldFilesLimit, if not 0, replaces the bound of a HeldFiles made
	// afterwards (maxHeldFiles).
	HeldFilesLimit int
}
