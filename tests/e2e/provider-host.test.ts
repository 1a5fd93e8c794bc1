import * as assert from "node:assert/strict";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { hostStatuses, stopHosts } from "../../providers/host/control";
import { projectCopy } from "./deployment";

/* eslint-disable @typescript-eslint/no-require-imports */
const provrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const emptyproto = require("google-protobuf/google/protobuf/empty_pb");
/* eslint-enable @typescript-eslint/no-require-imports */

const repo = path.resolve(__dirname, "..", "..");

/** What the engine gets from the plugin: the port on its first stdout line. */
function launch(bin: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ proc: ChildProcess; port: number; stderr: () => string }> {
    // Its own process group, as the engine starts plugins (and kills the group).
    const proc = spawn(path.join(bin, "pulumi-resource-pulumi-nodejs"), ["127.0.0.1:1"], { cwd, env, detached: true });
    let out = "";
    let err = "";
    proc.stderr!.on("data", (d) => (err += d));
    return new Promise((resolve, reject) => {
        proc.stdout!.on("data", (d) => {
            out += d;
            const m = /^(\d+)\n/.exec(out);
            if (m) resolve({ proc, port: Number(m[1]), stderr: () => err });
        });
        proc.on("exit", (code) => reject(new Error(`plugin exited ${code} before printing a port: ${err}`)));
    });
}

function killGroup(proc: ChildProcess): void {
    try {
        process.kill(-proc.pid!, "SIGKILL");
    } catch {
        /* gone */
    }
}

function pluginVersion(port: number): Promise<string> {
    const c = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    return new Promise((resolve, reject) =>
        c.getPluginInfo(new emptyproto.Empty(), (e: Error | null, info: { getVersion(): string }) => {
            c.close();
            if (e) reject(e);
            else resolve(info.getVersion());
        }),
    );
}

/** The pid serving a port on 127.0.0.1 (from /proc: the owner of the listening socket's inode). */
function pidListeningOn(port: number): number | undefined {
    const hex = port.toString(16).toUpperCase().padStart(4, "0");
    const line = fs
        .readFileSync("/proc/net/tcp", "utf8")
        .split("\n")
        .find((l) => l.includes(`:${hex} `) && / 0A /.test(l));
    const inode = line?.trim().split(/\s+/)[9];
    if (!inode) return undefined;
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
            for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
                if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return Number(pid);
            }
        } catch {
            /* exited or not ours */
        }
    }
    return undefined;
}

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, "utf8"));

async function until(what: string, ok: () => boolean, limitMs = 15_000): Promise<void> {
    const end = Date.now() + limitMs;
    while (!ok()) {
        if (Date.now() > end) throw new Error(`gave up waiting: ${what}`);
        await new Promise((r) => setTimeout(r, 50));
    }
}

