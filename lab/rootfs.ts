// The root filesystem of the lab's container 129: a minimal Debian (the
// release of this machine, bookworm here) with systemd as init, journald,
// dbus, Debian's OpenSSH server and python3, built once with mmdebstrap (or
// debootstrap) from the Debian mirror apt on this machine uses, and cached in
// <the project's cache>/lab-rootfs/<key>/rootfs, keyed
// by the package list and the customisation below. Containers never write it:
// each start gets a fresh writable layer over it (lab/pve/ct-runtime.ts).
import { createHash } from "crypto";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";

/** What the container runs: systemd 252 as PID 1 and what the stack and the simulator need in it. */
export const ROOTFS_PACKAGES = [
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "procps",
    "python3",
    // `python3 -m venv` with pip (ensurepip's wheels): the stack stages a release's venv with it (service.venv).
    "python3-venv",
    // The host's node binary is bind-mounted into the container for the simulator and stand-ins; it links libstdc++.
    "libstdc++6",
];

/**
 * Units a container does not need, masked in the image (symlinks to
 * /dev/null in /usr/lib/systemd/system, so the container's own
 * /etc/systemd/system stays the stack's). Some would reach outside the
 * container: it shares the host's network namespace (sysctl, networkd,
 * binfmt, audit), or they are pointless without a console or logins.
 */
export const MASKED_UNITS = [
    // tmpfiles: its rules clean /tmp and /var/tmp; nothing in the container needs them.
    "systemd-tmpfiles-setup.service",
    "systemd-tmpfiles-setup-dev.service",
    "systemd-tmpfiles-setup-dev-early.service",
    "systemd-tmpfiles-clean.service",
    "getty@.service",
    "serial-getty@.service",
    "console-getty.service",
    "container-getty@.service",
    "getty-static.service",
    "systemd-logind.service",
    "systemd-networkd.service",
    "systemd-networkd.socket",
    "systemd-networkd-wait-online.service",
    "systemd-network-generator.service",
    // /proc/sys/net is the host's (shared network namespace).
    "systemd-sysctl.service",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "proc-sys-fs-binfmt_misc.mount",
    "systemd-modules-load.service",
    "kmod-static-nodes.service",
    "systemd-journald-audit.socket",
    "systemd-pstore.service",
    "systemd-firstboot.service",
    "systemd-hwdb-update.service",
    "systemd-repart.service",
    "systemd-pcrphase.service",
    "systemd-pcrphase-sysinit.service",
    "systemd-machine-id-commit.service",
    "sys-kernel-config.mount",
    "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount",
    "sys-fs-fuse-connections.mount",
    "dev-hugepages.mount",
    "systemd-udevd.service",
    "systemd-udev-trigger.service",
    "systemd-udev-settle.service",
    "systemd-ask-password-wall.path",
    "systemd-ask-password-console.path",
];

/** Where the container finds what the lab binds into it (see layout.ts containerMounts). */
export const CT_LAB = {
    /** Read-only: node, the compiled stand-ins. */
    lib: "/usr/local/lib/sglang-lab",
    /** Read-write: the container's view of lab.json, faults, simulator events, simulated GPU memory. */
    share: "/var/lib/sglang-lab",
    /** Read-only: sshd_config, the pinned host key, authorized_keys. */
    ssh: "/etc/ssh/lab",
};

/** The shell run on the finished tree ($1): masks, the lab's sshd hooks, no machine-id, no host keys. */
export function customizeScript(): string {
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    return [
        "set -eu",
        'R="$1"',
        'U="$R/usr/lib/systemd/system"',
        `for u in ${MASKED_UNITS.map(q).join(" ")}; do rm -f "$U/$u"; ln -s /dev/null "$U/$u"; done`,
        // Timers (dpkg-db-backup, fstrim, tmpfiles-clean): nothing scheduled in the lab.
        'for t in "$U"/*.timer; do rm -f "$t"; ln -s /dev/null "$t"; done',
        // /etc/systemd/system is the container's own (a lab directory bound over it): Debian's
        // enablement links there go, sshd is enabled at the vendor level instead.
        'rm -rf "$R/etc/systemd/system"; mkdir -p "$R/etc/systemd/system"',
        'ln -sf ../ssh.service "$U/multi-user.target.wants/ssh.service"',
        // The lab's sshd_config (address, pinned host key, the lab's client key) is bound at /etc/ssh/lab.
        'rm -f "$R"/etc/ssh/ssh_host_*',
        `echo ${q(`Include ${CT_LAB.ssh}/sshd_config`)} > "$R/etc/ssh/sshd_config.d/00-lab.conf"`,
        // sshd also logs to a file the lab can read (the bench counts connections from it).
        `echo ${q(`SSHD_OPTS="-E ${CT_LAB.share}/sshd.log"`)} > "$R/etc/default/ssh"`,
        // A machine id per boot (the writable layer is fresh at every start).
        ': > "$R/etc/machine-id"',
        'rm -f "$R/etc/hostname"',
        "",
    ].join("\n");
}

