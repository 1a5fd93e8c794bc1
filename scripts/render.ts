/**
 * `npm run render -- --stack <name>`: what the stack would write on the box,
 * without Pulumi and without contacting any host. Reads Pulumi.<name>.yaml,
 * validates it like the program does, and prints each server's systemd unit
 * (byte for byte what a deploy of the stack writes: the server's plan,
 * core/plan/server-plan.ts, with the project and stack as its owner) and
 * EnvironmentFile with secrets masked. Invalid config: the one formatted
 * error on stderr, exit 2.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { validateStackConfig } from "../core/config/config";
import { formatConfigIssues } from "../core/config/issues";
import { CONFIG_NAMESPACE } from "../core/config/namespace";
import { BoxConfig, ServerConfig, StackConfig } from "../core/config/schema";
import { rawStackConfig, stackFileSource } from "../core/config/stack-config-source";
import { SECRET_MASK } from "../core/secrets/redact";
import { renderSecretFiles } from "../core/secrets/deploy-secrets";
import type { UnitOwner } from "../core/unit/systemd-unit";
import { planBoxOf, planServer } from "../core/plan/server-plan";
import { environmentFilePath, unitPath } from "../core/unit/unit-paths";
import * as yaml from "js-yaml";

/**
 * Stands in for an encrypted value (`{ secure: ... }`) during validation: the
 * script has no passphrase, and a secret's shape is checked when Pulumi
 * decrypts it. Never printed: output masks secrets.
 */
const SECRET_STAND_IN = "0123456789abcdef0123456789abcdef";

export interface RenderedStack {
    config: StackConfig;
    warnings: string[];
    notices: string[];
    /** Per server of the stack, in declared order. */
    servers: RenderedServer[];
}

export interface RenderedServer {
    /** The box, in words. */
    where: string;
    unitPath: string;
    unitText: string;
    environmentFilePath?: string;
    /** The EnvironmentFile with secret values masked. */
    environmentFileMasked?: string;
}

export class ConfigError extends Error {}

/** The raw config of a stack file's text (core/config/stack-config-source.ts); secure values become a stand-in. */
export function rawConfigFromStackYaml(text: string): Record<string, unknown> {
    return rawStackConfig(stackFileSource(yaml.load(text), SECRET_STAND_IN));
}

/**
 * Validates a stack file's text and renders the files the stack would write,
 * from each server's plan (core/plan/server-plan.ts), as the program does.
 * `owner`: the project and stack deploying it, recorded in the unit. Throws
 * ConfigError on invalid config.
 */
export function renderStack(text: string, owner: UnitOwner): RenderedStack {
    const result = validateStackConfig(rawConfigFromStackYaml(text));
    if (!result.ok) throw new ConfigError(formatConfigIssues(result.issues));
    const { config } = result;
    return { config, warnings: result.warnings, notices: result.notices, servers: config.servers.map((s) => renderServer(s, config, owner)) };
}

function renderServer(service: ServerConfig, { boxes, readiness }: StackConfig, owner: UnitOwner): RenderedServer {
    const box = boxes.find((b) => b.host.name === service.box)!;
    const plan = planServer(service, planBoxOf(box), readiness, owner).service;
    const rendered: RenderedServer = { where: where(box), unitPath: unitPath(service.name), unitText: plan.unitText };
    const files = renderSecretFiles({
        apiKey: plan.secrets.apiKey ? SECRET_STAND_IN : undefined,
        environment: Object.fromEntries(plan.secrets.environment.map((name) => [name, SECRET_STAND_IN])),
    });
    if (files.environmentFile) {
        rendered.environmentFilePath = environmentFilePath(service.name);
        // Render with the real renderer, then mask: the layout shown is the one written.
        rendered.environmentFileMasked = files.environmentFile.split(SECRET_STAND_IN).join(SECRET_MASK);
    }
    return rendered;
}

