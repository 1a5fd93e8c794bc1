import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { EngineEvent, OpMap } from "@pulumi/pulumi/automation";
import { changeSummaryOf } from "../../core/drift/drift-report";
import { labDown } from "../../lab/control";
import { Deployment, expectExit } from "../../lab/deployment";
import { labStackConfig } from "../../lab/stack";
import { mainPid, onBox, startLab, UNIT } from "./lab-box";

/** A resource of `pulumi stack export`, as far as this file reads it. */
interface StateResource {
    urn: string;
    type: string;
    sourcePosition?: string;
}

const API_KEY = "e2e-engines-api-key-0123456789abcdef";

/** The resource changes of an update, from `up --json`'s stream of engine events (changeSummaryOf: its last summary event). */
function updateSummary(stdout: string): OpMap {
    const events = stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as EngineEvent);
    assert.ok(
        events.some((e) => e.summaryEvent),
        `no summary event in the up's output:\n${stdout.slice(-2000)}`,
    );
    return changeSummaryOf(events);
}

/** The dynamic types before they took their components' names (components/dynamic-provider.ts aliases them). */
const FORMER: Record<string, string> = {
    GpuHost: "GpuHostFacts",
    LxcContainer: "LxcContainerConfig",
    SglangService: "SystemdService",
    ReadinessCheck: "ReadinessProbe",
};

