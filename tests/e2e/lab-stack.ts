import * as fs from "fs";
import * as path from "path";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const yaml = require("js-yaml") as { load(text: string): unknown };

/** The parts of the lab's lab.json the stacks need. */
export interface LabMachines {
    host: { address: string; sshPort: number; hostKey: string };
    container: { address: string; sshPort: number; hostKey: string; vmid: number };
    clientKeyPath: string;
}

export type StackConfigFile = Record<string, Record<string, unknown>>;

/** kpro5's committed config: the model and server settings every lab stack uses. */
export function kpro5Config(): StackConfigFile {
    const text = fs.readFileSync(path.join(__dirname, "..", "..", "Pulumi.kpro5.yaml"), "utf8");
    return structuredClone((yaml.load(text) as { config: StackConfigFile }).config);
}

/**
 * A stack config for the lab: kpro5's model and server settings, pointed at
 * the lab's machines with their pinned host keys and the lab's client key.
 * `pct-exec` goes through the simulated Proxmox host (kpro5 topology);
 * `direct` ssh-es straight into the container (ct129 topology).
 */
export function labStackConfig(lab: LabMachines, topology: "pct-exec" | "direct"): StackConfigFile {
    const config = kpro5Config();
    const host = config["sglang-serve:host"];
    const machine = topology === "pct-exec" ? lab.host : lab.container;
    Object.assign(host, {
        name: topology === "pct-exec" ? "kpro5" : "llm-two",
        address: machine.address,
        port: machine.sshPort,
        hostKey: machine.hostKey,
        topology,
        sshPrivateKeyPath: lab.clientKeyPath,
    });
    if (topology === "direct") delete config["sglang-serve:container"];
    Object.assign(config["sglang-serve:service"], { listenHost: lab.container.address, endpointHost: lab.container.address });
    return config;
}
