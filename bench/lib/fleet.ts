import { labExec } from "../../lab/control";
import type { LabInfo } from "../../lab/control";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import * as path from "path";
import type { StackConfig } from "../../core/config/schema";
import { planBoxOf, planServer, ServerPlan } from "../../core/plan/server-plan";
import { renderSecretFiles } from "../../core/secrets/deploy-secrets";
import { ENVIRONMENT_DIRECTORY, UNIT_DIRECTORY, unitName } from "../../core/unit/unit-paths";
import { projectName } from "../../scripts/render";
import { httpGetJson } from "../../remote/probe";
import { LabMachines, labStackConfig, StackConfigFile } from "../../lab/stack";
import { FLEET_GPU, FleetMember, FleetPlan, stackOf } from "./fleet-plan";

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

function validated(config: StackConfigFile): StackConfig {
    const section = (k: string) => config[`sglang-serve:${k}`];
    const r = validateStackConfig({ host: section("host"), container: section("container"), service: section("service"), readiness: section("readiness") });
    if (!r.ok) throw new Error(`fleet config: ${formatConfigIssues(r.issues)}`);
    return r.config;
}

/**
 * A member's plan (core/plan/server-plan.ts) as the stack that runs it plans
 * it: its server on the fleet box, that stack (its program's or its own) as
 * the unit's owner.
 */
export function fleetMemberPlan(info: LabMachines, member: FleetMember, plan: FleetPlan): ServerPlan {
    const { servers, boxes, readiness } = validated(fleetStackConfig(info, member, plan));
    const project = projectName(path.join(__dirname, "..", ".."));
    if (project === undefined) throw new Error("the project has no name (Pulumi.yaml's name:)");
    return planServer(servers[0]!, planBoxOf(boxes[0]!), readiness, { project, stack: stackOf(member, plan) });
}

/**
 * Puts the members' units on the box and starts them, written exactly as the
 * stack that runs each writes it (its plan's unit; the API key in 0600
 * files), so that `up` adopts them as "already runs the declared config"
 * instead of rolling them out one by one (the fleet phases measure what a
 * no-op costs, not 25 rollouts).
 */
export async function preplaceFleet(labDir: string, info: LabInfo, plan: FleetPlan, apiKey: string): Promise<void> {
    const members = plan.all;
    const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
    const lines = ["set -e", `mkdir -p ${ENVIRONMENT_DIRECTORY}`];
    for (const m of members) {
        const { service } = fleetMemberPlan(info, m, plan);
        const name = m.name;
        const files = renderSecretFiles({ apiKey, environment: {} });
        lines.push(
            `echo ${b64(service.unitText)} | base64 -d > ${UNIT_DIRECTORY}/${service.unitName}`,
            `chmod 0644 ${UNIT_DIRECTORY}/${service.unitName}`,
            `(umask 077; echo ${b64(files.environmentFile!)} | base64 -d > ${ENVIRONMENT_DIRECTORY}/${name}.env)`,
            `chmod 0600 ${ENVIRONMENT_DIRECTORY}/${name}.env`,
            `(umask 077; echo ${b64(files.serverConfigFile!)} | base64 -d > ${ENVIRONMENT_DIRECTORY}/${name}.yaml)`,
            `chmod 0600 ${ENVIRONMENT_DIRECTORY}/${name}.yaml`,
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