// The smoke set under each CLI the project tests (scripts/engine.sh: the
// pinned v3.248.0 and the newest tested): a user's newer CLI must work too.
// One file per CLI (tests/e2e/engines-*.test.ts), each on a lab of its own.
// Every other end-to-end file runs under the pinned CLI, so under it the set
// is what no other file checks (the CLI's version, a stack recorded under the
// former resource types, whose up is also a second up that must change
// nothing); the changed flag and the drift check are tests/e2e/deploy.test.ts's
// and tests/e2e/drift.test.ts's (docs/testing.md "Engine runs"). Under the next
// CLI: the whole set.
export function describeSmokeSet(engine: "pinned" | "next", net: number): void {
    /** A test of the set that other files already run under the pinned CLI. */
    const nextOnly = (title: string, fn: Mocha.AsyncFunc): void => {
        if (engine === "next") it(title, fn);
    };
    describe(`the smoke set under the ${engine} CLI (scripts/engine.sh ${engine})`, function () {
        this.timeout(600_000);
        let labDir: string;
        let d: Deployment;
        let config: ReturnType<typeof labStackConfig>;

        before(async () => {
            let info;
            ({ labDir, info } = await startLab(`engine-${engine}`, net));
            config = labStackConfig(info, "pct-exec");
            d = await Deployment.create("lab", config, { engine });
            d.giveApiKey(API_KEY);
        });
        after(async () => {
            d?.cleanup();
            if (labDir) await labDown(labDir);
            delete process.env.SGLANG_LAB_DIR;
        });

        it("runs the CLI it names", () => {
            const bin = execFileSync(path.join(__dirname, "..", "..", "scripts", "engine.sh"), [engine], { encoding: "utf8" }).trim();
            const version = execFileSync(path.join(bin, "pulumi"), ["version"], { encoding: "utf8" }).trim();
            const pinned = `v${fs.readFileSync(path.join(__dirname, "..", "..", ".pulumi-version"), "utf8").trim()}`;
            if (engine === "pinned") assert.equal(version, pinned);
            else assert.ok(version > pinned && /^v3\.\d+\.\d+$/.test(version), `${version} is not newer than ${pinned}`);
        });

        it("a fresh up brings the server to ready", async () => {
            expectExit(await d.up(), 0, "up");
            assert.equal(await onBox(labDir, "container", `systemctl is-active ${UNIT}`), "active");
        });

        nextOnly("one changed flag restarts the server with it", async () => {
            const before = await mainPid(labDir);
            config["sglang-serve:service"]!.memFractionStatic = 0.86;
            d.writeConfig(config);
            expectExit(await d.up(), 0, "up with the changed flag");
            assert.notEqual(await mainPid(labDir), before);
            assert.match(await onBox(labDir, "container", `cat /etc/systemd/system/${UNIT}`), /--mem-fraction-static 0\.86/);
        });

        // Its up is the set's second up of an unchanged config too (the config the up before it
        // deployed): renaming through the aliases is all it may do, so `--expect-no-changes` holds it
        // to changing nothing, and the server keeps its process. Its summary (`--json`: the engine's
        // events, the summary last) says what the up did, resource by resource: no preview first.
        it("a stack recorded under the former resource types keeps its resources: a second up renames them, not replaced, changes nothing else and does not restart the server", async () => {
            // The state as a stack deployed before the dynamic types took their components' names holds it.
            const exported = await d.run(["stack", "export"]);
            expectExit(exported, 0, "stack export");
            // In types ("...:SglangService") and URNs ("...:SglangService::qwen-unit"), the components' own types untouched.
            const former = exported.stdout.replace(
                /dynamic\/sglang-serve:(GpuHost|LxcContainer|SglangService|ReadinessCheck)(?=[:"])/g,
                (_m, t: string) => `dynamic/sglang-serve:${FORMER[t]}`,
            );
            assert.notEqual(former, exported.stdout);
            const file = path.join(d.dir, "former-state.json");
            fs.writeFileSync(file, former);
            expectExit(await d.run(["stack", "import", "--file", file]), 0, "stack import");
            const before = await mainPid(labDir);
            const up = await d.run(["up", "--yes", "--skip-preview", "--expect-no-changes", "--json"]);
            expectExit(up, 0, "a second up, over the former types");
            // Renamed through the aliases: every resource the same, none created, deleted or replaced.
            const summary = updateSummary(up.stdout);
            assert.deepEqual(Object.keys(summary), ["same"], JSON.stringify(summary));
            assert.equal(summary.same, 9, "the stack, four components and their four dynamic resources");
            const resources = (JSON.parse((await d.run(["stack", "export"])).stdout) as { deployment: { resources: StateResource[] } }).deployment.resources;
            const types = resources
                .map((r) => r.type)
                .filter((t) => t.startsWith("pulumi-nodejs:dynamic/"))
                .sort();
            assert.deepEqual(
                types,
                ["GpuHost", "LxcContainer", "ReadinessCheck", "SglangService"].map((t) => `pulumi-nodejs:dynamic/sglang-serve:${t}`),
            );
            // Each resource's source position (the SDK's, from a stack trace) is the line of the TypeScript that
            // constructs it: node's source maps of tsx's output (scripts/sdk-lazy-requires.cjs), not the transpiled code.
            // Relative to the project copy's root, whose files are this checkout's; the stack's own position is the SDK's (node_modules/).
            const positions = resources.flatMap((r) =>
                r.sourcePosition && !r.sourcePosition.includes("/node_modules/") ? [{ urn: r.urn, position: r.sourcePosition }] : [],
            );
            assert.equal(positions.length, 8, `the four components and their dynamic resources have source positions: ${JSON.stringify(positions)}`);
            for (const { urn, position } of positions) {
                const m = /^project:\/\/\/(.+\.ts)#(\d+),(\d+)$/.exec(position);
                assert.ok(m, `${urn}: ${position} is a position in the project's TypeScript`);
                const line = fs.readFileSync(path.resolve(d.dir, m[1]!), "utf8").split("\n")[Number(m[2]) - 1] ?? "";
                assert.match(line.slice(Number(m[3]) - 1), /^(new \w+|super)\(/, `${urn}: ${position} is the line that constructs it: ${JSON.stringify(line)}`);
            }
            assert.equal(await mainPid(labDir), before);
        });

        nextOnly("drift exits 7, and 0 after up puts the box back", async () => {
            await onBox(labDir, "container", `systemctl stop ${UNIT}`);
            const drift = await d.run(["refresh", "--preview-only", "--expect-no-changes"]);
            expectExit(drift, 7, "drift check after a stop");
            expectExit(await d.up(), 0, "up");
            expectExit(await d.run(["refresh", "--preview-only", "--expect-no-changes"]), 0, "drift check after up");
        });
    });
}
