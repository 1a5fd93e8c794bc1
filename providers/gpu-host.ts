import type { ResourceProvider } from "./resource-provider";
import type { Connection } from "../components/connection";
import {
    DeviceMajors,
    GPU_QUERY,
    GpuExpectation,
    GpuFact,
    gpuExpectationProblems,
    parseGpuQuery,
    parseProcDevices,
    parseProxmoxVersion,
} from "../core/gpu-facts";
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

const SEPARATOR = "----sglang-serve----";

/**
 * One remote command for all facts: nvidia-smi, /proc/devices, pveversion (absent inside a container).
 * The read-only gate (gate/sglang-serve-read-gate) allows exactly this text.
 */
export const FACTS_SCRIPT = [
    `nvidia-smi --query-gpu=${GPU_QUERY} --format=csv,noheader,nounits || exit 1`,
    `echo ${SEPARATOR}`,
    "cat /proc/devices",
    `echo ${SEPARATOR}`,
    "pveversion 2>/dev/null || true",
].join("; ");

async function readFacts(connection: Connection) {
    const remote = remoteFor({ ...connection, vmid: undefined });
    // In the direct topology the "host" is the container itself: nvidia-smi works there too.
    const result = await remote.run(["sh", "-c", FACTS_SCRIPT]);
    if (result.code !== 0) {
        // The read-only key's gate refusing the read is not a driver problem: its message says what to do.
        if (result.stderr.includes("sglang-serve-read-gate: refused")) throw new Error(`${remote.describe()}: ${result.stderr.trim()}`);
        throw new Error(
            `nvidia-smi failed on ${connection.address} (exit ${result.code}): ${result.stderr.trim() || result.stdout.trim()}; ` +
                "is the NVIDIA driver loaded?",
        );
    }
    const [smi, devices, pve] = result.stdout.split(`${SEPARATOR}\n`);
    const { gpus, driverVersion } = parseGpuQuery(smi ?? "");
    return {
        gpus,
        driverVersion,
        deviceMajors: parseProcDevices(devices ?? ""),
        proxmoxVersion: parseProxmoxVersion(pve ?? ""),
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
