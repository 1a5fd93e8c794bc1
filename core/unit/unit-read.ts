// One remote command that reads the state of several systemd units on one box:
// each unit file, whether its EnvironmentFile is the one the stack declares,
// and one `systemctl show` for all of them. The services of a box are read together (a refresh reads
// them in parallel), so a fleet costs one `pct exec` and one systemctl call
// per box instead of several per service.
import { BatchSection, parseBatch, renderBatch } from "../batch-script";
import { shQuote } from "../shell";
import { ENVIRONMENT_DIRECTORY, serverConfigFilePath, UNIT_DIRECTORY } from "./unit-paths";

/** `sglang-qwen.service` -> `qwen`: the unit and its files are named from the service name. */
export function serviceNameOf(unitName: string): string {
    return unitName.replace(/^sglang-/, "").replace(/\.service$/, "");
}

/** Where a unit and its EnvironmentFile live on the box. */
export function unitPaths(unitName: string): { unit: string; environmentFile: string; serverConfigFile: string } {
    return {
        unit: `${UNIT_DIRECTORY}/${unitName}`,
        environmentFile: `${ENVIRONMENT_DIRECTORY}/${serviceNameOf(unitName)}.env`,
        serverConfigFile: serverConfigFilePath(serviceNameOf(unitName)),
    };
}

export interface UnitReadRequest {
    unitName: string;
    unitPath: string;
    environmentFilePath: string;
    /**
     * The sha256 hex of the EnvironmentFile the stack declares ("" when it
     * declares none). The box compares it with its own file and answers only
     * that digest again (the same file) or ENVIRONMENT_DIFFERS: the read, which
     * the read-only key runs, never carries the digest of a file that holds the
     * API key, so a weak key cannot be guessed offline from it (issue 19,
     * finding 7). Only the deploy key's reads carry a digest: the read-only
     * gate allows the read with "" alone (core/read-gate/reads.ts), so that key
     * learns whether the file is there, never whether it matches a digest it
     * chose (issue 34, finding 8).
     */
    expectedEnvironmentHash: string;
}

/** What the box answers for an EnvironmentFile that is there but not the declared one. */
export const ENVIRONMENT_DIFFERS = "differs";

/** Sent when the stack declares no EnvironmentFile: no file's sha256 is 64 zeros. */
const NO_EXPECTED_HASH = "0".repeat(64);

export interface UnitReadResult {
    /** The unit file's text, or null when there is none. */
    unitText: string | null;
    /** The expected sha256 hex when the EnvironmentFile is the declared one, ENVIRONMENT_DIFFERS when it is another, "" when there is none. */
    environmentFileHash: string;
    /** systemd's ActiveState ("active", "failed", ...), "unknown" when systemctl gave none. */
    activeState: string;
    /** systemd's UnitFileState is "enabled". */
    enabled: boolean;
}

const ABSENT = "__absent__";

/** The shell script (core/batch-script.ts framing); `marker` must not occur in the files (a random token). */
export function renderUnitReadScript(units: readonly UnitReadRequest[], marker: string): string {
    const sections: BatchSection[] = [];
    units.forEach((u, i) => {
        const expected = u.expectedEnvironmentHash === "" ? NO_EXPECTED_HASH : u.expectedEnvironmentHash;
        if (!/^[0-9a-f]{64}$/.test(expected)) throw new Error(`unit read: the expected EnvironmentFile hash of ${u.unitName} is not sha256 hex`);
        // `echo` after the file: a file without a final newline must not run into the next marker.
        sections.push({ name: `unit ${i}`, script: `{ cat ${shQuote(u.unitPath)} 2>/dev/null && echo; } || echo ${ABSENT}` });
        sections.push({
            name: `env ${i}`,
            script:
                `h=$(sha256sum ${shQuote(u.environmentFilePath)} 2>/dev/null | cut -d' ' -f1); ` +
                `if [ -z "$h" ]; then echo none; elif [ "$h" = ${expected} ]; then echo ${expected}; else echo ${ENVIRONMENT_DIFFERS}; fi`,
        });
    });
    sections.push({
        name: "show",
        script: `systemctl show -p Id -p ActiveState -p UnitFileState ${units.map((u) => shQuote(u.unitName)).join(" ")} 2>/dev/null || true`,
    });
    return renderBatch(sections, marker);
}

/** Splits the script's output back into one result per request (in order). Throws on output it did not produce. */
export function parseUnitReadOutput(output: string, units: readonly UnitReadRequest[], marker: string): UnitReadResult[] {
    const sections = parseBatch(output, marker);
    const show = sections.get("show");
    if (show === undefined) throw new Error("unit read: the output has no systemctl section (the script did not run to its end)");
    // `systemctl show` prints one block of Key=Value lines per unit, separated by blank lines.
    const byId = new Map<string, Record<string, string>>();
    for (const block of show.split(/\n\s*\n/)) {
        const props: Record<string, string> = {};
        for (const l of block.split("\n")) {
            const eq = l.indexOf("=");
            if (eq > 0) props[l.slice(0, eq)] = l.slice(eq + 1);
        }
        if (props.Id) byId.set(props.Id, props);
    }
    return units.map((u, i) => {
        const unit = sections.get(`unit ${i}`);
        const env = sections.get(`env ${i}`);
        if (unit === undefined || env === undefined) throw new Error(`unit read: no section for ${u.unitName} in the output`);
        // The section is the file's text exactly: the `echo` after it supplied the newline the split took.
        const unitText = unit;
        const hash = env.trim();
        const props = byId.get(u.unitName);
        return {
            unitText: unitText === ABSENT ? null : unitText,
            environmentFileHash: hash === "none" ? "" : hash,
            activeState: props?.ActiveState || "unknown",
            enabled: props?.UnitFileState === "enabled",
        };
    });
}
