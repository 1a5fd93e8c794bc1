import type { CompleteProvider } from "./resource-provider";
import { newMarker, parseBatch } from "../core/batch-script";
import { gpuFactsScript } from "../core/box/host-reads";
import type { Connection } from "../core/connection";
import { gpuExpectationProblems, parseGpuQuery, parseProcDevices, parseProxmoxVersion } from "../core/box/gpu-facts";
import { servedByThisProcess } from "./context";
import type { ProviderRun } from "./provider-run";
import { changedKeys } from "./diff-inputs";
import type { GpuHostOutputs, GpuHostProps } from "./gpu-host-props";

async function readFacts(run: ProviderRun, connection: Connection) {
    const remote = run.remoteFor(connection, "host");
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

async function createOrUpdate(run: ProviderRun, inputs: GpuHostProps): Promise<GpuHostOutputs> {
    const facts = await readFacts(run, inputs.connection);
    const problems = gpuExpectationProblems(inputs.expectedGpus, facts.gpus);
    if (problems.length > 0) {
        throw new Error(`GPU host ${inputs.connection.address}: ${problems.join("; ")}`);
    }
    return { ...inputs, ...facts };
}

/** The GpuHost's verbs for one run. */
export const gpuHostProvider = (run: ProviderRun): CompleteProvider<GpuHostProps, GpuHostOutputs> => ({
    async check(_olds, news) {
        return { inputs: news };
    },
    async diff(_id, olds, news) {
        const changed = changedKeys(olds, news, ["providerVersion", "connection", "expectedGpus"]);
        // Live facts that no longer meet the expectation (after a refresh) are drift to repair or report.
        const unmet = gpuExpectationProblems(news.expectedGpus, olds.gpus ?? []).length > 0;
        return { changes: changed.length > 0 || unmet, replaces: [] };
    },
    async create(inputs) {
        const outs = await createOrUpdate(run, inputs);
        return { id: `${inputs.connection.address}:${inputs.connection.port}`, outs };
    },
    async read(id, props) {
        if (!props) throw new Error(`GpuHost ${id}: no state to read from`);
        const facts = await readFacts(run, props.connection);
        const outs = { ...props, ...facts };
        return { id, props: outs };
    },
    async update(_id, _olds, news) {
        return { outs: await createOrUpdate(run, news) };
    },
    async delete() {
        // The host is never changed by the stack: nothing to undo.
    },
});

/** What the provider module stored in state calls (components/dynamic-provider.ts). */
export const provider = servedByThisProcess(gpuHostProvider);
