import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
    DriftReport,
    driftChanges,
    driftReport,
    EngineEvent,
    engineErrors,
    formatCell,
    formatDriftTable,
    parseDigest,
    parseEventLog,
    PreviewDigest,
    RESOURCE_FIELD,
    resourceNameOf,
    resourceTypeOf,
} from "../../core/drift-report";
import { maskSecretAssignments } from "../../core/redact";
import { parseArgs, runDrift } from "../../scripts/drift";

// Fixtures (bottom of this file) are what engine v3.248.0 printed for
// `refresh --preview-only --expect-no-changes --json --event-log ...` against
// the lab, after `up` of the kpro5 config (plus container.cores: 32 and an
// apiKey) and one hand change on the box each. Trimmed: the serialized
// provider code (`__provider`) and source positions are elided, and only the
// resources a test reads are kept; the rest is as the engine wrote it.

const UNIT = "qwen-unit";
const UNIT_TYPE = "pulumi-nodejs:dynamic/sglang-serve:SystemdService";
const CT_CONFIG = "ct129-config";

function jsonLines(events: readonly EngineEvent[]): string {
    return events.map((e) => JSON.stringify(e)).join("\n") + "\n";
}

function fieldsOf(report: DriftReport | ReturnType<typeof driftChanges>, resource: string): string[] {
    const changes = Array.isArray(report) ? report : report.changes;
    return changes.filter((c) => c.resource === resource).map((c) => c.field);
}

describe("drift report: the engine's JSON", () => {
    it("reads the event log line by line and drops a torn last line", () => {
        const text = jsonLines(FLAG_AND_CORES_EVENTS) + '{"sequence":99,"resOutputsEv';
        const events = parseEventLog(text);
        assert.equal(events.length, FLAG_AND_CORES_EVENTS.length);
        assert.deepEqual(events[0], FLAG_AND_CORES_EVENTS[0]);
    });

    it("parses the digest, and gives undefined when the engine printed none", () => {
        assert.deepEqual(parseDigest(JSON.stringify(CLEAN_DIGEST, null, 4) + "\n"), CLEAN_DIGEST);
        assert.equal(parseDigest(""), undefined);
        assert.equal(parseDigest("{ torn"), undefined);
    });

    it("shows that the digest alone keeps stale states for dynamic providers (why the event log is read)", () => {
        const step = FLAG_AND_CORES_DIGEST.steps!.find((s) => s.urn.endsWith(`::${UNIT}`))!;
        assert.equal(step.op, "refresh");
        assert.deepEqual(step.newState, step.oldState);
        assert.deepEqual(FLAG_AND_CORES_DIGEST.changeSummary, { same: 7, update: 2 });
        assert.deepEqual(driftChanges({ digest: FLAG_AND_CORES_DIGEST }), []);
    });

    it("still reports drift from the digest alone when the engine exits 7, saying what it cannot show", () => {
        const report = driftReport("kpro5", { digest: FLAG_AND_CORES_DIGEST, exitCode: 7 });
        assert.equal(report.drift, true);
        assert.equal(report.changes.length, 1);
        assert.equal(report.changes[0].field, "(not shown)");
        assert.match(String(report.changes[0].actual), /update 2/);
    });

    it("names the resource and its type from a real URN", () => {
        const urn = "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit";
        assert.equal(resourceNameOf(urn), UNIT);
        assert.equal(resourceTypeOf(urn), UNIT_TYPE);
    });
});

