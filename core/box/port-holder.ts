// Who holds a port, asked on the box itself: the python functions that the
// box-side programs sending a key to a local port run first (the /server_info
// read, core/sglang/server-info-read.ts; the gateway's admin script, core/gateway/gateway.ts).
// A key goes to a port only when every socket listening there (for the
// address asked) belongs to the unit that should hold it: its MainPID, the
// processes of its cgroup, or their children. A process that binds the port
// while the unit is down (a restart, a first deploy, a crash loop) gets
// nothing, and is named (issue 19, issue 34 #2).
//
// Python text, spliced into those programs where their functions go. It reads
// two globals the program sets first: `host` (the address asked, brackets
// stripped or not) and `unit` (the unit's name, `sglang-<name>.service`), and
// needs `os`, `socket` and `subprocess` imported. Its functions:
// - listening(port): the inodes of the listening sockets that take a request
//   to host:port (bound to that address or to the wildcard), from
//   /proc/net/tcp{,6};
// - sockets(pid): the socket inodes a process holds (/proc/<pid>/fd);
// - unit_processes(): (MainPID, the unit's processes and their children),
//   from systemctl and /sys/fs/cgroup;
// - holder(inode): "pid N (comm)" of the process that holds a socket.
//
// The read-only gate allows the /server_info read byte for byte: a change
// here changes that program, and needs the gate reinstalled.

export const PORT_HOLDER_PY = String.raw`def local_address(table, hexaddr):
    raw = bytes.fromhex(hexaddr)
    if table.endswith("6"):
        return socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return socket.inet_ntop(socket.AF_INET, raw[::-1])
def listening(port):
    # The sockets that take a request to host:port: bound to that address or to the wildcard.
    wanted = {host.strip("[]"), "::ffff:" + host, "0.0.0.0", "::"}
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().split("\n")[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) <= 9 or cols[3] != "0A":
                continue
            address, hexport = cols[1].rsplit(":", 1)
            try:
                bound = local_address(table, address)
            except ValueError:
                continue
            if int(hexport, 16) == port and bound in wanted:
                inodes.add(cols[9])
    return inodes
def sockets(pid):
    found = set()
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        return found
    for fd in fds:
        try:
            link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(link[8:-1])
    return found
def unit_processes():
    try:
        shown = subprocess.run(["systemctl", "show", "-p", "MainPID", unit], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        shown = ""
    main = dict(l.split("=", 1) for l in shown.split("\n") if "=" in l).get("MainPID", "0")
    pids = {main} if main.isdigit() and main != "0" else set()
    for base in ("/sys/fs/cgroup/system.slice/", "/sys/fs/cgroup/systemd/system.slice/"):
        for d, _, files in os.walk(base + unit):
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    pids.update(f.read().split())
            except OSError:
                pass
    parents = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    stat = f.read()
                parents[p] = stat[stat.rindex(")") + 2:].split()[1]
            except (OSError, ValueError, IndexError):
                pass
    grew = True
    while grew:
        grew = False
        for p, parent in parents.items():
            if parent in pids and p not in pids:
                pids.add(p)
                grew = True
    return main, pids
def holder(inode):
    for p in os.listdir("/proc"):
        if p.isdigit() and inode in sockets(p):
            try:
                with open("/proc/%s/comm" % p) as f:
                    return "pid %s (%s)" % (p, f.read().strip()[:64])
            except OSError:
                return "pid " + p
    return "a process this read cannot see"
`;
