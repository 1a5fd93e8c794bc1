import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { DiagnosticEvent, EngineEvent, OpMap, OpType, StepEventMetadata, StepEventStateMetadata } from "@pulumi/pulumi/automation";
import {
    DriftReport,
    driftChanges,
    driftReport,
    engineErrors,
    formatCell,
    formatDriftTable,
    RESOURCE_FIELD,
    resourceNameOf,
    resourceTypeOf,
} from "../../core/drift/drift-report";
import { maskSecretAssignments } from "../../core/secrets/redact";
import { parseArgs, runDrift } from "../../scripts/drift";

// Fixtures (tests/core/drift-events/*.json and the bottom of this file) are the events engine v3.248.0 emitted for
// `refresh --preview-only` against the lab (the stream the Automation API
// hands to `onEvent`), after `up` of the kpro5 config (plus container.cores:
// 32 and an apiKey) and one hand change on the box each. Trimmed: the
// serialized provider code (`__provider`) and source positions are elided,
// and only the resources a test reads are kept, and the dynamic types carry
// their current names (components/dynamic-provider.ts); the rest is as the
// engine wrote it. Where a fixture was captured as the `--json` digest, its note
// says how it was moved into events.

const UNIT = "qwen-unit";
const UNIT_TYPE = "pulumi-nodejs:dynamic/sglang-serve:SglangService";
const CT_CONFIG = "ct129-config";

/**
 * Events as the engine writes them. The SDK hands them over as JSON.parse
 * gives them, unchecked; its types differ from the engine's JSON in places
 * (the summary's `policyPacks` is `PolicyPacks` on the wire, plus
 * `isPreview` and `result`), so captured events pass through this cast.
 */
function asEvents(raw: readonly object[]): EngineEvent[] {
    return raw as EngineEvent[];
}

let sequence = 1000;

/** A state as the engine records it, with only what a test sets. */
function state(s: Partial<StepEventStateMetadata>): StepEventStateMetadata {
    return { type: "", urn: "", id: "", parent: "", provider: "", inputs: {}, outputs: {}, ...s };
}

/** A resOutputsEvent: what the refresh resolved one resource to. */
function outputsEvent(metadata: Partial<StepEventMetadata> & { op: OpType; urn: string }): EngineEvent {
    return {
        sequence: sequence++,
        timestamp: 1796099054,
        resOutputsEvent: { metadata: { type: resourceTypeOf(metadata.urn), provider: "", ...metadata }, planning: true },
    };
}

function summaryEvent(resourceChanges: OpMap, result = "succeeded"): EngineEvent {
    return asEvents([
        {
            sequence: sequence++,
            timestamp: 1796099054,
            summaryEvent: { maybeCorrupt: false, durationSeconds: 2, resourceChanges, PolicyPacks: {}, isPreview: true, result },
        },
    ])[0];
}

function diagnosticEvent(d: Omit<DiagnosticEvent, "color">): EngineEvent {
    return { sequence: sequence++, timestamp: 1796099054, diagnosticEvent: { color: "never", ...d } };
}

function fieldsOf(report: DriftReport | ReturnType<typeof driftChanges>, resource: string): string[] {
    const changes = Array.isArray(report) ? report : report.changes;
    return changes.filter((c) => c.resource === resource).map((c) => c.field);
}

describe("drift report: the engine's events", () => {
    it("still reports drift from the summary alone when no resource event shows it, saying what it cannot show", () => {
        const summaryOnly = FLAG_AND_CORES_EVENTS.filter((e) => e.summaryEvent);
        assert.deepEqual(summaryOnly[0].summaryEvent?.resourceChanges, { same: 7, update: 2 });
        const report = driftReport("kpro5", summaryOnly);
        assert.equal(report.drift, true);
        assert.equal(report.changes.length, 1);
        assert.equal(report.changes[0].field, "(not shown)");
        assert.match(String(report.changes[0].actual), /update 2/);
    });

    it("names the resource and its type from a real URN", () => {
        const urn = "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit";
        assert.equal(resourceNameOf(urn), UNIT);
        assert.equal(resourceTypeOf(urn), UNIT_TYPE);
    });
});