describe("drift report: rows from a refresh", () => {
    it("reports a hand-edited flag and a container setting changed in Proxmox, field by field", () => {
        const report = driftReport("kpro5", { digest: FLAG_AND_CORES_DIGEST, events: FLAG_AND_CORES_EVENTS, exitCode: 7 });
        assert.equal(report.drift, true);
        assert.deepEqual(report.changes, [
            { resource: CT_CONFIG, type: "pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig", field: "settings.cores", declared: 32, actual: 16 },
            { resource: UNIT, type: UNIT_TYPE, field: "flags.--mem-fraction-static", declared: "0.88", actual: "0.80" },
            { resource: UNIT, type: UNIT_TYPE, field: "liveArgs.memFractionStatic", declared: 0.88, actual: 0.8 },
            { resource: UNIT, type: UNIT_TYPE, field: "unitText", declared: "--mem-fraction-static 0.88", actual: "--mem-fraction-static 0.80" },
        ]);
    });

    it("leaves out resources the refresh found unchanged", () => {
        const changes = driftChanges({ events: FLAG_AND_CORES_EVENTS });
        assert.deepEqual([...new Set(changes.map((c) => c.resource))], [CT_CONFIG, UNIT]);
        assert.ok(FLAG_AND_CORES_EVENTS.some((e) => e.resOutputsEvent?.metadata.op === "same"));
    });

    it("reports a stopped service as activeState, and a server map gone to null as one row", () => {
        const changes = driftChanges({ events: STOPPED_EVENTS });
        assert.deepEqual(fieldsOf(changes, UNIT), ["activeState", "liveArgs"]);
        assert.deepEqual(changes[0], { resource: UNIT, type: UNIT_TYPE, field: "activeState", declared: "active", actual: "inactive" });
        assert.equal(changes[1].actual, null);
    });

    it("ignores the preview annotation `restart` and the serialized provider", () => {
        const meta = SECRET_EVENTS[0].resOutputsEvent!.metadata;
        assert.notDeepEqual(meta.old!.inputs!.restart, meta.new!.inputs!.restart);
        const fields = driftChanges({ events: SECRET_EVENTS }).map((c) => c.field);
        assert.ok(!fields.some((f) => f.includes("restart") || f.includes("__provider")), fields.join());
    });

    it("reports a secret changed on the box as one masked row naming the secret fields", () => {
        const report = driftReport("kpro5", { events: SECRET_EVENTS, exitCode: 7 });
        assert.deepEqual(report.changes, [
            {
                resource: UNIT,
                type: UNIT_TYPE,
                field: "(secret: one of apiKey, environmentFile, secretsHash)",
                declared: "[secret]",
                actual: "[secret]",
            },
        ]);
    });

    it("reports a unit deleted outside the stack from the digest's delete step", () => {
        const step = GONE_DIGEST.steps!.find((s) => s.op === "delete")!;
        assert.equal(step.newState, undefined);
        assert.deepEqual(driftReport("kpro5", { digest: GONE_DIGEST, exitCode: 7 }).changes, [
            { resource: UNIT, type: UNIT_TYPE, field: RESOURCE_FIELD, declared: "exists", actual: "missing (deleted outside the stack)" },
        ]);
    });

    it("reports no drift for a clean refresh", () => {
        assert.deepEqual(driftReport("kpro5", { digest: CLEAN_DIGEST, exitCode: 0 }), { stack: "kpro5", drift: false, changes: [] });
        assert.deepEqual(driftReport("kpro5", { digest: CLEAN_DIGEST }), { stack: "kpro5", drift: false, changes: [] });
    });

    it("judges drift from the change summary when no exit code is given", () => {
        assert.equal(driftReport("kpro5", { digest: FLAG_AND_CORES_DIGEST }).drift, true);
    });

    it("tolerates steps without oldState or newState", () => {
        const urn = "urn:pulumi:kpro5::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts";
        const digest: PreviewDigest = {
            steps: [
                { op: "update", urn },
                { op: "update", urn: urn.replace("kpro5-facts", "b"), newState: { outputs: { driver: "570" } } },
                { op: "delete", urn: urn.replace("kpro5-facts", "c") },
            ],
        };
        const changes = driftChanges({ digest });
        assert.deepEqual(
            changes.map((c) => [c.resource, c.field, c.declared, c.actual]),
            [
                ["b", "driver", null, "570"],
                ["c", RESOURCE_FIELD, "exists", "missing (deleted outside the stack)"],
                ["kpro5-facts", "(not shown)", null, "changed: the provider reports a difference the engine output does not show"],
            ],
        );
        assert.equal(changes[0].type, "pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts");
    });

    it("uses a digest step the engine did refresh (a provider that returns a detailed diff)", () => {
        const urn = "urn:pulumi:kpro5::p::t:index:T::x";
        const digest: PreviewDigest = {
            steps: [
                {
                    op: "update",
                    urn,
                    oldState: { type: "t:index:T", outputs: { settings: { cores: 32 } } },
                    newState: { outputs: { settings: { cores: 16 } } },
                },
            ],
        };
        assert.deepEqual(driftChanges({ digest }), [{ resource: "x", type: "t:index:T", field: "settings.cores", declared: 32, actual: 16 }]);
    });

    it("has exactly the JSON shape { stack, drift, changes: [{ resource, type, field, declared, actual }] }", () => {
        const report = driftReport("kpro5", { events: FLAG_AND_CORES_EVENTS, exitCode: 7 });
        const doc = JSON.parse(JSON.stringify(report)) as Record<string, unknown>;
        assert.deepEqual(Object.keys(doc), ["stack", "drift", "changes"]);
        for (const change of report.changes) assert.deepEqual(Object.keys(change), ["resource", "type", "field", "declared", "actual"]);
    });
});

