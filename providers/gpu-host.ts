import type { ResourceProvider } from "./resource-provider";
import { newMarker, parseBatch } from "../core/batch-script";
import { gpuFactsScript } from "../core/host-reads";
import type { Connection } from "../components/connection";
import { DeviceMajors, GpuExpectation, GpuFact, gpuExpectationProblems, parseGpuQuery, parseProcDevices, parseProxmoxVersion } from "../core/gpu-facts";
import { remoteFor } from "./context";
import { changedKeys } from "./diff-inputs";

interface GpuHostInputs {
    providerVersion: string;
    connection: Connection;
    expectedGpus: GpuExpectation;
}

interface GpuHostOutputs extends GpuHostInputs {
    gpus: GpuFact[];
    driverVersion: string;
    deviceMajors: DeviceMajors | null;
    proxmoxVersion: string;
}

async function readFacts(connection: Connection) {
    const remote = remoteFor(connection, "host");
    // In the direct topology the "host" is the container itself: nvidia-smi works there too.
    const marker = newMarker();
    const result = await remote.run(["sh", "-c", gpuFactsScript(marker)]);
    if (result.code !== 0) {
        // The read-only key's gate refusing the read is not a driver problem: its message says what to do.
        if (result.stderr.includes("sglang-serve-read-gate: refused")) throw new Error(`${remote.describe()}: ${result.stderr.trim()}`);
        const said = result.stderr.trim() || (parseBatch(result.stdout, marker).get("gpus") ?? result.stdout).trim();
        throw new Error(`nvidia-smi failed on ${connection.address} (exit ${result.code}): ${said}; ` + "is the NVIDIA driver loaded?");
    }
    const sections = parseBatch(result.stdout, marker);
    const { gpus, driverVersion } = parseGpuQuery(sections.get("gpus") ?? "");
    return {
        gpus,
        driverVersion,
        deviceMajors: parseProcDevices(sections.get("devices") ?? ""),
        proxmoxVersion: parseProxmoxVersion(sections.get("proxmox") ?? ""),
    };
}

async function createOrUpdate(inputs: GpuHostInputs): Promise<GpuHostOutputs> {
    const facts = await readFacts(inputs.connection);
    const problems = gpuExpectationProblems(inputs.expectedGpus, facts.gpus);
    if (problems.length > 0) {
        throw new Error(`GPU host ${inputs.connection.address}: ${problems.join("; ")}`);
    }
    return { ...inputs, ...facts };
}

export const provider: ResourceProvider<GpuHostInputs, GpuHostOutputs> = {
    async diff(_id, olds, news) {
        const changed = changedKeys(olds, news, ["providerVersion", "connection", "expectedGpus"]);
        // Live facts that no longer meet the expectation (after a refresh) are drift to repair or report.
        const unmet = gpuExpectationProblems(news.expectedGpus, olds.gpus ?? []).length > 0;
        return { changes: changed.length > 0 || unmet, replaces: [] };
    },
    async create(inputs) {
        const outs = await createOrUpdate(inputs);
        return { id: `${inputs.connection.address}:${inputs.connection.port}`, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`GpuHost ${id}: no state to read from`);
        const facts = await readFacts(props.connection);
        const outs = { ...props, ...facts };
        return { id, props: outs };
    },
    async update(_id, _olds, news) {
        return { outs: await createOrUpdate(news) };
    },
    async delete() {
        // The host is never changed by the stack: nothing to undo.
    },
};
