import { CompleteProvider, keepingProviderModule, ResourceInitFailed } from "./resource-provider";
import { newMarker, parseBatch } from "../core/batch-script";
import { containerReadScript } from "../core/box/host-reads";
import type { ContainerConfig } from "../core/config/schema";
import type { DeviceMajors } from "../core/box/gpu-facts";
import {
    editPassthroughInPlace,
    parsePctConfig,
    PctConfigError,
    passthroughForm,
    passthroughFromConfig,
    passthroughMatches,
    passthroughNeedsEdit,
    PctConfig,
    PctLockedError,
    pctOption,
    pctSetArgs,
    pctView,
} from "../core/box/pct-config";
import { editPctConfigFile, pctConfigPaths } from "../remote/pct-config-file";
import type { RemoteHost } from "../remote/remote-host";
import { servedByThisProcess } from "./context";
import type { ProviderRun } from "./provider-run";
import { say } from "./say";
import { changedKeys } from "./diff-inputs";
import { deepEqual } from "../core/drift/diff";
import type { ContainerOutputs, ContainerProps } from "./lxc-container-props";

interface LiveContainer {
    conf: PctConfig;
    status: string;
}

/** `pct config` and `pct status` in one command; null when the container does not exist. */
async function readContainer(remote: RemoteHost, vmid: number): Promise<LiveContainer | null> {
    const marker = newMarker();
    const r = await remote.run(["sh", "-c", containerReadScript(vmid, marker)]);
    if (r.code === 3 || /does not exist/.test(r.stderr)) return null;
    if (r.code !== 0) throw new Error(`pct config ${vmid} failed on ${remote.describe()} (exit ${r.code}): ${r.stderr.trim()}`);
    const sections = parseBatch(r.stdout, marker);
    const status = (sections.get("status") ?? "").replace(/^status:\s*/, "").trim();
    try {
        return { conf: parsePctConfig(sections.get("config") ?? ""), status };
    } catch (e) {
        if (!(e instanceof PctConfigError)) throw e;
        throw new Error(`pct config ${vmid} on ${remote.describe()} printed a config sglang-serve cannot read: ${e.message}`, { cause: e });
    }
}

function restartNeeds(inputs: ContainerProps, live: PctConfig): string[] {
    const plan = pctSetArgs(inputs.container, live);
    const needs = plan.changes.filter((c) => c.needsRestart).map((c) => c.field);
    const form = passthroughForm(inputs.proxmoxVersion);
    if (passthroughNeedsEdit(live, inputs.container.gpus, inputs.deviceMajors, form))
        needs.push(form === "devN" ? "container.gpus (passthrough devN entries)" : "container.gpus (passthrough lines)");
    return needs;
}

function outputsOf(inputs: ContainerProps, live: LiveContainer, pendingRestart: string[]): ContainerOutputs {
    return {
        ...inputs,
        restart: "no",
        status: live.status,
        settings: pctView(live.conf),
        passthrough: passthroughFromConfig(live.conf),
        pendingRestart,
    };
}

/**
 * Brings the container to the declared settings in place: `pct set` for
 * everything it can set, and for the GPU passthrough lines (raw `lxc.*` keys,
 * which it cannot) an edit of those lines alone in the config file, under
 * Proxmox's config lock, keeping every other line and section (snapshots,
 * pending changes) byte for byte. A locked container (backup, migration,
 * snapshot) is refused before anything changes. The container is never
 * restarted by the stack: changes that need a restart are reported and take
 * effect at its next start.
 */
