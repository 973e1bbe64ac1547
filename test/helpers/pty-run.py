"""Run a command on a pseudo-terminal of a given width; print everything it wrote there.

    python3 pty-run.py COLUMNS COMMAND [ARG...]

The child's stdin, stdout and stderr are the terminal (so isTTY is true for
all three); its width is set before the command starts (0 is a width some
terminals report). Exits with the command's exit status.
"""
import fcntl
import os
import pty
import struct
import sys
import termios

columns = int(sys.argv[1])
command = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(sys.stdout.fileno(), termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    os.execvp(command[0], command)

out = sys.stdout.buffer
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # EIO: the terminal closed
        break
    if not chunk:
        break
    out.write(chunk)
out.flush()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
