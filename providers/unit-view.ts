import { flagMap } from "../core/sglang/flag-map";
import type { ArgvFields } from "../core/sglang/argv-fields";
import { LiveServerArgs, liveArgsDrift } from "../core/sglang/args";
import { serviceFromUnit } from "../core/unit/systemd-unit";
import { ENVIRONMENT_DIRECTORY } from "../core/unit/unit-paths";
import { serviceNameOf, unitPaths } from "../core/unit/unit-read";

export { unitPaths };

/** A unit file on the box, as the state and the preview show it. */
export interface UnitView {
    text: string;
    command: string[];
    flags: Record<string, string>;
    environment: Record<string, string>;
    /** Absent when the unit on the box cannot be parsed (edited beyond the format). */
    fields?: ArgvFields;
}

export function unitView(text: string): UnitView {
    const parsed = serviceFromUnit(text);
    const { command, flags } = flagMap(parsed.argv);
    return { text, command, flags, environment: parsed.environment, fields: parsed.fields };
}

/** Where a rollout keeps the unit that ran before it (outside the unit directory, so systemd ignores it). */
export function previousPaths(unitName: string): { unit: string; environmentFile: string; serverConfigFile: string } {
    const name = serviceNameOf(unitName);
    return {
        unit: `${ENVIRONMENT_DIRECTORY}/${name}.service.previous`,
        environmentFile: `${ENVIRONMENT_DIRECTORY}/${name}.env.previous`,
        serverConfigFile: `${ENVIRONMENT_DIRECTORY}/${name}.yaml.previous`,
    };
}

/**
 * Fields where the running server (/server_info, normalized) differs from
 * what the unit file on the box says: the unit changed but the process was
 * not restarted. core/sglang/args.ts liveArgsDrift is the comparison.
 */
export function liveArgsMismatch(unit: UnitView, live: LiveServerArgs): string[] {
    if (!unit.fields) return ["(the unit file cannot be read back)"];
    return liveArgsDrift(unit.fields, live).map((d) => d.field);
}
