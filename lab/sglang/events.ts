// What the simulated servers did, for tests and benchmarks: one JSON object a
// line in lab.json's eventsFile.
import * as fs from "fs";

export type SimulatorEventKind = "launched" | "argparse-error" | "startup-failed" | "http-up" | "ready" | "crashed" | "died" | "scheduler-died" | "stopped";

export interface SimulatorEvent {
    /** ISO time and epoch milliseconds. */
    time: string;
    epochMs: number;
    event: SimulatorEventKind;
    pid: number;
    host?: string;
    port?: number;
    /** e.g. the exception line for startup-failed / crashed. */
    detail?: string;
    /** systemd's INVOCATION_ID (the unit's run) when started by the container's systemd. */
    invocationId?: string;
    /** launched: whether this start ran the release's config layer or replayed its record (lab/sglang/sglang_lab_start_cache.py). */
    configLayer?: "ran" | "replayed";
}

export function appendEvent(file: string, e: Omit<SimulatorEvent, "time" | "epochMs" | "pid">): void {
    const now = Date.now();
    const full: SimulatorEvent = { time: new Date(now).toISOString(), epochMs: now, pid: process.pid, invocationId: process.env.INVOCATION_ID, ...e };
    try {
        fs.appendFileSync(file, JSON.stringify(full) + "\n");
    } catch {
        // the lab is being torn down
    }
}

export function readEvents(file: string): SimulatorEvent[] {
    let text: string;
    try {
        text = fs.readFileSync(file, "utf8");
    } catch {
        return [];
    }
    return text
        .split("\n")
        .filter(Boolean)
        .flatMap((l) => {
            try {
                return [JSON.parse(l) as SimulatorEvent];
            } catch {
                return [];
            }
        });
}
