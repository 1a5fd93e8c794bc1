import * as fs from "fs";
import { nowMs } from "./stats";

export interface TimedLine {
    /** When the bench saw the line (epoch ms); at most `pollMs` after it was written. */
    t: number;
    line: string;
}

/**
 * Follows a file that others append to (an engine's --event-log, sshd's log)
 * and stamps each complete line with the time it showed up. Polls every
 * `pollMs` (default 5 ms): the resolution of every latency the bench reports.
 * A file that does not exist yet is waited for.
 */
export class LineTail {
    readonly lines: TimedLine[] = [];
    private fd: number | null = null;
    private offset: number;
    private partial = "";
    private readonly timer: NodeJS.Timeout;
    private readonly buf = Buffer.alloc(1 << 20);

    constructor(
        readonly file: string,
        opts: { fromStart?: boolean; pollMs?: number } = {},
    ) {
        let size: number;
        try {
            size = fs.statSync(file).size;
        } catch {
            size = 0;
        }
        this.offset = opts.fromStart ? 0 : size;
        this.timer = setInterval(() => this.poll(), opts.pollMs ?? 5);
    }

    private poll(): void {
        if (this.fd === null) {
            try {
                this.fd = fs.openSync(this.file, "r");
            } catch {
                return;
            }
        }
        const t = nowMs();
        let text = "";
        for (;;) {
            const n = fs.readSync(this.fd, this.buf, 0, this.buf.length, this.offset);
            if (n <= 0) break;
            this.offset += n;
            text += this.buf.subarray(0, n).toString("utf8");
        }
        if (!text) return;
        const parts = (this.partial + text).split("\n");
        this.partial = parts.pop() ?? "";
        for (const line of parts) if (line !== "") this.lines.push({ t, line });
    }

    /** Reads what is left and stops following. */
    stop(): TimedLine[] {
        clearInterval(this.timer);
        this.poll();
        if (this.partial !== "") {
            this.lines.push({ t: nowMs(), line: this.partial });
            this.partial = "";
        }
        if (this.fd !== null) fs.closeSync(this.fd);
        this.fd = null;
        return this.lines;
    }
}
