// One lab for the lab's tests of a test file: started on first use in its own
// temporary directory and on its own loopback addresses (so a developer's lab,
// and the labs of the test files other mocha workers run at the same time, can
// run beside it), stopped after the file's tests by the root hook
// (tests/root-hooks.ts; mocha runs it once per file in parallel mode).
import * as fs from "fs";
import * as http from "http";
import * as os from "os";
import * as path from "path";
import { ExecResult, LabInfo, labDown, labExec, labUp } from "../../lab/control";
import { RemoteHost } from "../../remote/remote-host";
import { SshPool } from "../../remote/ssh-pool";

/**
 * A lab test file's own second octet: its place among tests/lab's test files
 * (1-based, in name order). Every other lab on this machine uses 127.0.x.x, so
 * files that other mocha workers run at the same time never share an address,
 * and a file's addresses are the same in every run: the lab's start cache
 * (lab/sglang/sglang_lab_start_cache.py) keys a start on its command line,
 * which holds the address, so an address that moved with the mocha worker
 * (as it did) missed the cache whenever a file landed on another worker.
 */
export function labTestOctet(file: string): number {
    const place = labTestPlace(file);
    if (place < 0) throw new Error(`${file}: not a test file in ${__dirname}; the lab fixture gives addresses to those only`);
    return 1 + place;
}

/** `file`'s place among tests/lab's test files in name order (from 0), or -1 for any other file. */
function labTestPlace(file: string): number {
    if (path.dirname(path.resolve(file)) !== __dirname) return -1;
    const files = fs
        .readdirSync(__dirname)
        .filter((f) => f.endsWith(".test.ts"))
        .sort();
    return files.indexOf(path.basename(file));
}

let testFile: string | undefined;

/**
 * The files whose tests run now (tests/root-hooks.ts, before them): in mocha's
 * parallel mode, one; in a serial run, all of them, and they share one lab
 * (the root hook stops it after the last), which takes the addresses of the
 * first of them in tests/lab.
 */
export function useTestFiles(files: readonly string[]): void {
    testFile = files.find((f) => labTestPlace(f) >= 0);
}

/** The current lab test file's lab addresses (SGLANG_LAB_TEST_HOST and SGLANG_LAB_TEST_CONTAINER override them). */
export function labAddresses(): { host: string; container: string } {
    if (!testFile) throw new Error(`lab fixture: no test file of ${__dirname} is running; its labs are for those files' tests`);
    const octet = labTestOctet(testFile);
    return {
        host: process.env.SGLANG_LAB_TEST_HOST ?? `127.${octet}.102.5`,
        container: process.env.SGLANG_LAB_TEST_CONTAINER ?? `127.${octet}.101.29`,
    };
}

let labDir: string | undefined;
let started: Promise<LabInfo> | undefined;

export function testLabDir(): string {
    labDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "sglang-lab-test-"));
    return labDir;
}

/** The file's lab (brought up once; the first caller's hook needs a long timeout). */
export function lab(): Promise<LabInfo> {
    if (!started) {
        const addresses = labAddresses();
        started = labUp({
            labDir: testLabDir(),
            hostAddress: addresses.host,
            containerAddress: addresses.container,
            startupSeconds: 1.5,
            gpuReleaseDelaySeconds: 1,
        });
    }
    return started;
}

/** The stack's own RemoteHost for the lab's container 129: SSH to the lab's host (its pinned key), then `pct exec`. */
export function labContainerRemote(info: LabInfo, pool: SshPool): RemoteHost {
    return new RemoteHost({
        pool,
        topology: "pct-exec",
        vmid: info.vmid,
        target: {
            address: info.host.address,
            port: info.host.sshPort,
            user: "root",
            hostKey: info.host.hostKey,
            privateKey: fs.readFileSync(info.clientKeyPath, "utf8"),
        },
    });
}

/** Stops the lab if this file started one (tests/root-hooks.ts, after each file's tests). */
export async function stopTestLab(): Promise<void> {
    const [dir, running] = [labDir, started];
    labDir = undefined;
    started = undefined;
    if (!running || !dir) return;
    await running.catch(() => undefined);
    await labDown(dir);
    fs.rmSync(dir, { recursive: true, force: true });
}

export function exec(machine: "host" | "container", command: string, input?: string): Promise<ExecResult> {
    return labExec(machine, command, { labDir: testLabDir(), input, timeoutMs: 60_000 });
}

/** Runs a command that must succeed; fails with its output otherwise. */
export async function ok(machine: "host" | "container", command: string, input?: string): Promise<string> {
    const r = await exec(machine, command, input);
    if (r.code !== 0) throw new Error(`${machine}: '${command}' exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r.stdout;
}

/**
 * How long a lab wait gives up after: a liveness deadline, not a timing
 * assertion. The simulator's Python start and systemd's reaction share 2 cores
 * with the rest of a parallel test run, so a deadline of a few seconds fails
 * under load although nothing is wrong; timings belong in `npm run bench`.
 */
export const LAB_WAIT_MS = 90_000;

/**
 * Runs `command` (one simple command) in the container until its output shows
 * `pattern` (grep -E), it exits, or `seconds` pass, then sends it SIGINT as a
 * Ctrl-C would: the test waits for what it looks for, not a fixed time that a
 * loaded machine can miss. Output to a file is block-buffered, so the command
 * runs line-buffered (stdbuf for C stdio, PYTHONUNBUFFERED for Python) and the
 * lines show as they are written; `timeout` ends it after `seconds`. Its stdout, stderr and exit code.
 */
export function runUntilOutput(command: string, pattern: string, seconds = LAB_WAIT_MS / 1000): Promise<ExecResult> {
    const quoted = `'${pattern.replace(/'/g, `'\\''`)}'`;
    return labExec(
        "container",
        [
            "out=$(mktemp) err=$(mktemp)",
            // A command started with & in a script ignores SIGINT; timeout (which handles it) runs it and passes the signal on.
            `PYTHONUNBUFFERED=1 timeout -s INT ${seconds} stdbuf -oL -eL ${command} >"$out" 2>"$err" &`,
            "pid=$!",
            `while kill -0 "$pid" 2>/dev/null && ! grep -qE ${quoted} "$out" "$err"; do sleep 0.1; done`,
            'kill -INT "$pid" 2>/dev/null',
            'wait "$pid"; code=$?',
            'cat "$out"; cat "$err" >&2; rm -f "$out" "$err"',
            "exit $code",
        ].join("\n"),
        { labDir: testLabDir(), timeoutMs: (seconds + 30) * 1000 },
    );
}

/** Polls until `probe` returns a value (not undefined); fails after `timeoutMs` naming what it waited for. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = LAB_WAIT_MS, everyMs = 150): Promise<T> {
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