describe("drift report: secrets", () => {
    const urn = "urn:pulumi:kpro5::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit";
    const sig = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" };
    const step = (oldOutputs: Record<string, unknown>, newOutputs: Record<string, unknown>): EngineEvent => ({
        resOutputsEvent: { metadata: { op: "update", urn, old: { outputs: oldOutputs }, new: { outputs: newOutputs } } },
    });

    it("masks a key hand-written into the unit's flags and environment", () => {
        const changes = driftChanges({
            events: [
                step(
                    { flags: { "--api-key": "${SGLANG_API_KEY}" }, environment: {} },
                    { flags: { "--api-key": "sk-live-1234567890abcdef" }, environment: { SGLANG_API_KEY: "sk-live-1234567890abcdef" } },
                ),
            ],
        });
        assert.deepEqual(
            changes.map((c) => [c.field, c.declared, c.actual]),
            [
                ["flags.--api-key", "[secret]", "[secret]"],
                ["environment.SGLANG_API_KEY", null, "[secret]"],
            ],
        );
        assert.doesNotMatch(JSON.stringify(changes), /sk-live/);
    });

    it("masks the engine's secret values even when only one side is secret", () => {
        const changes = driftChanges({ events: [step({ apiKey: sig }, { apiKey: "plain-after-refresh" })] });
        assert.deepEqual(
            changes.map((c) => [c.field, c.declared, c.actual]),
            [["apiKey", "[secret]", "[secret]"]],
        );
    });

    it("masks secret assignments inside unit file lines", () => {
        const changes = driftChanges({
            events: [
                step(
                    { unitText: "[Service]\nExecStart=/x serve \\\n    --api-key ${SGLANG_API_KEY}\n" },
                    { unitText: "[Service]\nExecStart=/x serve \\\n    --api-key sk-live-123\n" },
                ),
            ],
        });
        assert.deepEqual(
            changes.map((c) => [c.field, c.declared, c.actual]),
            [["unitText", "--api-key [secret]", "--api-key [secret]"]],
        );
        assert.equal(
            maskSecretAssignments("Environment=SGLANG_API_KEY=abc HF_TOKEN=def PORT=1"),
            "Environment=SGLANG_API_KEY=[secret] HF_TOKEN=[secret] PORT=1",
        );
        assert.equal(maskSecretAssignments("--api-key=abc"), "--api-key=[secret]");
    });
});

describe("drift report: engine errors", () => {
    it("lists each resource's error and drops the generic lines", () => {
        const errors = engineErrors(UNREACHABLE_DIGEST, UNREACHABLE_STDERR);
        assert.deepEqual(errors.map((e) => e.split(":")[0]).sort(), ["ct129-config", "kpro5-facts", "qwen-unit"]);
        for (const e of errors) assert.match(e, /ssh: connection to root@127\.0\.3\.5:22 failed \(ECONNREFUSED\)/);
        assert.ok(!errors.some((e) => /^preview failed$/.test(e)));
    });

    it("drops the line --expect-no-changes adds, keeps other stderr", () => {
        assert.deepEqual(engineErrors(undefined, FLAG_AND_CORES_STDERR), []);
        assert.deepEqual(engineErrors(undefined, "error: no stack named 'nosuch' found\n"), ["error: no stack named 'nosuch' found"]);
    });
});

describe("drift report: text", () => {
    it("says so in one line when there is no drift", () => {
        assert.equal(
            formatDriftTable({ stack: "kpro5", drift: false, changes: [] }),
            "No drift on stack kpro5: the boxes match what the last deployment recorded.\n",
        );
    });

    it("prints aligned columns and both ways out", () => {
        const text = formatDriftTable(driftReport("kpro5", { events: FLAG_AND_CORES_EVENTS, exitCode: 7 }));
        const lines = text.split("\n");
        assert.match(lines[0], /^Drift on stack kpro5: 2 resource\(s\), 4 field\(s\) differ/);
        assert.match(lines[2], /^RESOURCE\s+FIELD\s+DECLARED\s+ACTUAL$/);
        assert.match(text, /^ct129-config\s+settings\.cores\s+32\s+16$/m);
        assert.match(text, /^qwen-unit\s+flags\.--mem-fraction-static\s+0\.88\s+0\.80$/m);
        const column = lines[2].indexOf("FIELD");
        assert.equal(lines[3].indexOf("settings.cores"), column);
        assert.match(text, /npm run pulumi -- up --refresh --stack kpro5/);
        assert.match(text, /Pulumi\.kpro5\.yaml/);
    });

    it("prints what a failed check could read, without the verdict", () => {
        const report = driftReport("kpro5", { events: STOPPED_EVENTS });
        const text = formatDriftTable(report, { partial: true });
        assert.match(text, /could not be checked completely/);
        assert.doesNotMatch(text, /up --refresh/);
        assert.equal(formatDriftTable({ stack: "kpro5", drift: false, changes: [] }, { partial: true }), "");
    });

    it("shows cells as text: lines joined, none for null, long values cut", () => {
        assert.equal(formatCell("a\nb"), "a | b");
        assert.equal(formatCell(null), "(none)");
        assert.equal(formatCell({ a: 1 }), '{"a":1}');
        assert.equal(formatCell("x".repeat(100)).length, 72);
    });
});

