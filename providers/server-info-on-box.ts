import { parseServerInfoReadOutput, ServerInfoReadResult, serverInfoReadArgv } from "../core/sglang/server-info-read";
import type { RemoteRunner } from "../remote/remote-host";
import { unitPaths } from "./unit-view";

/**
 * GET /server_info asked on the box where the server runs (one SSH command,
 * through `pct exec` in the pct-exec topology), with the API key the box
 * keeps in the unit's 0600 EnvironmentFile: a refresh needs no API key, and
 * the read-only key's gate allows the command (core/sglang/server-info-read.ts).
 * The server not answering is a value; a command that could not run at all
 * (refused by the gate, no python3) throws, naming the box and the fix.
 */
export async function readServerInfoOnBox(box: RemoteRunner, unitName: string, timeoutMs: number): Promise<ServerInfoReadResult> {
    const paths = unitPaths(unitName);
    const timeoutSeconds = Math.min(3600, Math.max(1, Math.ceil(timeoutMs / 1000)));
    const argv = serverInfoReadArgv({ unitPath: paths.unit, environmentFilePath: paths.environmentFile, timeoutSeconds });
    const r = await box.run(argv, { timeoutMs: timeoutSeconds * 1000 + 15_000 });
    if (r.code !== 0) {
        const stderr = r.stderr.trim().split("\n").slice(-5).join("\n");
        const hint =
            r.code === 127
                ? "; python3 is missing where the server runs: install it there (apt-get install python3)"
                : /sglang-serve-read-gate/.test(stderr)
                  ? ""
                  : "; the read needs python3 where the server runs";
        throw new Error(`cannot read /server_info of ${unitName} on ${box.describe()} (exit ${r.code}): ${stderr || "(no output)"}${hint}`);
    }
    const result = parseServerInfoReadOutput(r.stdout);
    // The server answered, but not with a JSON object: as over HTTP, that fails the read (naming it), not "not serving".
    if ("status" in result && result.status === 200 && result.error) throw new Error(`/server_info of ${unitName} on ${box.describe()}: ${result.error}`);
    return result;
}
