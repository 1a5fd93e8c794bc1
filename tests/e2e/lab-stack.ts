import * as fs from "fs";
import * as path from "path";
import { labStackConfig as labConfigFrom, LabMachines } from "../../lab/control";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const yaml = require("js-yaml") as { load(text: string): unknown };

export type { LabMachines };
export type StackConfigFile = Record<string, Record<string, unknown>>;

/** kpro5's committed config: the model and server settings every lab stack uses. */
export function kpro5Config(): StackConfigFile {
    const text = fs.readFileSync(path.join(__dirname, "..", "..", "Pulumi.kpro5.yaml"), "utf8");
    return structuredClone((yaml.load(text) as { config: StackConfigFile }).config);
}

/** kpro5's config pointed at the lab (see lab/control.ts labStackConfig). */
export function labStackConfig(lab: LabMachines, topology: "pct-exec" | "direct"): StackConfigFile {
    return labConfigFrom(lab, topology, kpro5Config());
}
