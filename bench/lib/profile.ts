import * as path from "path";
import type { RunResult } from "./engine";
import { sshdTimeline } from "./sshd";
import type { TimedLine } from "./tail";

/** One line of the profile hook's log (bench/profile-hook.js). */
interface HookRecord {
    pid: number;
    role: "program" | "provider" | "resolver" | "other";
    t: number;
    ev: "start" | "load" | "exit" | "rpc";
    method?: string;
    start?: number;
    error?: string;
    startedAt?: number;
    kind?: string;
    file?: string;
    ms?: number;
    nested?: boolean;
}

export interface ProfileStep {
    /** ms after scripts/pulumi.sh was spawned. */
    at: number;
    /** ms, when it is a span. */
    ms?: number;
    what: string;
}

export interface Profile {
    wallMs: number;
    steps: ProfileStep[];
    /** Aggregates, ms: see `profileBuckets`. */
    buckets: Record<string, number>;
}

const short = (urn?: string) => (urn ?? "").split("::").pop() ?? "";

/**
 * A timeline of one engine run: node processes (from the preload hook: start,
 * SDK / TypeScript / ts-node / project .ts loads, exit), engine events (as the
 * bench saw them in --event-log), SSH connections and commands (sshd log).
 */
export function buildProfile(r: RunResult, hookLog: string, sshdLog: string): Profile {
    const rel = (t: number) => Math.round(t - r.startMs);
    const steps: ProfileStep[] = [];
    const hook: HookRecord[] = (r.tails[hookLog] ?? []).flatMap((l: TimedLine) => {
        try {
            return [JSON.parse(l.line) as HookRecord];
        } catch {
            return [];
        }
    });
    const procs = new Map<number, { role: string; start: number; exit?: number; n: number }>();
    let providerN = 0;
    for (const h of hook) {
        if (h.ev === "start") {
            const n = h.role === "provider" ? ++providerN : 0;
            procs.set(h.pid, { role: h.role, start: h.startedAt ?? h.t, n });
            steps.push({ at: rel(h.startedAt ?? h.t), what: `node ${h.role}${n ? ` #${n}` : ""} (pid ${h.pid}) starts` });
        } else if (h.ev === "load" && !h.nested) {
            const p = procs.get(h.pid);
            const who = p ? `${p.role}${p.n ? ` #${p.n}` : ""}` : h.role;
            const what =
                h.kind === "project"
                    ? `loads ${path.basename(path.dirname(h.file ?? ""))}/${path.basename(h.file ?? "")} (${/\.ts$/.test(h.file ?? "") ? "transpile + " : ""}run, incl. its imports)`
                    : `loads ${h.kind}`;
            steps.push({ at: rel(h.t - (h.ms ?? 0)), ms: Math.round(h.ms ?? 0), what: `${who}: ${what}` });
        } else if (h.ev === "rpc") {
            const p = procs.get(h.pid);
            if (["handshake", "getPluginInfo", "cancel"].includes(h.method ?? "")) continue;
            steps.push({
                at: rel(h.start ?? h.t),
                ms: Math.round(h.ms ?? 0),
                what: `provider${p?.n ? ` #${p.n}` : ""}: ${h.method}${h.error ? ` (error: ${h.error})` : ""}`,
            });
        } else if (h.ev === "exit") {
            const p = procs.get(h.pid);
            if (p) p.exit = h.t;
            steps.push({ at: rel(h.t), what: `node ${h.role} (pid ${h.pid}) exits` });
        }
    }
    const pre = new Map<string, number>();
    let refreshEnd = 0;
    let firstEvent = Infinity;
    let serializations = 0;
    for (const e of r.events) {
        firstEvent = Math.min(firstEvent, e.t);
        if (e.type === "preludeEvent") steps.push({ at: rel(e.t), what: "engine: prelude (CLI up, stack and backend loaded)" });
        if (e.type === "resourcePreEvent" && e.urn) pre.set(`${e.op}:${e.urn}`, e.t);
        if (e.type === "resOutputsEvent" && e.urn && /pulumi-nodejs:dynamic/.test(e.urn)) {
            const s = pre.get(`${e.op}:${e.urn}`);
            steps.push({ at: rel(s ?? e.t), ms: s ? Math.round(e.t - s) : undefined, what: `engine: ${e.op} ${short(e.urn)}` });
            if (e.op === "refresh") refreshEnd = Math.max(refreshEnd, e.t);
        }
        if (e.type === "diagnosticEvent" && /Found free variables/.test(e.message ?? "")) serializations++;
        if (e.type === "summaryEvent") steps.push({ at: rel(e.t), what: "engine: summary" });
    }
    const ssh = sshdTimeline(r.tails[sshdLog] ?? []);
    for (const a of ssh.accepted) steps.push({ at: rel(a.t), what: `ssh: connection from port ${a.port} authenticated` });
    for (const s of ssh.sessions) {
        steps.push({ at: rel(s.start), ms: s.end ? Math.round(s.end - s.start) : undefined, what: `ssh: command (port ${s.port} id ${s.id})` });
    }
    steps.push({ at: Math.round(r.wallMs), what: "scripts/pulumi.sh exits" });
    steps.sort((a, b) => a.at - b.at);

    const buckets: Record<string, number> = { wall: Math.round(r.wallMs) };
    const first = [...procs.values()].reduce((m, p) => Math.min(m, p.start), Infinity);
    if (Number.isFinite(first)) buckets["spawn -> first engine-started node process (pulumi.sh, stack check, CLI start, plugin host)"] = rel(first);
    const program = [...procs.values()].find((p) => p.role === "program");
    if (program) {
        buckets["program process (start -> exit)"] = Math.round((program.exit ?? r.endMs) - program.start);
        if (program.exit !== undefined) buckets["program exit -> pulumi.sh exit"] = Math.round(r.endMs - program.exit);
    }
    for (const p of procs.values()) {
        if (p.role !== "provider") continue;
        const loads = hook.filter((h) => procs.get(h.pid) === p && h.ev === "load" && !h.nested);
        const lastLoad = loads.reduce((m, h) => Math.max(m, h.t), p.start);
        buckets[`provider #${p.n}: start -> its last module loaded`] = Math.round(lastLoad - p.start);
    }
    const sum = (role: string, kind: string) =>
        Math.round(hook.filter((h) => h.role === role && h.ev === "load" && !h.nested && h.kind === kind).reduce((s, h) => s + (h.ms ?? 0), 0));
    for (const role of ["program", "provider"]) {
        for (const kind of ["sdk", "typescript", "ts-node", "project"]) {
            const v = sum(role, kind);
            if (v > 0) buckets[`${role}s: load ${kind === "project" ? "project code (incl. its imports)" : kind}`] = v;
        }
    }
    for (const method of ["read", "check", "diff", "create", "update", "checkConfig", "diffConfig"]) {
        const calls = hook.filter((h) => h.ev === "rpc" && h.method === method);
        if (calls.length === 0) continue;
        buckets[`provider ${method} calls (count)`] = calls.length;
        buckets[`provider ${method} calls: longest`] = Math.round(Math.max(...calls.map((h) => h.ms ?? 0)));
    }
    if (ssh.accepted.length) buckets["ssh connections"] = ssh.accepted.length;
    if (ssh.sessions.length) {
        buckets["ssh commands"] = ssh.sessions.length;
        buckets["ssh command time (sum)"] = Math.round(ssh.sessions.reduce((s, x) => s + ((x.end ?? x.start) - x.start), 0));
    }
    if (refreshEnd) buckets["spawn -> refresh done"] = rel(refreshEnd);
    if (serializations) buckets["dynamic provider closures serialized (count)"] = serializations;
    return { wallMs: r.wallMs, steps, buckets };
}

/** The profile as the bench prints it under the table. */
export function profileText(p: Profile, name: string): string {
    const out = [`Profile of one no-op preview --refresh (${name}), ${(p.wallMs / 1000).toFixed(2)} s:`];
    for (const [k, v] of Object.entries(p.buckets)) out.push(`  ${k}: ${v}${/count|connections|commands$/.test(k) ? "" : " ms"}`);
    out.push("  timeline (ms after spawn):");
    for (const s of p.steps) out.push(`    ${String(s.at).padStart(6)}${s.ms !== undefined ? ` +${String(s.ms).padStart(5)}` : "       "}  ${s.what}`);
    return out.join("\n");
}