describe("drift report: rows from a refresh", () => {
    it("reports a hand-edited flag and a container setting changed in Proxmox, field by field", () => {
        const report = driftReport("kpro5", FLAG_AND_CORES_EVENTS);
        assert.equal(report.drift, true);
        assert.deepEqual(report.changes, [
            { resource: CT_CONFIG, type: "pulumi-nodejs:dynamic/sglang-serve:LxcContainer", field: "settings.cores", declared: 32, actual: 16 },
            { resource: UNIT, type: UNIT_TYPE, field: "flags.--mem-fraction-static", declared: "0.88", actual: "0.80" },
            { resource: UNIT, type: UNIT_TYPE, field: "liveArgs.memFractionStatic", declared: 0.88, actual: 0.8 },
            { resource: UNIT, type: UNIT_TYPE, field: "unitText", declared: "--mem-fraction-static 0.88", actual: "--mem-fraction-static 0.80" },
        ]);
    });

    it("leaves out resources the refresh found unchanged", () => {
        const changes = driftChanges(FLAG_AND_CORES_EVENTS);
        assert.deepEqual([...new Set(changes.map((c) => c.resource))], [CT_CONFIG, UNIT]);
        assert.ok(FLAG_AND_CORES_EVENTS.some((e) => e.resOutputsEvent?.metadata.op === "same"));
    });

    it("reports a stopped service as activeState, and a server map gone to null as one row", () => {
        const changes = driftChanges(STOPPED_EVENTS);
        assert.deepEqual(fieldsOf(changes, UNIT), ["activeState", "liveArgs"]);
        assert.deepEqual(changes[0], { resource: UNIT, type: UNIT_TYPE, field: "activeState", declared: "active", actual: "inactive" });
        assert.equal(changes[1].actual, null);
    });

    it("ignores the preview annotation `restart` and the serialized provider", () => {
        const meta = SECRET_EVENTS[0].resOutputsEvent!.metadata;
        assert.notDeepEqual(meta.old!.inputs.restart, meta.new!.inputs.restart);
        const fields = driftChanges(SECRET_EVENTS).map((c) => c.field);
        assert.ok(!fields.some((f) => f.includes("restart") || f.includes("__provider")), fields.join());
    });

    it("reports a secret changed on the box as one masked row naming the secret fields", () => {
        const report = driftReport("kpro5", SECRET_EVENTS);
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

    it("reports a unit deleted outside the stack from its delete event", () => {
        const meta = GONE_EVENTS.find((e) => e.resOutputsEvent?.metadata.op === "delete")!.resOutputsEvent!.metadata;
        assert.equal(meta.new, undefined);
        assert.deepEqual(driftReport("kpro5", GONE_EVENTS).changes, [
            { resource: UNIT, type: UNIT_TYPE, field: RESOURCE_FIELD, declared: "exists", actual: "missing (deleted outside the stack)" },
        ]);
    });

    it("reports no drift for a clean refresh", () => {
        assert.deepEqual(driftReport("kpro5", CLEAN_EVENTS), { stack: "kpro5", drift: false, changes: [], servingFigures: [] });
    });

    it("judges drift from the change summary as --expect-no-changes does: any op but same and read", () => {
        assert.equal(driftReport("kpro5", [summaryEvent({ same: 7, update: 2 })]).drift, true);
        assert.equal(driftReport("kpro5", [summaryEvent({ same: 7, delete: 1 })]).drift, true);
        assert.equal(driftReport("kpro5", [summaryEvent({ same: 7, read: 1, refresh: 2, update: 0 })]).drift, false);
    });

    it("tolerates events without old or new states", () => {
        const urn = "urn:pulumi:kpro5::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHost::kpro5-facts";
        const events = [
            outputsEvent({ op: "update", urn }),
            outputsEvent({ op: "update", urn: urn.replace("kpro5-facts", "b"), new: state({ outputs: { driver: "570" } }) }),
            outputsEvent({ op: "delete", urn: urn.replace("kpro5-facts", "c") }),
        ];
        const changes = driftChanges(events);
        assert.deepEqual(
            changes.map((c) => [c.resource, c.field, c.declared, c.actual]),
            [
                ["b", "driver", null, "570"],
                ["c", RESOURCE_FIELD, "exists", "missing (deleted outside the stack)"],
                ["kpro5-facts", "(not shown)", null, "changed: the provider reports a difference the engine output does not show"],
            ],
        );
        assert.equal(changes[0].type, "pulumi-nodejs:dynamic/sglang-serve:GpuHost");
    });

    it("reports a provider's refreshed outputs, taking the type from the state when the event has none", () => {
        const urn = "urn:pulumi:kpro5::p::t:index:T::x";
        const events = [
            outputsEvent({
                op: "update",
                urn,
                type: "",
                old: state({ type: "t:index:T", outputs: { settings: { cores: 32 } } }),
                new: state({ outputs: { settings: { cores: 16 } } }),
            }),
        ];
        assert.deepEqual(driftChanges(events), [{ resource: "x", type: "t:index:T", field: "settings.cores", declared: 32, actual: 16 }]);
    });

    it("has exactly the JSON shape { stack, drift, changes: [{ resource, type, field, declared, actual }], servingFigures: [{ resource, figures }] }", () => {
        const report = driftReport("kpro5", FLAG_AND_CORES_EVENTS);
        const doc = JSON.parse(JSON.stringify(report)) as Record<string, unknown>;
        assert.deepEqual(Object.keys(doc), ["stack", "drift", "changes", "servingFigures"]);
        for (const change of report.changes) assert.deepEqual(Object.keys(change), ["resource", "type", "field", "declared", "actual"]);
    });
});

describe("drift report: secrets", () => {
    const urn = "urn:pulumi:kpro5::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit";
    const sig = { "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", ciphertext: "[secret]" };
    const step = (oldOutputs: Record<string, unknown>, newOutputs: Record<string, unknown>): EngineEvent =>
        outputsEvent({ op: "update", urn, old: state({ outputs: oldOutputs }), new: state({ outputs: newOutputs }) });

    it("masks a key hand-written into the unit's flags and environment", () => {
        const changes = driftChanges([
            step(
                { flags: { "--api-key": "${SGLANG_API_KEY}" }, environment: {} },
                { flags: { "--api-key": "sk-live-1234567890abcdef" }, environment: { SGLANG_API_KEY: "sk-live-1234567890abcdef" } },
            ),
        ]);
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
        const changes = driftChanges([step({ apiKey: sig }, { apiKey: "plain-after-refresh" })]);
        assert.deepEqual(
            changes.map((c) => [c.field, c.declared, c.actual]),
            [["apiKey", "[secret]", "[secret]"]],
        );
    });

    it("masks secret assignments inside unit file lines", () => {
        const changes = driftChanges([
            step(
                { unitText: "[Service]\nExecStart=/x serve \\\n    --api-key ${SGLANG_API_KEY}\n" },
                { unitText: "[Service]\nExecStart=/x serve \\\n    --api-key sk-live-123\n" },
            ),
        ]);
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
    it("lists each resource's error and drops the generic lines and the providers' stack traces", () => {
        const errors = engineErrors(UNREACHABLE_EVENTS, "");
        assert.deepEqual(errors.map((e) => e.split(":")[0]).sort(), ["ct129-config", "kpro5-facts", "qwen-unit"]);
        for (const e of errors) assert.match(e, /ssh: connection to root@127\.0\.3\.5:22 failed \(ECONNREFUSED\)/);
        assert.ok(!errors.some((e) => /^preview failed$/.test(e)));
    });

    it("keeps the CLI's stderr lines, without generic or repeated ones", () => {
        assert.deepEqual(engineErrors([], "error: no stack named 'nosuch' found\n"), ["error: no stack named 'nosuch' found"]);
        assert.equal(engineErrors(UNREACHABLE_EVENTS, "error: preview failed\n").length, 3);
    });

    it("strips the engine's color markup from its messages", () => {
        const colored = diagnosticEvent({ prefix: "<{%fg 1%}>error: <{%reset%}>", message: "<{%reset%}>boom<{%reset%}>\n", severity: "error" });
        assert.deepEqual(engineErrors([colored], ""), ["boom"]);
    });
});

describe("drift report: text", () => {
    it("says so in one line when there is no drift", () => {
        assert.equal(
            formatDriftTable({ stack: "kpro5", drift: false, changes: [], servingFigures: [] }),
            "No drift on stack kpro5: the boxes match what the last deployment recorded.\n",
        );
    });

    it("carries each server's last good figures, drift or not, as the refresh read them back", () => {
        const urn = "urn:pulumi:kpro5::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit";
        const figures = { algorithm: "NEXTN", acceptLength: 3.1, throughput: 41.5, buckets: { prose: { acceptLength: 3, throughput: 40 } } };
        const events = [
            outputsEvent({ op: "same", urn, old: state({ outputs: { servingFigures: figures } }), new: state({ outputs: { servingFigures: figures } }) }),
        ];
        const report = driftReport("kpro5", events);
        assert.deepEqual(report.servingFigures, [{ resource: "qwen-unit", figures }]);
        assert.equal(
            formatDriftTable(report),
            "No drift on stack kpro5: the boxes match what the last deployment recorded.\n" +
                "Last good serving figures of qwen-unit: avg accept length 3.10 (NEXTN), 41.5 tok/s (prose 3.00 / 40.0 tok/s)\n",
        );
        const drifted = formatDriftTable({ ...driftReport("kpro5", FLAG_AND_CORES_EVENTS), servingFigures: report.servingFigures });
        assert.match(drifted, /\nLast good serving figures of qwen-unit: avg accept length 3\.10 \(NEXTN\)/);
    });

    it("prints aligned columns and both ways out", () => {
        const text = formatDriftTable(driftReport("kpro5", FLAG_AND_CORES_EVENTS));
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
        const report = driftReport("kpro5", STOPPED_EVENTS);
        const text = formatDriftTable(report, { partial: true });
        assert.match(text, /could not be checked completely/);
        assert.doesNotMatch(text, /up --refresh/);
        assert.equal(formatDriftTable({ stack: "kpro5", drift: false, changes: [], servingFigures: [] }, { partial: true }), "");
    });

    it("shows cells as text: lines joined, none for null, long values cut", () => {
        assert.equal(formatCell("a\nb"), "a | b");
        assert.equal(formatCell(null), "(none)");
        assert.equal(formatCell({ a: 1 }), '{"a":1}');
        assert.equal(formatCell("x".repeat(100)).length, 72);
    });
});

describe("scripts/drift.ts", function () {
    // Each run starts the fake CLI three times (version, stack select, refresh).
    this.timeout(20_000);
    let dir: string;
    let project: string;
    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "drift-script-test-"));
        project = fs.mkdtempSync(path.join(os.tmpdir(), "drift-script-project-"));
    });
    after(() => {
        fs.rmSync(dir, { recursive: true, force: true });
        fs.rmSync(project, { recursive: true, force: true });
    });

    interface Call {
        args: string[];
        cwd: string;
        debug?: string;
        mark?: string;
    }

    /**
     * A stand-in for the Pulumi CLI, at `<root>/bin/pulumi` as an install lays
     * it out: records each call, answers `version` and `stack select`, and
     * for `refresh` streams the given events to the Automation
     * API's `--event-log tcp://...` over gRPC as the engine does, then writes
     * `stderr` and exits with `code`. Returns the bin directory.
     */
    function fakeCli(name: string, opts: { code: number; events?: EngineEvent[]; stderr?: string; noStack?: boolean }): string {
        const bin = path.join(dir, name, "bin");
        fs.mkdirSync(bin, { recursive: true });
        const data = path.join(dir, `${name}.json`);
        fs.writeFileSync(data, JSON.stringify({ events: [], ...opts }));
        const sdk = path.dirname(require.resolve("@pulumi/pulumi/package.json"));
        const modules = {
            grpc: require.resolve("@grpc/grpc-js", { paths: [sdk] }),
            rpc: require.resolve("@pulumi/pulumi/proto/events_grpc_pb"),
            pb: require.resolve("@pulumi/pulumi/proto/events_pb"),
        };
        fs.writeFileSync(
            path.join(bin, "pulumi"),
            `#!${process.execPath}
const fs = require("fs");
const d = JSON.parse(fs.readFileSync(${JSON.stringify(data)}, "utf8"));
const args = process.argv.slice(2);
const call = { args, cwd: process.cwd(), debug: process.env.PULUMI_DEBUG_COMMANDS, mark: process.env.DRIFT_TEST_MARK };
fs.appendFileSync(${JSON.stringify(path.join(dir, `${name}.calls`))}, JSON.stringify(call) + "\\n");
const finish = () => {
    if (d.stderr) process.stderr.write(d.stderr);
    process.exit(d.code);
};
if (args[0] === "version") {
    process.stdout.write("v3.248.0\\n");
} else if (args[0] === "stack" && args[1] === "select") {
    if (d.noStack) {
        process.stderr.write("error: no stack named '" + args[args.indexOf("--stack") + 1] + "' found\\n");
        process.exit(255);
    }
} else if (args[0] === "refresh") {
    const grpc = require(${JSON.stringify(modules.grpc)});
    const rpc = require(${JSON.stringify(modules.rpc)});
    const pb = require(${JSON.stringify(modules.pb)});
    const target = args[args.indexOf("--event-log") + 1].replace(/^tcp:\\/\\//, "");
    const client = new rpc.EventsClient(target, grpc.credentials.createInsecure());
    const stream = client.streamEvents(finish);
    for (const e of d.events) stream.write(new pb.EventRequest().setEvent(JSON.stringify(e)));
    stream.end();
} else {
    process.stderr.write("fake pulumi: unexpected " + args.join(" ") + "\\n");
    process.exit(2);
}
`,
            { mode: 0o755 },
        );
        return bin;
    }

    function callsOf(name: string): Call[] {
        return fs
            .readFileSync(path.join(dir, `${name}.calls`), "utf8")
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line) as Call);
    }

    it("runs refresh --preview-only on the stack in the project directory, through the given CLI, with the environment", async () => {
        const engineBin = fakeCli("clean", { code: 0, events: CLEAN_EVENTS });
        const result = await runDrift({ stack: "kpro5", projectDir: project, engineBin, env: { DRIFT_TEST_MARK: "passed" } });
        assert.deepEqual(result, { code: 0, report: { stack: "kpro5", drift: false, changes: [], servingFigures: [] } });
        const refresh = callsOf("clean").find((c) => c.args[0] === "refresh")!;
        assert.deepEqual(refresh.args.slice(0, 2), ["refresh", "--preview-only"]);
        assert.ok(!refresh.args.includes("--yes") && !refresh.args.includes("--skip-preview"), refresh.args.join(" "));
        assert.equal(refresh.args[refresh.args.indexOf("--stack") + 1], "kpro5");
        assert.match(refresh.args[refresh.args.indexOf("--event-log") + 1], /^tcp:\/\/127\.0\.0\.1:\d+$/);
        assert.equal(refresh.debug, "true");
        assert.equal(refresh.mark, "passed");
        assert.equal(fs.realpathSync(refresh.cwd), fs.realpathSync(project));
        // Only the version, the stack's selection and the refresh: no stack history read after it.
        assert.deepEqual(
            callsOf("clean").map((c) => c.args.slice(0, 2).join(" ")),
            ["version", "stack select", "refresh --preview-only"],
        );
    });

    it("exits 7 with the rows when the engine finds changes", async () => {
        const engineBin = fakeCli("drift", { code: 0, events: FLAG_AND_CORES_EVENTS });
        const result = await runDrift({ stack: "kpro5", projectDir: project, engineBin });
        assert.equal(result.code, 7);
        assert.equal(result.error, undefined);
        assert.deepEqual(fieldsOf(result.report, CT_CONFIG), ["settings.cores"]);
    });

    it("exits 1 with the engine's error text when the engine fails, and the partial report", async () => {
        const engineBin = fakeCli("broken", { code: 1, events: UNREACHABLE_EVENTS });
        const result = await runDrift({ stack: "kpro5", projectDir: project, engineBin });
        assert.equal(result.code, 1);
        assert.match(result.error ?? "", /^ct129-config: Preview failed: ssh: connection to root@127\.0\.3\.5:22 failed/m);
        assert.equal(result.report.drift, true);
        assert.match(String(result.report.changes[0].actual), /update 1/);
    });

    it("exits 1 for a stack the backend does not have, with the CLI's message", async () => {
        const engineBin = fakeCli("nostack", { code: 0, noStack: true });
        const result = await runDrift({ stack: "nosuch", projectDir: project, engineBin });
        assert.deepEqual(result, {
            code: 1,
            report: { stack: "nosuch", drift: false, changes: [], servingFigures: [] },
            error: "error: no stack named 'nosuch' found",
        });
        assert.ok(!callsOf("nostack").some((c) => c.args[0] === "refresh"));
    });

    it("exits 1 for any other engine exit code, with its stderr", async () => {
        const engineBin = fakeCli("passphrase", { code: 255, stderr: "error: incorrect passphrase\n" });
        const result = await runDrift({ stack: "kpro5", projectDir: project, engineBin });
        assert.deepEqual(result, { code: 1, report: { stack: "kpro5", drift: false, changes: [], servingFigures: [] }, error: "error: incorrect passphrase" });
    });

    it("refuses a stack name that is not one, without running the engine", async () => {
        const result = await runDrift({ stack: "kpro5; rm -rf /", projectDir: project, engineBin: "/nonexistent" });
        assert.equal(result.code, 2);
    });

    it("says how to run it when no engine is set up (not through scripts/pulumi.sh --env-exec)", async () => {
        const saved = { bin: process.env.SGLANG_SERVE_ENGINE_BIN, project: process.env.SGLANG_SERVE_PROJECT_DIR };
        delete process.env.SGLANG_SERVE_ENGINE_BIN;
        delete process.env.SGLANG_SERVE_PROJECT_DIR;
        try {
            const result = await runDrift({ stack: "kpro5" });
            assert.equal(result.code, 2);
            assert.match(result.error ?? "", /npm run drift/);
        } finally {
            if (saved.bin !== undefined) process.env.SGLANG_SERVE_ENGINE_BIN = saved.bin;
            if (saved.project !== undefined) process.env.SGLANG_SERVE_PROJECT_DIR = saved.project;
        }
    });

    it("reads --stack, -s, --stack=, --json and --verify, and names what it cannot use", () => {
        assert.deepEqual(parseArgs(["--stack", "kpro5", "--json"]), { stack: "kpro5", json: true, help: false, verify: false });
        assert.equal(parseArgs(["--stack", "kpro5", "--verify"]).verify, true);
        assert.equal(parseArgs(["-s", "ct129"]).stack, "ct129");
        assert.equal(parseArgs(["--stack=ct129"]).stack, "ct129");
        assert.match(parseArgs(["--yes"]).error ?? "", /--yes/);
        assert.match(parseArgs(["--stack"]).error ?? "", /--stack/);
        assert.match(parseArgs(["kpro5"]).error ?? "", /kpro5/);
    });
});

