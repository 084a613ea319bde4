"""The explorer's first screen, timed in a pseudo-terminal (100x30): used by first_screen.py and
big.py."""
import fcntl, os, pty, select, struct, termios, time


def measure(argv, marker):
    """Runs `argv` in a pseudo-terminal until `marker` is on it, then sends `q`. Returns the
    seconds from exec to the marker (None: never shown), the child's peak RSS over the whole
    run (ru_maxrss, MiB) and at the marker (VmHWM, MiB)."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = dict(os.environ, TERM="xterm-256color")
        os.execvpe(argv[0], argv, env)
    buf, t1, hwm = b"", None, ["0"]
    while True:
        r, _, _ = select.select([fd], [], [], 600)
        if not r:
            break
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            break
        if not data:
            break
        buf = (buf + data)[-(1 << 20):]
        if t1 is None and marker in buf:
            t1 = time.perf_counter()
            with open(f"/proc/{pid}/status") as st:
                hwm = [l.split()[1] for l in st if l.startswith("VmHWM")]
            os.write(fd, b"q")
    while True:  # drain until exit
        try:
            if not os.read(fd, 1 << 16):
                break
        except OSError:
            break
    _, status, ru = os.wait4(pid, 0)
    return (t1 - t0) if t1 else None, ru.ru_maxrss / 1024.0, int(hwm[0]) / 1024.0
