"""The ``memtide`` command the wheel installs: the binary's own parse and run, from the
extension module (``memtide._native.main``), with the binary's signal dispositions."""

import signal
import sys


def main() -> int:
    from memtide import _native

    # A compiled binary dies on Ctrl-C (the explorer's raw mode reads the key itself) and
    # ignores SIGPIPE (a closed pipe is an EPIPE error it handles): the same here, not
    # Python's KeyboardInterrupt, which Rust code would never see.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    argv = ["memtide", *sys.argv[1:]]
    code = _native.main(argv)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