describe("scripts/drift.ts", () => {
    let dir: string;
    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "drift-script-test-"));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** A stand-in for scripts/pulumi.sh: records its argv and env, writes the given digest and event log, exits with `code`. */
    function fakeEngine(name: string, opts: { code: number; digest?: PreviewDigest; events?: EngineEvent[]; stderr?: string }): string {
        const data = path.join(dir, `${name}.json`);
        fs.writeFileSync(data, JSON.stringify({ ...opts, events: opts.events ? jsonLines(opts.events) : undefined }));
        const script = path.join(dir, `${name}.js`);
        fs.writeFileSync(
            script,
            `#!${process.execPath}
const fs = require("fs");
const d = JSON.parse(fs.readFileSync(${JSON.stringify(data)}, "utf8"));
const args = process.argv.slice(2);
fs.writeFileSync(${JSON.stringify(path.join(dir, `${name}.argv`))}, JSON.stringify({ args, debug: process.env.PULUMI_DEBUG_COMMANDS, project: process.env.SGLANG_SERVE_PROJECT_DIR }));
const log = args[args.indexOf("--event-log") + 1];
if (d.events) fs.writeFileSync(log, d.events);
if (d.digest) process.stdout.write(JSON.stringify(d.digest, null, 4) + "\\n");
if (d.stderr) process.stderr.write(d.stderr);
process.exit(d.code);
`,
            { mode: 0o755 },
        );
        return script;
    }

    it("runs the refresh preview with the event log and passes the environment through", async () => {
        const script = fakeEngine("clean", { code: 0, digest: CLEAN_DIGEST });
        const result = await runDrift({ stack: "kpro5", pulumiScript: script, env: { ...process.env, SGLANG_SERVE_PROJECT_DIR: "/tmp/copy" } });
        assert.deepEqual(result, { code: 0, report: { stack: "kpro5", drift: false, changes: [] } });
        const seen = JSON.parse(fs.readFileSync(path.join(dir, "clean.argv"), "utf8")) as { args: string[]; debug: string; project: string };
        assert.deepEqual(seen.args.slice(0, 7), ["refresh", "--preview-only", "--expect-no-changes", "--json", "--stack", "kpro5", "--non-interactive"]);
        assert.equal(seen.args[7], "--event-log");
        assert.equal(seen.debug, "true");
        assert.equal(seen.project, "/tmp/copy");
    });

    it("exits 7 with the rows when the engine finds changes", async () => {
        const script = fakeEngine("drift", { code: 7, digest: FLAG_AND_CORES_DIGEST, events: FLAG_AND_CORES_EVENTS, stderr: FLAG_AND_CORES_STDERR });
        const result = await runDrift({ stack: "kpro5", pulumiScript: script });
        assert.equal(result.code, 7);
        assert.equal(result.error, undefined);
        assert.deepEqual(fieldsOf(result.report, CT_CONFIG), ["settings.cores"]);
    });

    it("exits 1 with the engine's error text when the engine fails", async () => {
        const script = fakeEngine("broken", { code: 1, digest: UNREACHABLE_DIGEST, stderr: UNREACHABLE_STDERR });
        const result = await runDrift({ stack: "kpro5", pulumiScript: script });
        assert.equal(result.code, 1);
        assert.match(result.error ?? "", /^ct129-config: Preview failed: ssh: connection to root@127\.0\.3\.5:22 failed/m);
    });

    it("exits 1 for any other engine exit code, with its stderr", async () => {
        const script = fakeEngine("nostack", { code: 255, stderr: "error: no stack named 'nosuch' found\n" });
        const result = await runDrift({ stack: "nosuch", pulumiScript: script });
        assert.deepEqual(result, { code: 1, report: { stack: "nosuch", drift: false, changes: [] }, error: "error: no stack named 'nosuch' found" });
    });

    it("refuses a stack name that is not one, without running the engine", async () => {
        const result = await runDrift({ stack: "kpro5; rm -rf /", pulumiScript: "/nonexistent" });
        assert.equal(result.code, 2);
    });

    it("reads --stack, -s, --stack= and --json", () => {
        assert.deepEqual(parseArgs(["--stack", "kpro5", "--json"]), { stack: "kpro5", json: true, help: false, unknown: [] });
        assert.equal(parseArgs(["-s", "ct129"]).stack, "ct129");
        assert.equal(parseArgs(["--stack=ct129"]).stack, "ct129");
        assert.deepEqual(parseArgs(["--yes"]).unknown, ["--yes"]);
    });
});

// ---------------------------------------------------------------------------
// Captured fixtures (see the note at the top)
// ---------------------------------------------------------------------------

