"""listen.py: the test host inside a network namespace the escape suite made.

    python3 listen.py LOGFILE

Listens on TCP and UDP, on one port of every address of its namespace (IPv4
and, when there is one, IPv6), answers each TCP connection with "hello\n"
and appends every token it receives to LOGFILE. Prints "ready PORT".
"""
import socket
import sys
import threading

log = open(sys.argv[1], "a", buffering=1)
lock = threading.Lock()


def record(kind, data):
    with lock:
        log.write("%s %s\n" % (kind, data.decode(errors="replace").strip()))


def bind_pair(port):
    socks = []
    for fam, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            try:
                s = socket.socket(fam, typ)
            except OSError:
                continue
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if fam == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if typ == socket.SOCK_STREAM:
                s.setsockopt(socket.IPPROTO_TCP, 23, 16)  # TCP_FASTOPEN
            s.bind((host, port))
            port = s.getsockname()[1]
            socks.append(s)
    return port, socks


def serve_tcp(s):
    s.listen(64)
    while True:
        c, _ = s.accept()
        # One connection at a time, in the order they came: the test's
        # sentinel, sent after a run, is logged after anything the run
        # got through.
        handle(c)


def handle(c):
    c.settimeout(3)
    try:
        c.sendall(b"hello\n")
        data = c.recv(256)
        if data:
            record("tcp", data)
    except OSError:
        pass
    finally:
        c.close()


def serve_udp(s):
    while True:
        data, _ = s.recvfrom(2048)
        record("udp", data)


while True:
    try:
        port, socks = bind_pair(0)
        break
    except OSError:
        continue
for s in socks:
    target = serve_tcp if s.type == socket.SOCK_STREAM else serve_udp
    threading.Thread(target=target, args=(s,), daemon=True).start()
print("ready %d" % port, flush=True)
threading.Event().wait()
