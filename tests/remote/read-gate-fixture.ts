// The read-only gate (gate/sglang-serve-read-gate) as the tests drive it:
// installed as the install script installs it (its source with the reads the
// stack's builders render, core/read-gate/install.ts renderGate), and the
// read commands as the stack's own code builds them.
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { boxFactsCommand } from "../../core/box/box-facts";
import { containerReadScript, gpuFactsScript } from "../../core/box/host-reads";
import { renderGate } from "../../core/read-gate/install";
import { remoteCommand, shCommand } from "../../core/shell";
import { serverInfoReadArgv } from "../../core/sglang/server-info-read";
import { renderUnitReadScript, unitPaths } from "../../core/unit/unit-read";

/** The gate's source in the repository. */
export const GATE_SOURCE = path.resolve(__dirname, "..", "..", "gate", "sglang-serve-read-gate");

/** The gate as installed (written once per test process). */
export const GATE = (() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-gate-"));
    const file = path.join(dir, "sglang-serve-read-gate");
    fs.writeFileSync(file, renderGate(fs.readFileSync(GATE_SOURCE, "utf8")), { mode: 0o755 });
    process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
    return file;
})();

/** The field's pins, as --stack kpro5 gives them. */
export const FIELD_PYTHON = "/opt/sglang/venv/bin/python3";
export const FIELD_MODEL = "/models/Qwen3.6-27B";
export const PINS = ["--python", FIELD_PYTHON, "--model", FIELD_MODEL];

export type GateVerdict = { allowed: true; shape: string; detail: string } | { allowed: false; reason: string };

/** The gate's decision for each command (null: no command, an interactive login), without running any. */
export function checkBatch(commands: readonly (string | null)[], gateArgs: readonly string[], gate = GATE): GateVerdict[] {
    const r = spawnSync(gate, [...gateArgs, "--check-batch"], { input: JSON.stringify(commands), encoding: "utf8" });
    if (r.status !== 0) throw new Error(`gate --check-batch exited ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout) as GateVerdict[];
}

/** The box the server runs in, as the fixture builds commands for it. */
export type ServerBox = { kind: "pct-exec"; vmid: number } | { kind: "direct" };

/** Where a command for the server's box goes: through pct exec on the host, or as is. */
export function inServerBox(t: ServerBox, argv: string[]): string {
    return t.kind === "pct-exec" ? remoteCommand("pct-exec", t.vmid, argv) : remoteCommand("direct", undefined, argv);
}

/** Every read a refresh sends, built by the stack's own builders: per topology, for these units. */
export function readerCommands(t: ServerBox, units: readonly string[], marker = "sglang-serve-0123456789abcdef", timeoutSeconds = 30) {
    const requests = units.map((u) => ({
        unitName: u,
        unitPath: unitPaths(u).unit,
        environmentFilePath: unitPaths(u).environmentFile,
        // A preview or drift check holds no secret value: it sends no digest (providers/sglang-server/secrets.ts expectedEnvironmentHash).
        expectedEnvironmentHash: "",
    }));
    return {
        gpuFacts: shCommand(["sh", "-c", gpuFactsScript(marker)]),
        ...(t.kind === "pct-exec" ? { containerRead: shCommand(["sh", "-c", containerReadScript(t.vmid, marker)]) } : {}),
        unitRead: inServerBox(t, ["sh", "-c", renderUnitReadScript(requests, marker)]),
        serverInfo: units.map((u) =>
            inServerBox(t, serverInfoReadArgv({ unitPath: unitPaths(u).unit, environmentFilePath: unitPaths(u).environmentFile, timeoutSeconds })),
        ),
        boxFacts: inServerBox(t, boxFactsCommand(FIELD_PYTHON, FIELD_MODEL)),
    };
}