// ---------------------------------------------------------------------------
// Captured fixtures (see the note at the top)
// ---------------------------------------------------------------------------

/** A capture in tests/core/drift-events/<name>.json. */
function capturedEvents(name: string): EngineEvent[] {
    return asEvents(JSON.parse(fs.readFileSync(path.join(__dirname, "drift-events", `${name}.json`), "utf8")) as object[]);
}

// A flag edited by hand in the unit and container.cores changed in Proxmox.
const FLAG_AND_CORES_EVENTS = capturedEvents("flag-and-cores");
// The server stopped on the box (systemctl stop).
const STOPPED_EVENTS = capturedEvents("stopped");
// A secret changed on the box (the environment file with the API key).
const SECRET_EVENTS = capturedEvents("secret");

// The unit's file removed on the box (captured as a `--json` digest step, its op and recorded state
// moved into the resOutputsEvent metadata where the engine puts them: op from RefreshStep.ResultOp,
// no `new`); the resources that stayed are same.
const GONE_EVENTS: EngineEvent[] = asEvents([
    ...[
        "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessCheck::qwen-ready-probe",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainer::ct129-config",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHost::kpro5-facts",
    ].map((urn) => outputsEvent({ op: "same", urn })),
    {
        sequence: 20,
        timestamp: 1796099054,
        resOutputsEvent: {
            metadata: {
                op: "delete",
                urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit",
                type: "pulumi-nodejs:dynamic/sglang-serve:SglangService",
                old: {
                    urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit",
                    custom: true,
                    id: "127.0.3.5:129:sglang-qwen.service",
                    type: "pulumi-nodejs:dynamic/sglang-serve:SglangService",
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
                        readiness: {
                            chatCheck: true,
                            gpuReleaseTimeoutSeconds: 120,
                            pollIntervalSeconds: 1,
                            probeTimeoutSeconds: 30,
                            startupTimeoutSeconds: 900,
                        },
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
                provider: "urn:pulumi:lab::sglang-serve::pulumi:providers:pulumi-nodejs::default::103d831a-bbac-4069-811d-738efe367339",
            },
            planning: true,
        },
    },
    summaryEvent({ delete: 1, same: 7, update: 1 }),
]);

// The host unreachable (sshd stopped): each resource's read fails. The engine's events for such a
// failure, as engine v3.248.0 emits them under `--color never` (prefix apart, the provider's stack
// trace as info#err lines, a generic `preview failed`); messages from the captured digest.
const UNREACHABLE_EVENTS: EngineEvent[] = [
    diagnosticEvent({
        severity: "info#err",
        message: "Error: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s)\n\n",
    }),
    diagnosticEvent({
        urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit",
        prefix: "error: ",
        message:
            "Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: pct exec 129 -- sh -c 'cat /etc/systemd/system/sglang-qwen.service 2>/dev/null || echo __absent__; echo ----sglang-serve----; (sha256sum /etc/sglang/qwen.env 2>/dev/null || echo none) | cut -d'\\'' '\\'' -f1; echo ----sglang-serve----; systemctl show -p ActiveState sglang-qwen.service --value 2>/dev/n…)\n",
        severity: "error",
    }),
    diagnosticEvent({
        severity: "info#err",
        message: "Error: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s)\n\n",
    }),
    diagnosticEvent({
        urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainer::ct129-config",
        prefix: "error: ",
        message:
            "Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: sh -c 'pct config 129 --current || exit 3; echo ----sglang-serve----; pct status 129')\n",
        severity: "error",
    }),
    diagnosticEvent({
        severity: "info#err",
        message: "Error: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s)\n\n",
    }),
    diagnosticEvent({
        urn: "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHost::kpro5-facts",
        prefix: "error: ",
        message:
            "Preview failed: ssh: connection to root@127.0.3.5:22 failed (ECONNREFUSED); gave up after 3 reconnect attempt(s) (command: sh -c 'nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid,compute_cap --format=csv,noheader,nounits || exit 1; echo ----sglang-serve----; cat /proc/devices; echo ----sglang-serve----; pveversion 2>/dev/null || true')\n",
        severity: "error",
    }),
    diagnosticEvent({ prefix: "error: ", message: "preview failed\n", severity: "error" }),
    summaryEvent({ same: 5, update: 1 }, "failed"),
];

const CLEAN_EVENTS: EngineEvent[] = [
    ...[
        "urn:pulumi:lab::sglang-serve::pulumi:pulumi:Stack::sglang-serve-lab",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService$pulumi-nodejs:dynamic/sglang-serve:SglangService::qwen-unit",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck::qwen-ready",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer::ct129",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost::kpro5",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:GpuHost$pulumi-nodejs:dynamic/sglang-serve:GpuHost::kpro5-facts",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:LxcContainer$pulumi-nodejs:dynamic/sglang-serve:LxcContainer::ct129-config",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:SglangService::qwen",
        "urn:pulumi:lab::sglang-serve::sglang-serve:index:ReadinessCheck$pulumi-nodejs:dynamic/sglang-serve:ReadinessCheck::qwen-ready-probe",
    ].map((urn) => outputsEvent({ op: "same", urn })),
    summaryEvent({ same: 9 }),
];
