// /health watched from outside the stack, as a client of the server sees it:
// every answer (or failure) with its time, so a rollout's downtime is measured
// by what a client got, not by what the stack or the simulator says.
import { httpGetJson } from "../../remote/probe";
import { nowMs } from "./stats";

export interface HealthSample {
    t: number;
    ok: boolean;
}

/** The longest stretch with no 200 between two 200s: the old server's last and the new one's first. */
export interface HealthGap {
    lastOk: number;
    firstOk: number;
}

export class HealthWatch {
    readonly samples: HealthSample[] = [];
    private running = false;
    private loop: Promise<void> = Promise.resolve();

    constructor(
        private readonly url: string,
        private readonly intervalMs = 50,
        /** How long one GET may take before it counts as failed. */
        private readonly timeoutMs = 1000,
    ) {}

    start(): void {
        this.running = true;
        this.loop = (async () => {
            while (this.running) {
                const r = await httpGetJson(this.url, { timeoutMs: this.timeoutMs });
                this.samples.push({ t: nowMs(), ok: "status" in r && r.status === 200 });
                await new Promise((resolve) => setTimeout(resolve, this.intervalMs));
            }
        })();
    }

    async stop(): Promise<void> {
        this.running = false;
        await this.loop;
    }

    gap(): HealthGap | undefined {
        return longestGap(this.samples);
    }
}

/** Pure: the longest run of failed samples with a 200 on each side. */
export function longestGap(samples: readonly HealthSample[]): HealthGap | undefined {
    let best: HealthGap | undefined;
    let lastOk: number | undefined;
    let down = false;
    for (const s of samples) {
        if (!s.ok) {
            if (lastOk !== undefined) down = true;
            continue;
        }
        if (down && lastOk !== undefined && (!best || s.t - lastOk > best.firstOk - best.lastOk)) best = { lastOk, firstOk: s.t };
        lastOk = s.t;
        down = false;
    }
    return best;
}
