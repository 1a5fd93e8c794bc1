import { labExec } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import type { ServiceConfig } from "../../core/config/schema";
import { renderSecretFiles } from "../../core/secrets/deploy-secrets";
import { renderUnit } from "../../core/unit/systemd-unit";
import { ENVIRONMENT_DIRECTORY, UNIT_DIRECTORY, unitName } from "../../core/unit/unit-paths";
import { httpGetJson } from "../../remote/probe";
import { LabMachines, labStackConfig, StackConfigFile } from "../../lab/stack";
import { FLEET_GPU, FleetMember, FleetPlan } from "./fleet-plan";

/** The fleet lab's box: its host with a FLEET_GPU per planned server, every one passed through to the container. */
function fleetBox(info: LabMachines, plan: FleetPlan): StackConfigFile {
    const gpuCount = plan.all.length;
    const config = labStackConfig(info, "pct-exec");
    Object.assign(config["sglang-serve:host"]!.gpus as Record<string, unknown>, { ...FLEET_GPU, count: gpuCount });
    config["sglang-serve:container"]!.gpus = Array.from({ length: gpuCount }, (_, i) => i);
    return config;
}

/** A member's server: the lab stack's, at TP 1 on its own GPU, with its name, port and the plan's watchdog timeout. */
function fleetServer(config: StackConfigFile, member: FleetMember, plan: FleetPlan): Record<string, unknown> {
    return {
        ...config["sglang-serve:service"],
        name: member.name,
        port: member.port,
        gpus: [member.gpu],
        tensorParallelSize: 1,
        extraArgs: ["--watchdog-timeout", String(plan.watchdogTimeoutSeconds)],
    };
}

/** A one-service stack config for the fleet lab: the lab stack's, serving the member. */
export function fleetStackConfig(info: LabMachines, member: FleetMember, plan: FleetPlan): StackConfigFile {
    const config = fleetBox(info, plan);
    config["sglang-serve:service"] = fleetServer(config, member, plan);
    return config;
}

/** A fleet program's config: the stack program (index.ts) with the members as its `servers`, on the one fleet box. */
export function fleetProgramConfig(info: LabMachines, members: FleetMember[], plan: FleetPlan): StackConfigFile {
    const config = fleetBox(info, plan);
    const servers = members.map((m) => fleetServer(config, m, plan));
    delete config["sglang-serve:service"];
    return { ...config, "sglang-serve:servers": servers as unknown as Record<string, unknown> };
}

function validatedService(config: StackConfigFile): ServiceConfig {
    const section = (k: string) => config[`sglang-serve:${k}`];
    const r = validateStackConfig({ host: section("host"), container: section("container"), service: section("service"), readiness: section("readiness") });
    if (!r.ok) throw new Error(`fleet config: ${formatConfigIssues(r.issues)}`);
    return r.config.servers[0]!;
}

/**
 * Puts the members' units on the box and starts them, written exactly as the
 * stack renders them (components/sglang-service.ts: renderUnit with secrets,
 * the API key in a 0600 EnvironmentFile), so that `up` adopts them as
 * "already runs the declared config" instead of rolling them out one by one
 * (the fleet phases measure what a no-op costs, not 25 rollouts).
 */
export async function preplaceFleet(labDir: string, info: LabInfo, plan: FleetPlan, apiKey: string): Promise<void> {
    const members = plan.all;
    const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
    const lines = ["set -e", `mkdir -p ${ENVIRONMENT_DIRECTORY}`];
    for (const m of members) {
        const service = validatedService(fleetStackConfig(info, m, plan));
        const unit = unitName(service.name);
        const files = renderSecretFiles({ apiKey, environment: {} });
        lines.push(
            `echo ${b64(renderUnit(service, { hasSecrets: true }))} | base64 -d > ${UNIT_DIRECTORY}/${unit}`,
            `chmod 0644 ${UNIT_DIRECTORY}/${unit}`,
            `(umask 077; echo ${b64(files.environmentFile!)} | base64 -d > ${ENVIRONMENT_DIRECTORY}/${service.name}.env)`,
            `chmod 0600 ${ENVIRONMENT_DIRECTORY}/${service.name}.env`,
            `(umask 077; echo ${b64(files.serverConfigFile!)} | base64 -d > ${ENVIRONMENT_DIRECTORY}/${service.name}.yaml)`,
            `chmod 0600 ${ENVIRONMENT_DIRECTORY}/${service.name}.yaml`,
        );
    }
    lines.push("systemctl daemon-reload");
    for (const m of members) lines.push(`systemctl enable ${unitName(m.name)}`, `systemctl start ${unitName(m.name)}`);
    const r = await labExec("container", "sh -s", { labDir, input: lines.join("\n") + "\n", timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`placing the fleet's units failed (exit ${r.code}): ${r.stderr.slice(-2000)}`);
    const deadline = Date.now() + 120_000;
    for (const m of members) {
        for (;;) {
            const h = await httpGetJson(`http://${info.container.address}:${m.port}/health`, { timeoutMs: 5000 });
            if ("status" in h && h.status === 200) break;
            if (Date.now() > deadline) throw new Error(`fleet server ${m.name} on port ${m.port} not ready: ${JSON.stringify(h).slice(0, 300)}`);
            await new Promise((res) => setTimeout(res, 250));
        }
    }
}