describe("warm provider host (the dynamic-provider plugin the engine starts)", function () {
    this.timeout(120_000);
    let bin: string;
    let project: string;
    let runtime: string;
    let env: NodeJS.ProcessEnv;
    const procs: ChildProcess[] = [];

    before(() => {
        bin = execFileSync("bash", [path.join(repo, "scripts", "engine.sh")], { encoding: "utf8" }).trim();
        project = projectCopy("sglang-serve-e2e-host-");
        execFileSync("node", [path.join(repo, "scripts", "build-program.js"), project]);
        runtime = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-e2e-runtime-"));
        env = {
            ...process.env,
            XDG_RUNTIME_DIR: runtime,
            PULUMI_CONFIG_PASSPHRASE: "engine-run passphrase",
            SGLANG_SERVE_API_KEY: "a CI step's secret",
            SGLANG_SERVE_PROVIDER_HOST: "",
        };
    });
    afterEach(() => procs.splice(0).forEach(killGroup));
    after(() => {
        fs.rmSync(project, { recursive: true, force: true });
        fs.rmSync(runtime, { recursive: true, force: true });
    });

    it("serves each engine run from one host process that outlives the plugins", async () => {
        const a = await launch(bin, project, env);
        const b = await launch(bin, project, env);
        procs.push(a.proc, b.proc);
        assert.notEqual(a.port, b.port, "each engine run gets a server of its own");
        assert.equal(await pluginVersion(a.port), "3.248.0");
        assert.equal(await pluginVersion(b.port), "3.248.0");
        const host = pidListeningOn(a.port)!;
        assert.ok(host && host !== a.proc.pid && host !== b.proc.pid, "the server lives in the host, not in the plugin");
        assert.equal(pidListeningOn(b.port), host);

        killGroup(a.proc);
        killGroup(b.proc);
        await until("the host drops the killed plugins' servers", () => pidListeningOn(a.port) === undefined && pidListeningOn(b.port) === undefined);
        assert.ok(alive(host), "the host stays for the next engine run");
        const c = await launch(bin, project, env);
        procs.push(c.proc);
        assert.equal(pidListeningOn(c.port), host);
    });

    it("starts one host when several engine runs start at once", async () => {
        await stopHosts({ dir: path.join(runtime, "sglang-serve") });
        const runs = await Promise.all([1, 2, 3].map(() => launch(bin, project, env)));
        procs.push(...runs.map((r) => r.proc));
        const hosts = new Set(runs.map((r) => pidListeningOn(r.port)));
        assert.equal(hosts.size, 1, `one host for all three runs, got pids ${[...hosts].join(", ")}`);
        assert.equal((await hostStatuses(path.join(runtime, "sglang-serve")))[0]!.engineConnections, 3);
    });

    it("keeps its socket to the user and the engine run's passphrase and secrets out of its environment", async () => {
        const a = await launch(bin, project, env);
        procs.push(a.proc);
        const host = pidListeningOn(a.port)!;
        const dir = path.join(runtime, "sglang-serve");
        assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
        const sockets = fs.readdirSync(dir).filter((f) => f.endsWith(".sock"));
        assert.equal(sockets.length, 1);
        assert.equal(fs.statSync(path.join(dir, sockets[0])).mode & 0o077, 0);
        const environ = fs.readFileSync(`/proc/${host}/environ`, "utf8").split("\0");
        assert.ok(environ.some((kv) => kv.startsWith("PATH=")));
        assert.ok(!environ.some((kv) => kv.startsWith("PULUMI_CONFIG_PASSPHRASE")), "no passphrase in the host's environment");
        assert.ok(!environ.some((kv) => kv.startsWith("SGLANG_SERVE_API_KEY")), "no secret from the engine run's environment");
    });

    it("refuses a runtime directory other users can enter, and runs the provider in the plugin process instead", async () => {
        const shared = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-e2e-shared-"));
        fs.mkdirSync(path.join(shared, "sglang-serve"), { mode: 0o755 });
        fs.chmodSync(path.join(shared, "sglang-serve"), 0o755);
        try {
            const a = await launch(bin, project, { ...env, XDG_RUNTIME_DIR: shared });
            procs.push(a.proc);
            assert.match(a.stderr(), /is not a directory private to uid \d+/);
            assert.equal(pidListeningOn(a.port), a.proc.pid, "served by the plugin process itself");
            assert.deepEqual(fs.readdirSync(path.join(shared, "sglang-serve")), [], "no socket in the shared directory");
        } finally {
            fs.rmSync(shared, { recursive: true, force: true });
        }
    });

    it("runs a provider process per engine run with SGLANG_SERVE_PROVIDER_HOST=process, and names the variable when it is wrong", async () => {
        const a = await launch(bin, project, { ...env, SGLANG_SERVE_PROVIDER_HOST: "process" });
        procs.push(a.proc);
        assert.equal(pidListeningOn(a.port), a.proc.pid);
        assert.equal(await pluginVersion(a.port), "3.248.0");

        await assert.rejects(launch(bin, project, { ...env, SGLANG_SERVE_PROVIDER_HOST: "sometimes" }), /SGLANG_SERVE_PROVIDER_HOST="sometimes": use warm \(the default\) or process/);
    });

    it("answers status (its project, its engine runs) and stops when asked", async () => {
        const a = await launch(bin, project, env);
        procs.push(a.proc);
        const host = pidListeningOn(a.port)!;
        const dir = path.join(runtime, "sglang-serve");
        const [status, ...others] = await hostStatuses(dir);
        assert.equal(others.length, 0);
        assert.equal(status!.pid, host);
        assert.equal(status!.root, fs.realpathSync(project));
        assert.equal(status!.engineConnections, 1);
        assert.equal(await stopHosts({ dir, root: "/somewhere/else" }), 0, "another project's host is left alone");
        assert.ok(alive(host));
        assert.equal(await stopHosts({ dir, root: project }), 1);
        await until("the host exits", () => !alive(host));
        assert.deepEqual(await hostStatuses(dir), []);
    });

    it("stops once its project directory is gone", async () => {
        const a = await launch(bin, project, env);
        procs.push(a.proc);
        const host = pidListeningOn(a.port)!;
        killGroup(a.proc);
        fs.renameSync(path.join(project, "Pulumi.yaml"), path.join(project, "Pulumi.yaml.away"));
        try {
            await until("the host exits", () => !alive(host));
            const dir = path.join(runtime, "sglang-serve");
            assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith(".sock") || f.endsWith(".log")), [], "socket and log removed");
        } finally {
            fs.renameSync(path.join(project, "Pulumi.yaml.away"), path.join(project, "Pulumi.yaml"));
        }
    });
});
