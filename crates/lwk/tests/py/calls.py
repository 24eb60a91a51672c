# Issue #14: system calls CPython's tests make that the LWK refused (ENOSYS, EINVAL, ENOTTY).
# Prints one line per call: its result or its error; the LWK's output must equal native's.
import os, sys

d = sys.argv[1]
which = sys.argv[2:]


def t(name, fn):
    if which and name.split()[0] not in which:
        return
    try:
        print(name, fn())
    except OSError as e:
        print(name, "error", e.errno)


f = os.path.join(d, "f")
open(f, "w").close()
t("xattr", lambda: (os.setxattr(f, "user.a", b"1"), os.listxattr(f), os.removexattr(f, "user.a"), os.listxattr(f)))
t("mkfifo", lambda: (os.mkfifo(os.path.join(d, "p")), os.path.exists(os.path.join(d, "p"))))
t("mknod", lambda: os.mknod(os.path.join(d, "n"), 0o600 | 0o10000, 0))
t("sched_priority", lambda: (os.sched_get_priority_min(os.SCHED_RR), os.sched_get_priority_max(os.SCHED_RR)))
t("setpgid", lambda: (os.setpgid(0, 0), os.getpgid(0) == os.getpid()))
t("pidfd_open", lambda: os.close(os.pidfd_open(os.getpid())))


def pty_calls():
    import termios
    m, s = os.openpty()
    name = os.ttyname(s).startswith("/dev/pts/")
    termios.tcdrain(s)
    termios.tcflush(m, termios.TCIOFLUSH)
    os.close(s)
    os.close(m)
    return name


t("openpty", pty_calls)


def pty_more_ioctls():
    # stress-ng's pty stressor: the System V termio calls, the locked termios, the int queries.
    import fcntl, struct, termios
    m, s = os.openpty()
    out = []
    try:
        for name, req, arg in [
            ("TCGETA", termios.TCGETA, bytes(18)),
            ("TIOCGLCKTRMIOS", 0x5456, bytes(36)),
            ("TIOCGPKT", 0x80045438, bytes(4)),
            ("TIOCGPTLCK", 0x80045439, bytes(4)),
            ("TIOCGETD", 0x5424, bytes(4)),
            ("TIOCGEXCL", 0x80045440, bytes(4)),
        ]:
            try:
                r = fcntl.ioctl(s if name != "TIOCGPKT" and name != "TIOCGPTLCK" else m, req, arg)
                out.append((name, r == arg or len(r)))
            except OSError as e:
                out.append((name, "error", e.errno))
        termio = fcntl.ioctl(s, termios.TCGETA, bytes(18))
        for req in (termios.TCSETA, termios.TCSETAW, termios.TCSETAF):
            fcntl.ioctl(s, req, termio)
        out.append(("TCSETA* kept", fcntl.ioctl(s, termios.TCGETA, bytes(18)) == termio))
        out.append(("TIOCEXCL", fcntl.ioctl(s, termios.TIOCEXCL), struct.unpack("i", fcntl.ioctl(s, 0x80045440, bytes(4)))[0]))
    finally:
        os.close(s)
        os.close(m)
    return out


t("pty_more_ioctls", pty_more_ioctls)
t("tcsetpgrp_badfd", lambda: os.tcsetpgrp(1000, 0))


def tiocgptpeer():
    # pty.openpty-like: the master from /dev/ptmx, the slave from ioctl(TIOCGPTPEER) (a new fd).
    import fcntl, tty
    m = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
    fcntl.ioctl(m, 0x40045431, b"\0\0\0\0")  # TIOCSPTLCK: unlockpt
    s = fcntl.ioctl(m, 0x5441, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        out = [s > m, os.isatty(s), os.get_inheritable(s)]
        os.write(s, b"from the slave\n")
        out.append(os.read(m, 100))
        tty.setraw(s)
        os.write(m, b"to the slave")
        out.append(os.read(s, 100))
        try:
            fcntl.ioctl(s, 0x5441, os.O_RDWR)
        except OSError as e:
            out.append(("on the slave", e.errno))
        return out
    finally:
        os.close(s)
        os.close(m)


t("tiocgptpeer", tiocgptpeer)


def fcntl_calls():
    import fcntl
    fd = os.open(d, os.O_RDONLY)
    try:
        notify = fcntl.fcntl(fd, fcntl.F_NOTIFY, fcntl.DN_MULTISHOT | fcntl.DN_CREATE)
        own = fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid()), fcntl.fcntl(fd, fcntl.F_GETOWN) == os.getpid()
        return notify, own
    finally:
        os.close(fd)


t("fcntl", fcntl_calls)


def splice_tee():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    os.write(w1, b"hello")
    n = os.splice(r1, w2, 5)
    return n, os.read(r2, 5)


t("splice", splice_tee)
t("chroot", lambda: os.chroot(os.path.join(d, "missing")))


def pidfd_signal():
    import signal
    fd = os.pidfd_open(os.getpid())
    try:
        return signal.pidfd_send_signal(fd, 0)
    finally:
        os.close(fd)


t("pidfd_send_signal", pidfd_signal)


class Sent(Exception):
    pass


def pidfd_signal_self():
    # A signal sent to oneself through a pidfd is pending when the call returns (CPython's
    # test_pidfd_send_signal): the handler raises from the call itself, every time.
    import signal

    def raise_sent(signum, frame):
        raise Sent()

    old = signal.signal(signal.SIGUSR1, raise_sent)
    fd = os.pidfd_open(os.getpid())
    from_call = 0
    try:
        for _ in range(20):
            try:
                signal.pidfd_send_signal(fd, signal.SIGUSR1)
                try:
                    sum(range(1000))
                except Sent:
                    pass
            except Sent:
                from_call += 1
    finally:
        os.close(fd)
        signal.signal(signal.SIGUSR1, old)
    return f"{from_call} of 20 raised by the call"


t("pidfd_send_signal_self", pidfd_signal_self)


def msync_checks():
    import mmap
    mm = mmap.mmap(-1, 16)
    ok = mm.flush()
    try:
        mm.flush(1, 6)
        unaligned = "no error"
    except OSError as e:
        unaligned = e.errno
    mm.close()
    return ok, unaligned


t("msync", msync_checks)


def settime():
    import time
    try:
        time.clock_settime(time.CLOCK_MONOTONIC, 0)
        mono = "no error"
    except OSError as e:
        mono = e.errno
    return mono


t("clock_settime", settime)


def ifnames():
    import socket
    return socket.if_nametoindex("lo"), socket.if_indextoname(socket.if_nametoindex("lo"))


t("ifindex", ifnames)

t("kill_probe", lambda: (os.kill(-1, 0), os.killpg(os.getpgid(0), 0)))


def sched_policy():
    # Per-thread calls made about the calling thread: policy, priority, RR quantum, a change to
    # SCHED_BATCH and back (the LWK makes them about the vCPU's Linux thread, issue #14).
    p = os.sched_getscheduler(0)
    prio = os.sched_getparam(0).sched_priority
    rr = os.sched_rr_get_interval(0) >= 0
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    batch = os.sched_getscheduler(0)
    os.sched_setparam(0, os.sched_param(0))
    os.sched_setscheduler(0, p, os.sched_param(prio))
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(5))
        bad = "accepted"
    except OSError as e:
        bad = e.errno
    return p, prio, rr, batch, os.sched_getscheduler(0), bad


t("sched_policy", sched_policy)
