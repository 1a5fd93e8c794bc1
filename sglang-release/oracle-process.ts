// One `oracle.py --serve` process: the release imported once, each batch of
// cases answered by children it forks (oracle.py). runOracle (oracle.ts) sends
// every call that arrives while one runs (for the same release and
// environment) to it, so calls made together (the checks of several servers in
// one preview, a test's requests) pay the release's import once instead of
// once a call.
//
// It lives while it has batches, and for a while after the last (the batch's
// lingerMs): a call in that time is sent to it too (the next step of a test,
// the next test file in the same worker). Then its stdin is closed and it
// exits; a call after that starts a new process. While it has no batch it
// never keeps this process alive (its handles are unreferenced), and it ends
// when its stdin does, so it never outlives this process. One that exits
// while this process runs is reaped by it (its CPU is this process's
// children's); one whose parent exits first is reaped by init.
import { ChildProcessWithoutNullStreams, spawn } from "child_process";

/** A child process or one of its pipes: whether it keeps this process alive. */
interface Ref {
    ref(): void;
    unref(): void;
}

/** What the process's stderr last said, kept for an error (its last 64 KiB). */
const STDERR_KEPT = 64 * 1024;

export interface Batch {
    /** JSON lines, one a case. */
    cases: readonly string[];
    /** Cases run at once; left out: oracle.py's --jobs (the CPU count). */
    jobs?: number;
    /** Per case; left out: oracle.py's --timeout (120 s). */
    timeoutSeconds?: number;
    /** How long the process waits for another batch after this one, if none is queued (Infinity: until endIfIdle, or this process's end). */
    lingerMs: number;
}

export class OracleProcess {
    private readonly child: ChildProcessWithoutNullStreams;
    private readonly lines: string[] = [];
    private partial = "";
    private stderr = "";
    /** Why the process is gone (set once it has ended). */
    private gone?: string;
    private waiting?: { count: number; resolve: (lines: string[]) => void; reject: (e: Error) => void };
    /** Batches are answered one after another: the next is sent when the last is answered. */
    private queue: Promise<unknown> = Promise.resolve();
    private queued = 0;
    private lingering?: NodeJS.Timeout;
    /** Set by endIfIdle while a batch runs: stdin is closed once the last is answered. */
    private ending = false;
    /** False once its stdin is closed (or it ended): a new call needs a new process. */
    accepting = true;

    /** @param describe names the process in errors (`oracle.py --version 0.5.11`) */
    constructor(
        private readonly describe: string,
        command: string,
        args: readonly string[],
        env: NodeJS.ProcessEnv,
    ) {
        this.child = spawn(command, [...args], { stdio: ["pipe", "pipe", "pipe"], env });
        this.child.stdout.setEncoding("utf8").on("data", (d: string) => this.received(d));
        this.child.stderr.setEncoding("utf8").on("data", (d: string) => (this.stderr = (this.stderr + d).slice(-STDERR_KEPT)));
        this.child.on("error", (e) => this.ended(`could not start: ${e.message}`));
        this.child.on("close", (code, signal) => this.ended(code === 0 ? "" : `exit ${code ?? signal}`));
        // A process that ended before reading its input is reported by its end, not as EPIPE.
        this.child.stdin.on("error", () => undefined);
    }

    /** The batch's result lines, in order; rejects naming the process and its stderr if it ends first. */
    async run(batch: Batch): Promise<string[]> {
        if (this.queued++ === 0) this.hold(true);
        clearTimeout(this.lingering);
        const answered = this.queue.then(() => this.send(batch));
        this.queue = answered.catch(() => undefined);
        try {
            return await answered;
        } finally {
            if (--this.queued === 0) this.linger(batch.lingerMs);
        }
    }

    private send(batch: Batch): Promise<string[]> {
        if (this.gone !== undefined) return Promise.reject(this.failure());
        if (batch.cases.length === 0) return Promise.resolve([]);
        return new Promise<string[]>((resolve, reject) => {
            this.waiting = { count: batch.cases.length, resolve, reject };
            const header = JSON.stringify({ cases: batch.cases.length, jobs: batch.jobs, timeout: batch.timeoutSeconds });
            this.child.stdin.write(`${header}\n${batch.cases.join("\n")}\n`);
            this.deliver();
        });
    }

    /** Closes stdin now if no batch is queued, else once the last is answered: the process then ends. */
    endIfIdle(): void {
        if (this.queued > 0) this.ending = true;
        else if (this.gone === undefined && this.accepting) this.close();
    }

    /** No batch queued: close stdin after `ms` unless one comes; meanwhile this process may exit. */
    private linger(ms: number): void {
        this.hold(false);
        if (this.gone !== undefined) return;
        if (ms <= 0 || this.ending) this.close();
        else if (ms !== Infinity) this.lingering = setTimeout(() => this.close(), ms).unref();
    }

    private close(): void {
        clearTimeout(this.lingering);
        this.accepting = false;
        this.child.stdin.end();
    }

    /** Keeps this process alive while a batch is queued, and only then. */
    private hold(busy: boolean): void {
        for (const handle of [this.child, this.child.stdin, this.child.stdout, this.child.stderr] as unknown as Ref[]) {
            if (busy) handle.ref();
            else handle.unref();
        }
    }

    private received(data: string): void {
        const parts = (this.partial + data).split("\n");
        this.partial = parts.pop()!;
        this.lines.push(...parts.filter((l) => l !== ""));
        this.deliver();
    }

    private deliver(): void {
        const w = this.waiting;
        if (!w || this.lines.length < w.count) return;
        this.waiting = undefined;
        w.resolve(this.lines.splice(0, w.count));
    }

    /** `why`: empty for a clean exit (stdin closed, exit 0). */
    private ended(why: string): void {
        if (this.gone !== undefined) return;
        this.accepting = false;
        clearTimeout(this.lingering);
        this.gone = why;
        const w = this.waiting;
        this.waiting = undefined;
        w?.reject(this.failure());
    }

    private failure(): Error {
        const why = this.gone || "ended";
        const answered = this.lines.length > 0 ? ` after ${this.lines.length} result(s) of the batch` : "";
        return new Error(`${this.describe} failed (${why})${answered}:\n${this.stderr}`);
    }
}