function where({ host, container }: BoxConfig): string {
    return host.topology === "pct-exec" && container
        ? `in container ${container.vmid} (${container.hostname}) on ${host.address}, via pct exec`
        : `on ${host.address}`;
}

function option(argv: readonly string[], long: string, short?: string): string | undefined {
    const i = argv.findIndex((a) => a === long || (short !== undefined && a === short));
    if (i !== -1) return argv[i + 1];
    return argv.find((a) => a.startsWith(`${long}=`))?.slice(long.length + 1);
}

/** `--stack NAME` reads Pulumi.NAME.yaml beside package.json; `--file PATH` reads any stack file (tests). */
function stackFile(argv: readonly string[]): string | undefined {
    const file = option(argv, "--file");
    if (file) return file;
    const stack = option(argv, "--stack", "-s");
    return stack && /^[A-Za-z0-9_.-]+$/.test(stack) ? path.join(__dirname, "..", `Pulumi.${stack}.yaml`) : undefined;
}

/** The project a Pulumi.yaml in `dir` names (its `name:`), if there is one. */
export function projectName(dir: string): string | undefined {
    const file = path.join(dir, "Pulumi.yaml");
    if (!fs.existsSync(file)) return undefined;
    const name = (yaml.load(fs.readFileSync(file, "utf8")) as { name?: unknown } | null)?.name;
    return typeof name === "string" ? name : undefined;
}

/**
 * The owner a deploy of the stack file records in the unit: the project
 * Pulumi.yaml names (beside the stack file, where Pulumi looks for it, else
 * this project's) and the stack the file's name says (Pulumi.<stack>.yaml).
 * A problem, in words, when either is missing.
 */
export function stackFileOwner(file: string): UnitOwner | string {
    const stack = /^Pulumi\.([A-Za-z0-9_.-]+)\.yaml$/.exec(path.basename(file))?.[1];
    if (stack === undefined) return `${file} is not named Pulumi.<stack>.yaml: the stack, recorded in the unit as its owner, is its name`;
    const project = projectName(path.dirname(file)) ?? projectName(path.join(__dirname, ".."));
    if (project === undefined) return `no project name (Pulumi.yaml's name:) beside ${file} or in ${path.join(__dirname, "..")}`;
    return { project, stack };
}

function main(argv: readonly string[]): number {
    const file = stackFile(argv);
    if (!file) {
        process.stderr.write("usage: npm run render -- --stack <name>   (reads Pulumi.<name>.yaml; or --file <path>)\n");
        return 2;
    }
    if (!fs.existsSync(file)) {
        process.stderr.write(`no stack file ${file}\n`);
        return 2;
    }
    const owner = stackFileOwner(file);
    if (typeof owner === "string") {
        process.stderr.write(`${owner}\n`);
        return 2;
    }
    let rendered: RenderedStack;
    try {
        rendered = renderStack(fs.readFileSync(file, "utf8"), owner);
    } catch (err) {
        if (err instanceof ConfigError) {
            process.stderr.write(`${err.message}\n`);
            return 2;
        }
        throw err;
    }
    for (const warning of rendered.warnings) process.stderr.write(`warning: ${warning}\n`);
    for (const notice of rendered.notices) process.stderr.write(`note: ${notice}\n`);
    const out: string[] = [];
    for (const server of rendered.servers) {
        out.push(`### ${server.unitPath} (${server.where})`, server.unitText);
        if (server.environmentFilePath && server.environmentFileMasked) {
            out.push(`### ${server.environmentFilePath} (mode 0600, secrets masked)`, server.environmentFileMasked);
        } else {
            out.push(`### no EnvironmentFile: no secrets declared (${CONFIG_NAMESPACE}:service.requireApiKey, service.secretEnvironment)`, "");
        }
    }
    process.stdout.write(out.join("\n"));
    return 0;
}

if (require.main === module) {
    process.exitCode = main(process.argv.slice(2));
}
