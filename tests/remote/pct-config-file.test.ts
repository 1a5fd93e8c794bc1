import assert from "node:assert/strict";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { editPassthroughInPlace, PctLockedError } from "../../core/box/pct-config";
import { editPctConfigFile, pctConfigPaths, readPctConfigFile } from "../../remote/pct-config-file";
import { FakeBox } from "./fake-box";

// The edit's real shell scripts (flock, sha256sum, base64, tmp + rename) run
// in a local shell against a directory standing for the host's root.

const majors = { nvidia: 195, nvidiaUvm: 508 };

/** A container config as Proxmox writes it, with a snapshot, pending changes, a description and a byte outside ASCII. */
const CONF = [
    "#llm-two%3A SGLang Qwen3.6-27B \xe9",
    "arch: amd64",
    "cores: 32",
    "hostname: llm-two",
    "memory: 131072",
    "parent: before-sglang-0511",
    "lxc.cgroup2.devices.allow: c 195:* rwm",
    "lxc.cgroup2.devices.allow: c 508:* rwm",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
    "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
    "",
    "[before-sglang-0511]",
    "arch: amd64",
    "cores: 16",
    "snaptime: 1764460800",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "",
    "[pve:pending]",
    "swap: 8192",
    "delete: onboot",
    "",
].join("\n");
const SECTIONS = CONF.slice(CONF.indexOf("[before-sglang-0511]"));

/** What pct does while it changes the config: flock on the lock file (here for `seconds`), in a process group of its own. */
function holdLock(lock: string, seconds: number): ChildProcess {
    return spawn("flock", [lock, "sleep", String(seconds)], { stdio: "ignore", detached: true });
}

function release(holder: ChildProcess): void {
    try {
        process.kill(-holder.pid!, "SIGKILL");
    } catch {
        // already gone
    }
}

describe("the pct config file, edited under Proxmox's config lock", function () {
    this.timeout(20_000);
    let box: FakeBox;
    let root: string;
    const paths = () => pctConfigPaths(129, root);
    const writeConf = (text: string) => fs.writeFileSync(paths().config, Buffer.from(text, "latin1"));
    const readConf = () => fs.readFileSync(paths().config).toString("latin1");
    const passthrough = (gpus: number[]) => (text: string) => editPassthroughInPlace(text, 129, gpus, majors).text;

    beforeEach(() => {
        box = new FakeBox();
        root = path.join(box.dir, "root");
        fs.mkdirSync(path.join(root, "etc", "pve", "lxc"), { recursive: true });
        writeConf(CONF);
    });
    afterEach(() => box.destroy());

    it("uses pve-container's paths: the config in /etc/pve/lxc, the lock in /run/lock/lxc", () => {
        assert.deepEqual(pctConfigPaths(129), { config: "/etc/pve/lxc/129.conf", lock: "/run/lock/lxc/pve-config-129.lock" });
    });

    it("reads the file byte for byte", async () => {
        assert.equal(await readPctConfigFile(box, paths()), CONF);
    });

    it("keeps [snapshot] and [pve:pending] byte-identical through a passthrough change", async () => {
        const result = await editPctConfigFile(box, paths(), passthrough([0, 1]));
        assert.equal(result.changed, true);
        const after = readConf();
        assert.ok(after.endsWith(SECTIONS), after);
        assert.equal(
            after,
            CONF.replace(
                "create=file\n\n[before",
                "create=file\nlxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file\n\n[before",
            ),
        );
        assert.ok(after.startsWith("#llm-two%3A SGLang Qwen3.6-27B \xe9\n"));
    });

    it("writes nothing when nothing changes", async () => {
        const full = passthrough([0, 1])(CONF);
        writeConf(full);
        const mtime = fs.statSync(paths().config).mtimeMs;
        const result = await editPctConfigFile(box, paths(), passthrough([0, 1]));
        assert.equal(result.changed, false);
        assert.equal(fs.statSync(paths().config).mtimeMs, mtime);
        assert.equal(box.runs.length, 1, "one read, no write");
    });

    it("refuses a locked config, naming the lock, and leaves the file alone", async () => {
        const locked = CONF.replace("arch: amd64\n", "arch: amd64\nlock: backup\n");
        writeConf(locked);
        await assert.rejects(
            editPctConfigFile(box, paths(), passthrough([0])),
            (e: Error) => e instanceof PctLockedError && /locked \(backup\)/.test(e.message),
        );
        assert.equal(readConf(), locked);
    });

    it("waits for Proxmox's flock and fails when it is not released in time, without writing", async () => {
        fs.mkdirSync(path.dirname(paths().lock), { recursive: true });
        const holder = holdLock(paths().lock, 5);
        try {
            await new Promise((r) => setTimeout(r, 300));
            await assert.rejects(
                editPctConfigFile(box, paths(), passthrough([0, 1]), { lockTimeoutSeconds: 1 }),
                /cannot take Proxmox's config lock .*pve-config-129\.lock .* within 1 s/,
            );
            assert.equal(readConf(), CONF);
        } finally {
            release(holder);
        }
    });

    it("writes once the holder of the lock lets go", async () => {
        fs.mkdirSync(path.dirname(paths().lock), { recursive: true });
        const holder = holdLock(paths().lock, 1);
        try {
            await new Promise((r) => setTimeout(r, 300));
            const result = await editPctConfigFile(box, paths(), passthrough([0, 1]), { lockTimeoutSeconds: 5 });
            assert.equal(result.changed, true);
            assert.ok(readConf().includes("nvidia-uvm-tools"));
        } finally {
            release(holder);
        }
    });

    it("edits again when the file changed between the read and the write (like Proxmox's digest check)", async () => {
        let calls = 0;
        const result = await editPctConfigFile(box, paths(), (text) => {
            calls++;
            // The first time, someone else (pct set) changes the file after our read.
            if (calls === 1) writeConf(CONF.replace("cores: 32", "cores: 16"));
            return passthrough([0, 1])(text);
        });
        assert.equal(result.changed, true);
        assert.equal(calls, 2);
        const after = readConf();
        assert.match(after, /^cores: 16$/m, "the other writer's change is kept");
        assert.ok(after.includes("nvidia-uvm-tools"));
    });

    it("says when the config does not exist", async () => {
        fs.rmSync(paths().config);
        await assert.rejects(readPctConfigFile(box, paths()), /129\.conf does not exist on fake-box/);
    });
});
