import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { labDown, labExec, labUp, readLabInfo } from "../../lab/control";
import type { LabInfo, LabUpOptions } from "../../lab/control";
import { Deployment } from "../../lab/deployment";
import { labStackConfig, StackConfigFile } from "../../lab/stack";
import { httpGetJson } from "../../remote/probe";

export const UNIT = "sglang-qwen.service";

/** What a test's lab may differ in (its GPUs, its container's VMID): the rest of labUp's options are the test lab's own. */
export type LabOptions = Pick<LabUpOptions, "gpus" | "vmid">;

/** A lab of its own on other loopback addresses than the default one, so a developer's lab can keep running. */
export async function startLab(prefix: string, net: number, opts: LabOptions = {}): Promise<{ labDir: string; info: LabInfo }> {
    const labDir = fs.mkdtempSync(path.join(os.tmpdir(), `sglang-serve-${prefix}-lab-`));
    process.env.SGLANG_LAB_DIR = labDir;
    await labUp({ ...opts, labDir, hostAddress: `127.0.${net}.5`, containerAddress: `127.0.${net}.29`, fresh: true });
    return { labDir, info: readLabInfo(labDir) };
}

/**
 * A lab of its own for the enclosing describe (call it there): up before its
 * tests, down after them. Its fields are set once the before hook ran.
 */
export function useLab(prefix: string, net: number, opts: LabOptions = {}): { readonly labDir: string; readonly info: LabInfo } {
    const lab = {} as { labDir: string; info: LabInfo };
    before(async () => Object.assign(lab, await startLab(prefix, net, opts)));
    after(async () => {
        if (lab.labDir) await labDown(lab.labDir);
        delete process.env.SGLANG_LAB_DIR;
    });
    return lab;
}

/** Runs a command on a lab machine that must succeed; its trimmed stdout. */
export async function onBox(labDir: string, machine: "host" | "container", command: string): Promise<string> {
    const r = await labExec(machine, command, { labDir, timeoutMs: 30_000 });
    if (r.code !== 0) throw new Error(`lab ${machine}: ${command} -> exit ${r.code}: ${r.stderr}`);
    return r.stdout.trim();
}

export async function mainPid(labDir: string, unit = UNIT): Promise<string> {
    return onBox(labDir, "container", `systemctl show -p MainPID --value ${unit}`);
}

/** GET /health on the lab container's server: the status, or the error when nothing answers. */
export async function healthStatus(info: LabInfo): Promise<number | string> {
    const r = await httpGetJson(`http://${info.container.address}:30000/health`, { timeoutMs: 10_000 });
    return "status" in r ? r.status : r.error;
}

/**
 * kpro5's config on the lab (pct-exec) with the container's cores managed, as
 * kpro5 manages them: adopting the container leaves its config as it was, and
 * a `pct set` by hand is drift that `up` repairs.
 */
export async function managedLabConfig(labDir: string, info: LabInfo): Promise<StackConfigFile> {
    const config = labStackConfig(info, "pct-exec");
    const cores = /^cores: (\d+)$/m.exec(await onBox(labDir, "host", "pct config 129"));
    if (!cores) throw new Error("the lab container has no cores setting");
    config["sglang-serve:container"]!.cores = Number(cores[1]);
    return config;
}

/** GET /server_info on the box, as the lab container's loopback client sees it (with the server's API key). */
export async function serverInfoOnBox(labDir: string, info: LabInfo, apiKey: string): Promise<Record<string, unknown>> {
    const body = await onBox(
        labDir,
        "container",
        `python3 -c 'import json,urllib.request as u; r=u.Request("http://${info.container.address}:30000/server_info", headers={"Authorization": "Bearer ${apiKey}"}); print(u.urlopen(r, timeout=10).read().decode())'`,
    );
    return JSON.parse(body) as Record<string, unknown>;
}

/** The stack config's service block, to edit. */
export function service(config: StackConfigFile): Record<string, unknown> {
    return config["sglang-serve:service"]!;
}

/** The SglangService's outputs in the state (`pulumi stack export`): what the last `up` recorded of the server. */
export async function serviceOutputsInState(d: Deployment): Promise<Record<string, unknown> | undefined> {
    return (await d.serviceInState())?.outputs;
}

/** The SglangService's URN, for `up --replace`. */
export async function serviceUrn(d: Deployment): Promise<string> {
    const urn = (await d.serviceInState())?.urn;
    if (!urn) throw new Error("no SglangService in the state");
    return urn;
}

/** The SglangService's servingFigures output in the state: the last good config's figures. */
export async function servingFiguresInState(d: Deployment): Promise<unknown> {
    return (await serviceOutputsInState(d))?.servingFigures;
}

/** Serving figures as recorded: [accept length, throughput] in total, then for code, prose and long context. */
export function labFigures(algorithm: string, ...[total, code, prose, long]: [number, number][]) {
    const figures = ([acceptLength, throughput]: [number, number]) => ({ acceptLength, throughput });
    return { algorithm, ...figures(total!), buckets: { code: figures(code!), prose: figures(prose!), "long-context": figures(long!) } };
}

/** What the serving-quality gate measures on the lab box (lab/sglang/speculation.ts) for the field config: the MTP head, one step, over the shipped prompt set. */
export const NEXTN_LAB_FIGURES = labFigures("NEXTN", [1.72, 45.17], [1.803, 51.17], [1.707, 48.44], [1.6, 32.98]);