const FLAG_AND_CORES_EVENTS: EngineEvent[] = [
    {
        sequence: 18,
        timestamp: 1796098978,
        resOutputsEvent: {
            metadata: {
                op: "update",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
                type: "pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig",
                old: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
                    custom: true,
                    id: "127.0.3.5/lxc/129",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129",
                    retainOnDelete: true,
                    inputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        container: { adopt: true, allowDelete: false, cores: 32, gpus: [0, 1], hostname: "llm-two", onboot: true, vmid: 129 },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        providerVersion: "sglang-serve/1",
                        restart: "no",
                        vmid: 129,
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        container: { adopt: true, allowDelete: false, cores: 32, gpus: [0, 1], hostname: "llm-two", onboot: true, vmid: 129 },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        passthrough: {
                            allowedMajors: [195, 508],
                            gpus: [0, 1],
                            mountedDevices: ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"],
                        },
                        pendingRestart: [],
                        providerVersion: "sglang-serve/1",
                        restart: "no",
                        settings: {
                            cores: 32,
                            features: { nesting: "1" },
                            hostname: "llm-two",
                            memoryMiB: 131072,
                            networks: {
                                net0: {
                                    bridge: "vmbr0",
                                    firewall: "1",
                                    gw: "10.1.230.1",
                                    hwaddr: "BC:24:11:5E:12:9A",
                                    ip: "10.1.230.172/24",
                                    name: "eth0",
                                    type: "veth",
                                },
                            },
                            onboot: true,
                            swapMiB: 0,
                        },
                        status: "running",
                        vmid: 129,
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                new: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
                    custom: true,
                    id: "127.0.3.5/lxc/129",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129",
                    retainOnDelete: true,
                    inputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        container: { adopt: true, allowDelete: false, cores: 16, gpus: [0, 1], hostname: "llm-two", onboot: true, vmid: 129 },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        providerVersion: "sglang-serve/1",
                        restart: "no",
                        vmid: 129,
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        container: { adopt: true, allowDelete: false, cores: 32, gpus: [0, 1], hostname: "llm-two", onboot: true, vmid: 129 },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        passthrough: {
                            allowedMajors: [195, 508],
                            gpus: [0, 1],
                            mountedDevices: ["nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"],
                        },
                        pendingRestart: [],
                        providerVersion: "sglang-serve/1",
                        restart: "no",
                        settings: {
                            cores: 16,
                            features: { nesting: "1" },
                            hostname: "llm-two",
                            memoryMiB: 131072,
                            networks: {
                                net0: {
                                    bridge: "vmbr0",
                                    firewall: "1",
                                    gw: "10.1.230.1",
                                    hwaddr: "BC:24:11:5E:12:9A",
                                    ip: "10.1.230.172/24",
                                    name: "eth0",
                                    type: "veth",
                                },
                            },
                            onboot: true,
                            swapMiB: 0,
                        },
                        status: "running",
                        vmid: 129,
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                detailedDiff: null,
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    {
        sequence: 19,
        timestamp: 1796098978,
        resOutputsEvent: {
            metadata: {
                op: "same",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
                type: "pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts",
                old: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
                    custom: true,
                    id: "127.0.3.5:22",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5",
                    inputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        expectedGpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
                        providerVersion: "sglang-serve/1",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        driverVersion: "570.133.20",
                        expectedGpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
                        gpus: [
                            { index: 0, memoryMiB: 49140, name: "NVIDIA RTX A6000", uuid: "GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000000" },
                            { index: 1, memoryMiB: 49140, name: "NVIDIA RTX A6000", uuid: "GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000001" },
                        ],
                        providerVersion: "sglang-serve/1",
                        proxmoxVersion: "8.3.2",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                new: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
                    custom: true,
                    id: "127.0.3.5:22",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5",
                    inputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        expectedGpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
                        providerVersion: "sglang-serve/1",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                        },
                        deviceMajors: { nvidia: 195, nvidiaUvm: 508 },
                        driverVersion: "570.133.20",
                        expectedGpus: { count: 2, memoryMiB: 49140, name: "NVIDIA RTX A6000" },
                        gpus: [
                            { index: 0, memoryMiB: 49140, name: "NVIDIA RTX A6000", uuid: "GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000000" },
                            { index: 1, memoryMiB: 49140, name: "NVIDIA RTX A6000", uuid: "GPU-1a6b0c3e-5d2f-4e7a-9b8c-000000000001" },
                        ],
                        providerVersion: "sglang-serve/1",
                        proxmoxVersion: "8.3.2",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                detailedDiff: null,
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    {
        sequence: 20,
        timestamp: 1796098978,
        resOutputsEvent: {
            metadata: {
                op: "update",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                old: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "yes: new server",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "active",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: {
                            disableRadixCache: false,
                            listenHost: "127.0.3.29",
                            mambaSchedulerStrategy: "extra_buffer",
                            maxRunningRequests: 48,
                            memFractionStatic: 0.88,
                            modelPath: "/models/Qwen3.6-27B",
                            port: 30000,
                            servedName: "qwen3.6-27b",
                            speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                            tensorParallelSize: 2,
                            version: "0.5.11",
                        },
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "2bd2737276d9421c7fee4cec5a82de11307beba3e6cf3da1d98b1db0a890a2a6",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                new: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.80",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.80 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "active",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.80",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: {
                            disableRadixCache: false,
                            listenHost: "127.0.3.29",
                            mambaSchedulerStrategy: "extra_buffer",
                            maxRunningRequests: 48,
                            memFractionStatic: 0.8,
                            modelPath: "/models/Qwen3.6-27B",
                            port: 30000,
                            servedName: "qwen3.6-27b",
                            speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                            tensorParallelSize: 2,
                            version: "0.5.11",
                        },
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "2bd2737276d9421c7fee4cec5a82de11307beba3e6cf3da1d98b1db0a890a2a6",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.80 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                detailedDiff: null,
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    {
        sequence: 21,
        timestamp: 1796098978,
        summaryEvent: {
            maybeCorrupt: false,
            durationSeconds: 2,
            resourceChanges: { same: 7, update: 2 },
            PolicyPacks: {},
            isPreview: true,
            result: "succeeded",
        },
    },
];

const FLAG_AND_CORES_DIGEST: PreviewDigest = {
    steps: [
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessProbe::qwen-ready-probe",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
            detailedDiff: null,
        },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
            provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            oldState: {
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                custom: true,
                id: "127.0.3.5:129:sglang-qwen.service",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                inputs: {
                    __provider: "<provider code elided>",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "yes: new server",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                outputs: {
                    __provider: "<provider code elided>",
                    activeState: "active",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    enabled: true,
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    liveArgs: {
                        disableRadixCache: false,
                        listenHost: "127.0.3.29",
                        mambaSchedulerStrategy: "extra_buffer",
                        maxRunningRequests: 48,
                        memFractionStatic: 0.88,
                        modelPath: "/models/Qwen3.6-27B",
                        port: 30000,
                        servedName: "qwen3.6-27b",
                        speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                        tensorParallelSize: 2,
                        version: "0.5.11",
                    },
                    liveMatchesUnit: true,
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "no",
                    revision: "2bd2737276d9421c7fee4cec5a82de11307beba3e6cf3da1d98b1db0a890a2a6",
                    secretsHash: "[secret]",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                additionalSecretOutputs: ["environmentFile", "apiKey", "secretsHash"],
            },
            newState: {
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                custom: true,
                id: "127.0.3.5:129:sglang-qwen.service",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                inputs: {
                    __provider: "<provider code elided>",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "yes: new server",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                outputs: {
                    __provider: "<provider code elided>",
                    activeState: "active",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    enabled: true,
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    liveArgs: {
                        disableRadixCache: false,
                        listenHost: "127.0.3.29",
                        mambaSchedulerStrategy: "extra_buffer",
                        maxRunningRequests: 48,
                        memFractionStatic: 0.88,
                        modelPath: "/models/Qwen3.6-27B",
                        port: 30000,
                        servedName: "qwen3.6-27b",
                        speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                        tensorParallelSize: 2,
                        version: "0.5.11",
                    },
                    liveMatchesUnit: true,
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "no",
                    revision: "2bd2737276d9421c7fee4cec5a82de11307beba3e6cf3da1d98b1db0a890a2a6",
                    secretsHash: "[secret]",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                additionalSecretOutputs: ["environmentFile", "apiKey", "secretsHash"],
            },
            detailedDiff: null,
        },
    ],
    changeSummary: { same: 7, update: 2 },
};

const FLAG_AND_CORES_STDERR = "error: no changes were expected for refresh but changes were proposed\n";

const STOPPED_EVENTS: EngineEvent[] = [
    {
        sequence: 20,
        timestamp: 1796099042,
        resOutputsEvent: {
            metadata: {
                op: "update",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                old: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "yes: --mem-fraction-static changed",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "active",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: {
                            disableRadixCache: false,
                            listenHost: "127.0.3.29",
                            mambaSchedulerStrategy: "extra_buffer",
                            maxRunningRequests: 48,
                            memFractionStatic: 0.88,
                            modelPath: "/models/Qwen3.6-27B",
                            port: 30000,
                            servedName: "qwen3.6-27b",
                            speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                            tensorParallelSize: 2,
                            version: "0.5.11",
                        },
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "9c9bde415b91a2246fecddbf6c520a16bf4d9b30ddf79692a9503c3fbd554ecd",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                new: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "inactive",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: null,
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "9c9bde415b91a2246fecddbf6c520a16bf4d9b30ddf79692a9503c3fbd554ecd",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                detailedDiff: null,
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    {
        sequence: 21,
        timestamp: 1796099042,
        summaryEvent: {
            maybeCorrupt: false,
            durationSeconds: 2,
            resourceChanges: { same: 7, update: 2 },
            PolicyPacks: {},
            isPreview: true,
            result: "succeeded",
        },
    },
];

const SECRET_EVENTS: EngineEvent[] = [
    {
        sequence: 20,
        timestamp: 1796099054,
        resOutputsEvent: {
            metadata: {
                op: "update",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                old: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "yes: --mem-fraction-static changed",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "active",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: {
                            disableRadixCache: false,
                            listenHost: "127.0.3.29",
                            mambaSchedulerStrategy: "extra_buffer",
                            maxRunningRequests: 48,
                            memFractionStatic: 0.88,
                            modelPath: "/models/Qwen3.6-27B",
                            port: 30000,
                            servedName: "qwen3.6-27b",
                            speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                            tensorParallelSize: 2,
                            version: "0.5.11",
                        },
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "9c9bde415b91a2246fecddbf6c520a16bf4d9b30ddf79692a9503c3fbd554ecd",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                new: {
                    type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                    inputs: {
                        __provider: "<provider code elided>",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    outputs: {
                        __provider: "<provider code elided>",
                        activeState: "active",
                        apiKey: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        command: ["/opt/sglang/venv/bin/sglang", "serve"],
                        connection: {
                            address: "127.0.3.5",
                            hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                            port: 22,
                            topology: "pct-exec",
                            user: "root",
                            vmid: 129,
                        },
                        enabled: true,
                        endpoint: "http://127.0.3.29:30000",
                        environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                        environmentFile: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        flags: {
                            "--api-key": "${SGLANG_API_KEY}",
                            "--host": "127.0.3.29",
                            "--mamba-scheduler-strategy": "extra_buffer",
                            "--mem-fraction-static": "0.88",
                            "--model-path": "/models/Qwen3.6-27B",
                            "--port": "30000",
                            "--served-model-name": "qwen3.6-27b",
                            "--speculative-algorithm": "NEXTN",
                            "--speculative-eagle-topk": "1",
                            "--speculative-num-draft-tokens": "2",
                            "--speculative-num-steps": "1",
                            "--tp-size": "2",
                        },
                        gpuIndices: [0, 1],
                        liveArgs: {
                            disableRadixCache: false,
                            listenHost: "127.0.3.29",
                            mambaSchedulerStrategy: "extra_buffer",
                            maxRunningRequests: 48,
                            memFractionStatic: 0.88,
                            modelPath: "/models/Qwen3.6-27B",
                            port: 30000,
                            servedName: "qwen3.6-27b",
                            speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                            tensorParallelSize: 2,
                            version: "0.5.11",
                        },
                        liveMatchesUnit: true,
                        providerVersion: "sglang-serve/1",
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
                        restart: "no",
                        revision: "9c9bde415b91a2246fecddbf6c520a16bf4d9b30ddf79692a9503c3fbd554ecd",
                        secretsHash: { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" },
                        servedModelName: "qwen3.6-27b",
                        speculativeAlgorithm: "NEXTN",
                        unitName: "sglang-qwen.service",
                        unitText:
                            "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                    },
                    provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                },
                detailedDiff: null,
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    {
        sequence: 21,
        timestamp: 1796099054,
        summaryEvent: {
            maybeCorrupt: false,
            durationSeconds: 2,
            resourceChanges: { same: 8, update: 1 },
            PolicyPacks: {},
            isPreview: true,
            result: "succeeded",
        },
    },
];

const GONE_DIGEST: PreviewDigest = {
    steps: [
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessProbe::qwen-ready-probe",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
            detailedDiff: null,
        },
        {
            op: "delete",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
            provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            oldState: {
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
                custom: true,
                id: "127.0.3.5:129:sglang-qwen.service",
                type: "pulumi-nodejs:dynamic/sglang-serve:SystemdService",
                inputs: {
                    __provider: "<provider code elided>",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "no",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                outputs: {
                    __provider: "<provider code elided>",
                    activeState: "active",
                    apiKey: "[secret]",
                    command: ["/opt/sglang/venv/bin/sglang", "serve"],
                    connection: {
                        address: "127.0.3.5",
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBQCiDzBLkPcaEH4QmGX7ySP7PguBU0oO2R7MJCgCBi6",
                        port: 22,
                        topology: "pct-exec",
                        user: "root",
                        vmid: 129,
                    },
                    enabled: true,
                    endpoint: "http://127.0.3.29:30000",
                    environment: { SGLANG_ENABLE_SPEC_V2: "1" },
                    environmentFile: "[secret]",
                    flags: {
                        "--api-key": "${SGLANG_API_KEY}",
                        "--host": "127.0.3.29",
                        "--mamba-scheduler-strategy": "extra_buffer",
                        "--mem-fraction-static": "0.88",
                        "--model-path": "/models/Qwen3.6-27B",
                        "--port": "30000",
                        "--served-model-name": "qwen3.6-27b",
                        "--speculative-algorithm": "NEXTN",
                        "--speculative-eagle-topk": "1",
                        "--speculative-num-draft-tokens": "2",
                        "--speculative-num-steps": "1",
                        "--tp-size": "2",
                    },
                    gpuIndices: [0, 1],
                    liveArgs: {
                        disableRadixCache: false,
                        listenHost: "127.0.3.29",
                        mambaSchedulerStrategy: "extra_buffer",
                        maxRunningRequests: 48,
                        memFractionStatic: 0.88,
                        modelPath: "/models/Qwen3.6-27B",
                        port: 30000,
                        servedName: "qwen3.6-27b",
                        speculative: { algorithm: "NEXTN", eagleTopk: 1, numDraftTokens: 2, numSteps: 1 },
                        tensorParallelSize: 2,
                        version: "0.5.11",
                    },
                    liveMatchesUnit: true,
                    providerVersion: "sglang-serve/1",
                    readiness: { chatCheck: true, gpuReleaseTimeoutSeconds: 120, pollIntervalSeconds: 1, probeTimeoutSeconds: 30, startupTimeoutSeconds: 900 },
                    restart: "no",
                    revision: "b548b1195eff83a581921a3622a3474aac86597f4102f99c4fc92b9c7cb71d7c",
                    secretsHash: "[secret]",
                    servedModelName: "qwen3.6-27b",
                    speculativeAlgorithm: "NEXTN",
                    unitName: "sglang-qwen.service",
                    unitText:
                        "# Managed by sglang-serve; edits here are drift and are replaced by `pulumi up`. config-hash: sha256:c2ff01c4603f5444\n[Unit]\nDescription=SGLang server qwen (qwen3.6-27b)\nAfter=network-online.target\nWants=network-online.target\n# A config SGLang rejects fails the same way on every start: stop retrying after a few.\nStartLimitIntervalSec=600\nStartLimitBurst=3\n\n[Service]\nType=simple\nEnvironment=SGLANG_ENABLE_SPEC_V2=1\nEnvironmentFile=/etc/sglang/qwen.env\nExecStart=/opt/sglang/venv/bin/sglang serve \\\n    --model-path /models/Qwen3.6-27B \\\n    --served-model-name qwen3.6-27b \\\n    --tp-size 2 \\\n    --host 127.0.3.29 \\\n    --port 30000 \\\n    --mem-fraction-static 0.88 \\\n    --speculative-algorithm NEXTN \\\n    --speculative-num-steps 1 \\\n    --speculative-eagle-topk 1 \\\n    --speculative-num-draft-tokens 2 \\\n    --mamba-scheduler-strategy extra_buffer \\\n    --api-key ${SGLANG_API_KEY}\nRestart=on-failure\n# Time for the driver to free the dead server's GPU memory before the next start.\nRestartSec=10\nTimeoutStartSec=900\nTimeoutStopSec=60\n# Stop every process of the server (TP workers too) so none keeps GPU memory.\nKillMode=control-group\n\n[Install]\nWantedBy=multi-user.target\n",
                },
                parent: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
                additionalSecretOutputs: ["environmentFile", "apiKey", "secretsHash"],
            },
            detailedDiff: null,
        },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
            detailedDiff: null,
        },
    ],
    changeSummary: { delete: 1, same: 7, update: 1 },
};

const UNREACHABLE_DIGEST: PreviewDigest = {
    steps: [
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
            detailedDiff: null,
        },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessProbe::qwen-ready-probe",
            detailedDiff: null,
        },
    ],
    diagnostics: [
        {
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
            message:
                "error: Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: pct exec 129 -- sh -c 'cat /etc/systemd/system/sglang-qwen.service 2>/dev/null || echo __absent__; echo ----sglang-serve----; (sha256sum /etc/sglang/qwen.env 2>/dev/null || echo none) | cut -d'\\'' '\\'' -f1; echo ----sglang-serve----; systemctl show -p ActiveState sglang-qwen.service --value 2>/dev/n…)\n",
            severity: "error",
        },
        {
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
            message:
                "error: Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: sh -c 'pct config 129 --current || exit 3; echo ----sglang-serve----; pct status 129')\n",
            severity: "error",
        },
        {
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
            message:
                "error: Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: sh -c 'nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid --format=csv,noheader,nounits || exit 1; echo ----sglang-serve----; cat /proc/devices; echo ----sglang-serve----; pveversion 2>/dev/null || true')\n",
            severity: "error",
        },
        { message: "error: preview failed\n", severity: "error" },
    ],
    changeSummary: { same: 5, update: 1 },
};

const UNREACHABLE_STDERR = "";

const CLEAN_DIGEST: PreviewDigest = {
    steps: [
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SystemdService::qwen-unit",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129", detailedDiff: null },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHostFacts::kpro5-facts",
            detailedDiff: null,
        },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainerConfig::ct129-config",
            detailedDiff: null,
        },
        { op: "refresh", urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen", detailedDiff: null },
        {
            op: "refresh",
            urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessProbe::qwen-ready-probe",
            detailedDiff: null,
        },
    ],
    changeSummary: { same: 9 },
};
