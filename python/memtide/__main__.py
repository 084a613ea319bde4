"""``python -m memtide ARGS``: runs the ``memtide`` binary this wheel installed, with ARGS."""

import os
import shutil
import sys
import sysconfig


def _binary():
    name = "memtide.exe" if os.name == "nt" else "memtide"
    here = os.path.join(sysconfig.get_path("scripts"), name)
    if os.path.isfile(here):
        return here
    return shutil.which("memtide")


def main():
    exe = _binary()
    if exe is None:
        sys.stderr.write("memtide: the memtide binary is not installed next to this Python "
                         "(pip install . from a memtide checkout installs the memtide-cli wheel)\n")
        return 2
    if os.name == "nt":
        import subprocess

        return subprocess.call([exe, *sys.argv[1:]])
    os.execv(exe, [exe, *sys.argv[1:]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
