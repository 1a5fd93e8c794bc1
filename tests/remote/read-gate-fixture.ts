// The read-only gate (gate/sglang-serve-read-gate) as the tests drive it, and
// the read commands as the stack's own code builds them.
import { spawnSync } from "child_process";
import * as path from "path";
import { remoteCommand, shCommand } from "../../core/shell";
import { serverInfoReadArgv } from "../../core/server-info-read";
import { renderUnitReadScript } from "../../core/unit-read";
import { factsScript } from "../../providers/gpu-host";
import { containerReadScript } from "../../providers/lxc-container";
import { unitPaths } from "../../providers/unit-view";

export const GATE = path.resolve(__dirname, "..", "..", "gate", "sglang-serve-read-gate");

export type GateVerdict = { allowed: true; shape: string; detail: string } | { allowed: false; reason: string };

/** The gate's decision for each command (null: no command, an interactive login), without running any. */
export function checkBatch(commands: readonly (string | null)[], gateArgs: readonly string[]): GateVerdict[] {
    const r = spawnSync(GATE, [...gateArgs, "--check-batch"], { input: JSON.stringify(commands), encoding: "utf8" });
    if (r.status !== 0) throw new Error(`gate --check-batch exited ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout) as GateVerdict[];
}

/** The box the server runs in, as the fixture builds commands for it. */
export type ServerBox = { kind: "pct-exec"; vmid: number } | { kind: "direct" };

/** Where a command for the server's box goes: through pct exec on the host, or as is. */
function inServerBox(t: ServerBox, argv: string[]): string {
    return t.kind === "pct-exec" ? remoteCommand("pct-exec", t.vmid, argv) : remoteCommand("direct", undefined, argv);
}

/** Every read a refresh sends, built by the stack's own builders: per topology, for these units. */
export function readerCommands(t: ServerBox, units: readonly string[], marker = "sglang-serve-0123456789abcdef", timeoutSeconds = 30) {
    const requests = units.map((u) => ({ unitName: u, unitPath: unitPaths(u).unit, environmentFilePath: unitPaths(u).environmentFile }));
    return {
        gpuFacts: shCommand(["sh", "-c", factsScript(marker)]),
        ...(t.kind === "pct-exec" ? { containerRead: shCommand(["sh", "-c", containerReadScript(t.vmid, marker)]) } : {}),
        unitRead: inServerBox(t, ["sh", "-c", renderUnitReadScript(requests, marker)]),
        serverInfo: units.map((u) =>
            inServerBox(t, serverInfoReadArgv({ unitPath: unitPaths(u).unit, environmentFilePath: unitPaths(u).environmentFile, timeoutSeconds })),
        ),
    };
}
