"""net.py: one network attempt for the sandbox escape suite.

    python3 net.py MODE TARGET [PORT TOKEN]

Prints "RAN MODE", then "SUCCEEDED MODE: ..." and exits 0 when the attempt
got through, or "blocked MODE: ..." and exits 1. It talks only to the
TARGET the test gives it: the test's own loopback listener, a host in a
network namespace the test made, or a unix socket the test listens on. It
sends the TOKEN, which the listener logs: a datagram that left is seen
there even when the sender cannot tell.
"""
import select
import socket
import sys

MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
MSG_FASTOPEN = getattr(socket, "MSG_FASTOPEN", 0x20000000)


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def done(mode, ok, detail):
    print(("SUCCEEDED " if ok else "blocked ") + mode + ": " + detail, flush=True)
    sys.exit(0 if ok else 1)


def stream(mode, host, port, token, proto=0, fastopen=False):
    s = socket.socket(family(host), socket.SOCK_STREAM, proto)
    s.settimeout(3)
    if fastopen:
        # sendto on an unconnected TCP socket connects it: a filter that
        # watches connect() alone misses this. With a timeout set the
        # socket is non-blocking, and EINPROGRESS means the SYN is out.
        try:
            s.sendto(token.encode() + b"\n", MSG_FASTOPEN, (host, port))
        except BlockingIOError:
            select.select([], [s], [], 3)
            s.sendall(token.encode() + b"\n")
    else:
        s.connect((host, port))
        s.sendall(token.encode() + b"\n")
    banner = s.recv(64)
    return "connected to %s:%d, banner %r" % (host, port, banner)


def main():
    mode, target = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    token = sys.argv[4] if len(sys.argv) > 4 else "token"
    print("RAN " + mode, flush=True)
    data = token.encode() + b"\n"
    try:
        if mode == "tcp":
            done(mode, True, stream(mode, target, port, token))
        elif mode == "mptcp":
            done(mode, True, stream(mode, target, port, token, proto=MPTCP))
        elif mode == "fastopen":
            done(mode, True, stream(mode, target, port, token, fastopen=True))
        elif mode == "udp":
            s = socket.socket(family(target), socket.SOCK_DGRAM)
            s.sendto(data, (target, port))
            done(mode, True, "sendto %s:%d returned" % (target, port))
        elif mode == "udp-sendmsg":
            s = socket.socket(family(target), socket.SOCK_DGRAM)
            s.sendmsg([data], [], 0, (target, port))
            done(mode, True, "sendmsg %s:%d returned" % (target, port))
        elif mode == "udp-connect":
            s = socket.socket(family(target), socket.SOCK_DGRAM)
            s.connect((target, port))
            s.send(data)
            done(mode, True, "connect+send %s:%d returned" % (target, port))
        elif mode == "unix":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect(target)
            s.sendall(data)
            done(mode, True, "connected to %s, got %r" % (target, s.recv(64)))
        elif mode == "abstract":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(3)
            s.connect("\0" + target)
            s.sendall(data)
            done(mode, True, "connected to @%s, got %r" % (target, s.recv(64)))
        else:
            print("net.py: unknown mode " + mode, file=sys.stderr)
            sys.exit(2)
    except OSError as e:
        done(mode, False, "%s: %s" % (type(e).__name__, e))


main()
