// One lab for the lab's tests: started on first use in its own temporary
// directory and on its own loopback addresses (so a developer's lab can run
// beside it), stopped once after all tests.
import * as fs from "fs";
import * as http from "http";
import * as os from "os";
import * as path from "path";
import { ExecResult, LabInfo, labDown, labExec, labUp } from "../../lab/control";

export const ADDRESSES = {
    host: process.env.SGLANG_LAB_TEST_HOST ?? "127.0.102.5",
    container: process.env.SGLANG_LAB_TEST_CONTAINER ?? "127.0.101.29",
};

let labDir: string | undefined;
let started: Promise<LabInfo> | undefined;

export function testLabDir(): string {
    labDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "sglang-lab-test-"));
    return labDir;
}

/** The shared lab (brought up once; the first caller's hook needs a long timeout). */
export function lab(): Promise<LabInfo> {
    started ??= labUp({
        labDir: testLabDir(),
        hostAddress: ADDRESSES.host,
        containerAddress: ADDRESSES.container,
        startupSeconds: 1.5,
        gpuReleaseDelaySeconds: 1,
    });
    return started;
}

after(async function () {
    this.timeout(60_000);
    if (!started || !labDir) return;
    await started.catch(() => undefined);
    await labDown(labDir);
    fs.rmSync(labDir, { recursive: true, force: true });
});

export function exec(machine: "host" | "container", command: string, input?: string): Promise<ExecResult> {
    return labExec(machine, command, { labDir: testLabDir(), input, timeoutMs: 60_000 });
}

/** Runs a command that must succeed; fails with its output otherwise. */
export async function ok(machine: "host" | "container", command: string, input?: string): Promise<string> {
    const r = await exec(machine, command, input);
    if (r.code !== 0) throw new Error(`${machine}: '${command}' exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r.stdout;
}

/** Polls until `probe` returns a value (not undefined); fails after `timeoutMs` naming what it waited for. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 150): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const v = await probe();
            if (v !== undefined) return v;
        } catch (e) {
            last = e;
        }
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`);
        await new Promise((r) => setTimeout(r, everyMs));
    }
}

/**
 * A unit's journal in the container (-o cat) once `complete` says it holds what
 * the test asserts (times out, failing the test, otherwise): journald takes a
 * unit's stdout asynchronously and apart from systemd's own lines, so under load
 * they land a moment after the state change they describe.
 */
export async function journalOnce(unit: string, what: string, complete: (text: string) => boolean): Promise<string> {
    return waitFor(`${what} in ${unit}'s journal`, async () => {
        const text = await ok("container", `journalctl -u ${unit} -o cat --no-pager`);
        return complete(text) ? text : undefined;
    });
}

export interface HttpResult {
    status: number;
    body: string;
    headers: http.IncomingHttpHeaders;
}

export function httpRequest(
    url: string,
    opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpResult> {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method: opts.method ?? "GET", headers: opts.headers, timeout: opts.timeoutMs ?? 10_000 }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (d: string) => (body += d));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        });
        req.on("timeout", () => req.destroy(new Error(`timeout: ${url}`)));
        req.on("error", reject);
        req.end(opts.body);
    });
}

/** Installs a unit file in the container (as the stack does: through ssh, never by touching the lab dir). */
export async function installUnit(name: string, text: string): Promise<void> {
    await ok("container", `cat > /etc/systemd/system/${name}`, text);
}