/** The Debian release and mirror this machine's apt uses (deb822 .sources or one-line .list). */
export function debianMirror(): { suite: string; uri: string } {
    let suite = "bookworm";
    try {
        suite = /^VERSION_CODENAME=(\S+)$/m.exec(fs.readFileSync("/etc/os-release", "utf8"))?.[1] ?? suite;
    } catch {
        // not Debian: default release
    }
    const files: string[] = [];
    if (fs.existsSync("/etc/apt/sources.list")) files.push("/etc/apt/sources.list");
    try {
        for (const f of fs.readdirSync("/etc/apt/sources.list.d").sort()) if (/\.(sources|list)$/.test(f)) files.push(path.join("/etc/apt/sources.list.d", f));
    } catch {
        // no sources.list.d
    }
    for (const file of files) {
        let text: string;
        try {
            text = fs.readFileSync(file, "utf8");
        } catch {
            continue;
        }
        if (file.endsWith(".sources")) {
            for (const stanza of text.split(/\n\s*\n/)) {
                const field = (k: string) => new RegExp(`^${k}:\\s*(.+)$`, "mi").exec(stanza)?.[1]?.trim() ?? "";
                if (!/\bdeb\b/.test(field("Types")) || /^enabled:\s*no/im.test(stanza)) continue;
                const uri = field("URIs").split(/\s+/)[0];
                if (uri && field("Suites").split(/\s+/).includes(suite) && field("Components").split(/\s+/).includes("main")) return { suite, uri };
            }
        } else {
            for (const line of text.split("\n")) {
                const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$/.exec(line.trim());
                if (m && m[2] === suite && m[3]!.split(/\s+/).includes("main")) return { suite, uri: m[1]! };
            }
        }
    }
    return { suite, uri: "http://deb.debian.org/debian" };
}

export function rootfsKey(mirror = debianMirror()): string {
    const h = createHash("sha256");
    h.update(JSON.stringify({ v: 1, suite: mirror.suite, packages: ROOTFS_PACKAGES, customize: customizeScript() }));
    return `${mirror.suite}-${h.digest("hex").slice(0, 12)}`;
}

/**
 * The cached rootfs, built when missing (a minute or less; the mirror is the
 * slow part). Concurrent builders each build in their own directory; the
 * first rename wins. `cacheRoot`: the project's cache (sglang-release/oracle.ts
 * cacheRoot), passed in because this file is also compiled for the lab's
 * machines (lab/tsconfig.json), where sglang-release/ is not.
 */
export function ensureRootfs(cacheRoot: string, log: (msg: string) => void = () => undefined): string {
    const mirror = debianMirror();
    const dir = path.join(cacheRoot, "lab-rootfs", rootfsKey(mirror));
    const rootfs = path.join(dir, "rootfs");
    if (fs.existsSync(path.join(dir, ".complete"))) return rootfs;
    fs.mkdirSync(dir, { recursive: true });
    const tmp = path.join(dir, `build-${process.pid}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp);
    const hook = path.join(dir, `customize-${process.pid}.sh`);
    fs.writeFileSync(hook, customizeScript(), { mode: 0o755 });
    const target = path.join(tmp, "rootfs");
    log(`lab: building the container's Debian ${mirror.suite} rootfs from ${mirror.uri} (once; cached in ${dir})`);
    const started = Date.now();
    let r;
    if (onPath("mmdebstrap")) {
        r = spawnSync(
            "mmdebstrap",
            [
                "--quiet",
                "--mode=root",
                "--variant=essential",
                `--include=${ROOTFS_PACKAGES.join(",")}`,
                "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-exclude=/usr/share/locale/*",
                `--customize-hook=sh ${hook} "$1"`,
                mirror.suite,
                target,
                `deb ${mirror.uri} ${mirror.suite} main`,
            ],
            { encoding: "utf8", timeout: 600_000 },
        );
    } else if (onPath("debootstrap")) {
        r = spawnSync("debootstrap", ["--variant=minbase", `--include=${ROOTFS_PACKAGES.join(",")}`, mirror.suite, target, mirror.uri], {
            encoding: "utf8",
            timeout: 600_000,
        });
        if (r.status === 0) r = spawnSync("sh", [hook, target], { encoding: "utf8" });
    } else {
        throw new Error("lab: neither mmdebstrap nor debootstrap is installed (npm run setup installs them; see lab/REQUIREMENTS)");
    }
    fs.rmSync(hook, { force: true });
    if (r.status !== 0) {
        fs.rmSync(tmp, { recursive: true, force: true });
        throw new Error(
            `lab: building the container rootfs failed (exit ${r.status}${r.error ? `, ${r.error.message}` : ""}):\n${(r.stderr ?? "").slice(-3000)}`,
        );
    }
    fs.writeFileSync(path.join(tmp, "packages"), `${ROOTFS_PACKAGES.join("\n")}\n`);
    if (fs.existsSync(path.join(dir, ".complete"))) {
        fs.rmSync(tmp, { recursive: true, force: true });
        return rootfs;
    }
    fs.rmSync(rootfs, { recursive: true, force: true });
    fs.renameSync(target, rootfs);
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.writeFileSync(path.join(dir, ".complete"), `${new Date().toISOString()} built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    log(`lab: rootfs built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return rootfs;
}

function onPath(cmd: string): boolean {
    const dirs = new Set([...(process.env.PATH ?? "").split(":").filter(Boolean), "/usr/sbin", "/usr/bin", "/sbin", "/bin"]);
    return [...dirs].some((d) => fs.existsSync(path.join(d, cmd)));
}