async function converge(run: ProviderRun, id: string, inputs: ContainerProps): Promise<ContainerOutputs> {
    const remote = run.remoteFor(inputs.connection, "host");
    const vmid = inputs.container.vmid;
    const live = await readContainer(remote, vmid);
    if (!live) {
        throw new Error(
            `container ${vmid} does not exist on ${inputs.connection.address}; sglang-serve adopts an existing ` +
                `container (create it with pct create, then set sglang-serve:container.adopt: true)`,
        );
    }
    const needs = restartNeeds(inputs, live.conf);
    const plan = pctSetArgs(inputs.container, live.conf);
    const form = passthroughForm(inputs.proxmoxVersion);
    const passthroughChanges = passthroughNeedsEdit(live.conf, inputs.container.gpus, inputs.deviceMajors, form);
    const lock = pctOption(live.conf, "lock");
    const stopped = live.status === "stopped";
    if (lock && (plan.argv || passthroughChanges || stopped)) throw new PctLockedError(vmid, lock);
    if (plan.argv) {
        say(`[ct${vmid}] ${plan.argv.join(" ")}`);
        await remote.runChecked(plan.argv);
    }
    if (passthroughChanges) {
        // pct set cannot write raw lxc.* keys, and a devN entry it writes into a running container stays pending
        // (before pve-container 6.0.4): edit exactly those lines of the file, under the config lock.
        const paths = pctConfigPaths(vmid);
        try {
            const edited = await editPctConfigFile(remote, paths, (text) => {
                const edit = editPassthroughInPlace(text, vmid, inputs.container.gpus, inputs.deviceMajors, form);
                for (const line of edit.removed) say(`[ct${vmid}] ${paths.config}: - ${line}`);
                for (const line of edit.added) say(`[ct${vmid}] ${paths.config}: + ${line}`);
                return edit.text;
            });
            if (edited.changed)
                say(
                    `[ct${vmid}] GPU passthrough for GPUs ${inputs.container.gpus.join(", ")} written into ${paths.config} as ${form === "devN" ? `devN entries (Proxmox VE ${inputs.proxmoxVersion}: pve-container allows each device's major and minor at start)` : "raw lxc lines"} (other lines and sections kept)`,
                );
        } catch (e) {
            if (!plan.argv) throw e;
            throw await partialFailure(id, remote, inputs, plan.argv, e as Error);
        }
    }
    if (needs.length > 0 && live.status === "running") {
        say(`[ct${vmid}] takes effect at the container's next restart (not restarted by the stack): ${needs.join(", ")}`);
    }
    if (stopped) await startContainer(remote, vmid);
    const after = await readContainer(remote, vmid);
    return outputsOf(inputs, after!, live.status === "running" ? needs : []);
}

/**
 * The passthrough edit failed after `pct set` had already changed the box:
 * fail with what the box now holds as the resource's state (the SDK's
 * ErrorResourceInitFailed: id, properties, reasons), so the next preview
 * shows only what is still to do.
 */
async function partialFailure(id: string, remote: RemoteHost, inputs: ContainerProps, applied: string[], cause: Error): Promise<ResourceInitFailed> {
    const vmid = inputs.container.vmid;
    const after = await readContainer(remote, vmid);
    const message = `${applied.join(" ")} was applied, then the GPU passthrough edit failed: ${cause.message.replace("nothing was changed", "the passthrough lines were not changed")}`;
    return new ResourceInitFailed(message, id, outputsOf(inputs, after!, restartNeeds(inputs, after!.conf)), [
        cause.message,
        `applied before it: ${applied.join(" ")}`,
    ]);
}

/** How long a started container's systemd gets to finish booting before the service goes on anyway. */
const BOOT_WAIT_MS = 120_000;

/**
 * The declared server runs in the container, so a stopped one is started
 * (issue 13, `pct stop 129` before `up`), never restarted: `pct start`, then
 * wait until its systemd has booted (the server's unit is enabled and starts
 * with it; the service's readiness wait judges it).
 */
async function startContainer(remote: RemoteHost, vmid: number): Promise<void> {
    say(`[ct${vmid}] container ${vmid} is stopped; starting it (pct start ${vmid}): the declared server runs in it`);
    await remote.runChecked(["pct", "start", String(vmid)]);
    // `is-system-running --wait` returns once boot is done: "running", or "degraded" (exit 1) when some unit failed.
    const boot = await remote.run(["pct", "exec", String(vmid), "--", "systemctl", "is-system-running", "--wait"], { timeoutMs: BOOT_WAIT_MS });
    const stateText = boot.stdout.trim() || boot.stderr.trim() || `exit ${boot.code}`;
    say(`[ct${vmid}] container ${vmid} started; its systemd says ${stateText}`);
}

/** The LxcContainer's verbs for one run. */
export const lxcContainerProvider = (run: ProviderRun): CompleteProvider<ContainerProps, ContainerOutputs> => ({
    async check(olds, news) {
        const fields: string[] = [];
        const o = olds.container ?? ({} as Partial<ContainerConfig>);
        const n = news.container;
        if (olds.container && o.hostname !== n.hostname) fields.push("container.hostname");
        if (olds.container && !deepEqual(o.features, n.features)) fields.push("container.features");
        if (olds.container && !deepEqual(o.gpus, n.gpus)) fields.push("container.gpus");
        const restart = fields.length > 0 ? `needed for: ${fields.join(", ")} (not done by the stack)` : "no";
        return { inputs: { ...news, restart } };
    },
    async diff(_id, olds, news) {
        if (olds.vmid !== news.vmid) {
            // Another vmid is another container: never reuse this one's resource for it.
            return { changes: true, replaces: ["vmid"], deleteBeforeReplace: false };
        }
        const changed = changedKeys(olds, news, ["providerVersion", "connection", "container", "deviceMajors"]);
        let drift = false;
        if (olds.settings && olds.passthrough) {
            const liveGpus = olds.passthrough.gpus;
            drift = !deepEqual(
                liveGpus,
                [...news.container.gpus].sort((a, b) => a - b),
            );
            // deviceMajors is unknown in a preview before the GpuHost is read: then only the GPUs are compared.
            const majors = news.deviceMajors as Partial<DeviceMajors> | string;
            if (typeof majors === "object" && typeof majors.nvidia === "number" && typeof majors.nvidiaUvm === "number") {
                drift ||= !passthroughMatches(olds.passthrough, news.container.gpus, { nvidia: majors.nvidia, nvidiaUvm: majors.nvidiaUvm });
            }
            const s = olds.settings;
            const c = news.container;
            drift ||=
                (c.cores !== undefined && s.cores !== c.cores) ||
                (c.memoryMiB !== undefined && s.memoryMiB !== c.memoryMiB) ||
                (c.swapMiB !== undefined && s.swapMiB !== c.swapMiB) ||
                (c.onboot !== undefined && (s.onboot ?? false) !== c.onboot) ||
                s.hostname !== c.hostname;
        }
        // A stopped container: `up` starts it (converge), so the preview shows it.
        if (olds.status !== undefined && olds.status !== "running") drift = true;
        return { changes: changed.length > 0 || drift, replaces: [] };
    },
    async create(inputs) {
        if (!inputs.container.adopt) {
            throw new Error(
                `sglang-serve:container.adopt is false, but creating containers is not supported: ` +
                    `create container ${inputs.container.vmid} with pct create and set adopt: true`,
            );
        }
        const id = `${inputs.connection.address}/lxc/${inputs.container.vmid}`;
        return { id, outs: await keepingProviderModule(inputs, () => converge(run, id, inputs)) };
    },
    async read(id, props) {
        if (!props) throw new Error(`${id}: no state to read from`);
        const remote = run.remoteFor(props.connection, "host");
        const live = await readContainer(remote, props.container.vmid);
        if (!live) return { id: "", props: undefined as unknown as ContainerOutputs };
        const outs = outputsOf(props, live, props.pendingRestart ?? []);
        // Inputs as the box has them, so `preview --refresh` shows box -> declared for the declared fields.
        const view = outs.settings;
        const container: ContainerConfig = { ...props.container, gpus: outs.passthrough.gpus };
        if (props.container.cores !== undefined && view.cores !== undefined) container.cores = view.cores;
        if (props.container.memoryMiB !== undefined && view.memoryMiB !== undefined) container.memoryMiB = view.memoryMiB;
        if (props.container.swapMiB !== undefined && view.swapMiB !== undefined) container.swapMiB = view.swapMiB;
        if (props.container.onboot !== undefined) container.onboot = view.onboot ?? false;
        if (view.hostname !== undefined) container.hostname = view.hostname;
        const { status: _s, settings: _v, passthrough: _p, pendingRestart: _r, ...inputs } = outs;
        return { id, props: outs, inputs: { ...inputs, container } as ContainerProps };
    },
    async update(id, _olds, news) {
        return { outs: await keepingProviderModule(news, () => converge(run, id, news)) };
    },
    async delete(_id, props) {
        const vmid = props.container.vmid;
        if (!props.container.allowDelete) {
            throw new Error(
                `refusing to delete container ${vmid}: the model weights live there. ` +
                    "Set sglang-serve:container.allowDelete: true to delete it with the stack.",
            );
        }
        const remote = run.remoteFor(props.connection, "host");
        say(`[ct${vmid}] stopping and destroying container ${vmid} (container.allowDelete is true)`);
        await remote.run(["pct", "stop", String(vmid)]);
        await remote.runChecked(["pct", "destroy", String(vmid)]);
    },
});

/** What the provider module stored in state calls (components/dynamic-provider.ts). */
export const provider = servedByThisProcess(lxcContainerProvider);
