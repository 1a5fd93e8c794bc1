/**
 * `npm run -s read-gate -- <command>`: the read-only key's gate on the box
 * (gate/sglang-serve-read-gate; docs/operator-guide.md, "The read-only key").
 *
 *   install-script --public-key FILE (--stack NAME [--box NAME] | (--vmid N... | --direct) --python PATH --model PATH...)
 *                  [--gate-path PATH] [--authorized-keys PATH] [--from PATTERNS] [--comment TEXT]
 *       prints the sh script that installs the gate and the key's gated line;
 *       pipe it into the box as the user the stack logs in as:
 *         npm run -s read-gate -- install-script --stack kpro5 --public-key ~/.ssh/sglang-serve-read-kpro5.pub | ssh root@10.1.2.5 sh
 *   remove-script --public-key FILE [--authorized-keys PATH]
 *       prints the sh script that removes every line of that key (rotation)
 *   line --public-key FILE (--stack NAME | --vmid N... | --direct) [--python PATH] [--model PATH...] [--gate-path PATH] [--from PATTERNS]
 *       prints the authorized_keys line alone
 *   print-gate
 *       prints the gate as installed (its source with the reads the stack's builders render)
 *   check (--stack NAME | --vmid N... | --direct) [--python PATH] [--model PATH...] COMMAND
 *       whether the gate allows COMMAND (runs the gate here, in --check mode)
 *
 * --stack reads Pulumi.<NAME>.yaml: pct-exec gives --vmid container.vmid,
 * direct gives --direct; and the pins: --python service.python, --model
 * service.model.path (and service.speculative.draftModelPath when set), of
 * every server. A stack with boxes needs --box NAME (the box's host.name):
 * its host's gate, with the pins of the servers on it.
 * Exit 0, 1 (check: refused), 2 (usage).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
    authorizedKeysLine,
    GateScope,
    gateArgs,
    parsePublicKey,
    ReadGateOptionError,
    renderGate,
    renderInstallScript,
    renderRemoveKeyScript,
} from "../core/read-gate/install";
import { rawConfigFromStackYaml } from "./render";
import { isRecord } from "../core/is-record";
import { venvPython } from "../core/venv/venv-layout";

const repo = path.resolve(__dirname, "..");
export const GATE_FILE = path.join(repo, "gate", "sglang-serve-read-gate");

interface Options {
    publicKey?: string;
    stack?: string;
    /** With --stack of a stack with boxes: the box (its host.name) whose host gets the gate. */
    box?: string;
    vmids: number[];
    direct: boolean;
    pythons: string[];
    models: string[];
    venvRoots: string[];
    gatePath?: string;
    authorizedKeys?: string;
    from?: string;
    comment?: string;
    rest: string[];
}

const VALUE_OPTIONS = new Set([
    "--public-key",
    "--stack",
    "--box",
    "--vmid",
    "--python",
    "--model",
    "--venv-root",
    "--gate-path",
    "--authorized-keys",
    "--from",
    "--comment",
]);

function parseOptions(args: string[]): Options {
    const o: Options = { vmids: [], direct: false, pythons: [], models: [], venvRoots: [], rest: [] };
    for (let i = 0; i < args.length; i++) {
        const a = args[i]!;
        if (a === "--direct") {
            o.direct = true;
            continue;
        }
        if (!VALUE_OPTIONS.has(a)) {
            if (a.startsWith("--")) throw new ReadGateOptionError(`unknown option ${a}`);
            o.rest.push(a);
            continue;
        }
        const v = args[++i];
        if (v === undefined) throw new ReadGateOptionError(`${a} needs a value`);
        switch (a) {
            case "--public-key":
                o.publicKey = v;
                break;
            case "--stack":
                o.stack = v;
                break;
            case "--box":
                o.box = v;
                break;
            case "--vmid":
                if (!/^\d+$/.test(v)) throw new ReadGateOptionError(`--vmid ${JSON.stringify(v)} is not a Proxmox container id (an integer from 100)`);
                o.vmids.push(Number(v));
                break;
            case "--python":
                o.pythons.push(v);
                break;
            case "--model":
                o.models.push(v);
                break;
            case "--venv-root":
                o.venvRoots.push(v);
                break;
            case "--gate-path":
                o.gatePath = v;
                break;
            case "--authorized-keys":
                o.authorizedKeys = v;
                break;
            case "--from":
                o.from = v;
                break;
            case "--comment":
                o.comment = v;
                break;
        }
    }
    return o;
}

/**
 * The scope from --vmid/--direct and --python/--model, or from the stack
 * file: its topology and container.vmid, service.python, service.model.path
 * and the drafter's path.
 */
export function scopeOf(o: Options, projectDir = repo): GateScope {
    const given = (o.vmids.length > 0 ? 1 : 0) + (o.direct ? 1 : 0) + (o.stack !== undefined ? 1 : 0);
    if (given !== 1) throw new ReadGateOptionError("give exactly one of --stack <name>, --vmid <vmid> (repeatable) or --direct");
    const pins = { pythons: o.pythons, models: o.models, venvRoots: o.venvRoots };
    if (o.direct) return { direct: true, ...pins };
    if (o.vmids.length > 0) return { vmids: o.vmids, ...pins };
    const file = path.join(projectDir, `Pulumi.${o.stack}.yaml`);
    if (!/^[A-Za-z0-9_.-]{1,100}$/.test(o.stack!) || !fs.existsSync(file)) {
        throw new ReadGateOptionError(`--stack ${o.stack}: no ${file}; give an existing stack, or --vmid <vmid> / --direct`);
    }
    if (o.pythons.length > 0 || o.models.length > 0 || o.venvRoots.length > 0)
        throw new ReadGateOptionError("--stack takes the pins from the stack file: give no --python, --model or --venv-root with it");
    const raw = rawConfigFromStackYaml(fs.readFileSync(file, "utf8"));
    const { box, servers } = boxOfGate(raw, o, file);
    const stackPins = pinsOfServers(servers, file);
    const host = isRecord(box.host) ? box.host : {};
    const topology = host.topology ?? "pct-exec";
    if (topology === "direct") return { direct: true, ...stackPins };
    const vmid = isRecord(box.container) ? Number(box.container.vmid) : NaN;
    if (topology !== "pct-exec" || !Number.isInteger(vmid)) {
        throw new ReadGateOptionError(
            `--stack ${o.stack}: ${file} has host.topology ${JSON.stringify(topology)} and container.vmid ${JSON.stringify(isRecord(box.container) ? box.container.vmid : undefined)}; give --vmid <vmid> or --direct`,
        );
    }
    return { vmids: [vmid], ...stackPins };
}

/**
 * The box of a stack file whose host gets the gate, and the servers on it:
 * the one box (host, container), or with boxes the one --box names (its
 * host.name), with the servers whose `box` names it.
 */
function boxOfGate(raw: Record<string, unknown>, o: Options, file: string): { box: Record<string, unknown>; servers: unknown[] } {
    const servers: unknown[] = Array.isArray(raw.servers) ? raw.servers : [raw.service];
    const boxes = raw.boxes;
    if (!Array.isArray(boxes)) {
        if (o.box !== undefined) throw new ReadGateOptionError(`--box ${o.box}: ${file} declares one box (host and container); leave --box out`);
        return { box: raw, servers };
    }
    const names = boxes.map((b) => (isRecord(b) && isRecord(b.host) ? String(b.host.name) : "?"));
    const index = names.indexOf(o.box ?? "");
    if (index === -1) {
        throw new ReadGateOptionError(
            `--stack ${o.stack}: ${file} declares boxes ${names.join(", ")}; give --box <name> for the host that gets this gate${o.box !== undefined ? ` (not ${o.box})` : ""}`,
        );
    }
    const box = boxes[index] as Record<string, unknown>;
    const onBox = servers.filter((s) => (isRecord(s) && typeof s.box === "string" ? s.box === o.box : boxes.length === 1));
    return { box, servers: onBox };
}

/**
 * The pins of a stack file's server: service.python, or for service.venv its root (any
 * release's venv the stack stages there, so an upgrade's preview reads too)
 * and the adopted venvs' pythons; service.model.path and
 * service.speculative.draftModelPath.
 */
function pinsOf(service: unknown, file: string): { pythons: string[]; models: string[]; venvRoots: string[] } {
    const s = isRecord(service) ? service : {};
    const model = isRecord(s.model) ? s.model.path : undefined;
    const drafter = isRecord(s.speculative) ? s.speculative.draftModelPath : undefined;
    const venv = isRecord(s.venv) && typeof s.venv.root === "string" ? s.venv : undefined;
    const adopted = venv && isRecord(venv.adopt) ? Object.values(venv.adopt).filter((d): d is string => typeof d === "string") : [];
    if ((typeof s.python !== "string" && !venv) || typeof model !== "string") {
        throw new ReadGateOptionError(
            `${file} has no service.python (or service.venv) and service.model.path (the gate pins them); set them, or give --vmid/--direct with --python and --model`,
        );
    }
    return {
        pythons: typeof s.python === "string" ? [s.python] : adopted.map(venvPython),
        models: typeof drafter === "string" ? [model, drafter] : [model],
        venvRoots: venv ? [String(venv.root)] : [],
    };
}

/** The pins of every server of a stack file, each path once. */
function pinsOfServers(servers: readonly unknown[], file: string): { pythons: string[]; models: string[]; venvRoots: string[] } {
    const each = servers.map((s) => pinsOf(s, file));
    const union = (key: keyof (typeof each)[number]) => [...new Set(each.flatMap((p) => p[key]))];
    return { pythons: union("pythons"), models: union("models"), venvRoots: union("venvRoots") };
}

function readPublicKey(o: Options): string {
    if (o.publicKey === undefined) throw new ReadGateOptionError("give --public-key <the read-only key's .pub file>");
    const file = o.publicKey.startsWith("~/") ? path.join(os.homedir(), o.publicKey.slice(2)) : o.publicKey;
    if (!fs.existsSync(file))
        throw new ReadGateOptionError(
            `--public-key ${o.publicKey}: no such file (make the key with ssh-keygen -t ed25519 -N '' -f ~/.ssh/sglang-serve-read-<stack>)`,
        );
    return fs.readFileSync(file, "utf8");
}

export interface ReadGateRun {
    code: number;
    stdout: string;
    stderr: string;
}

export function runReadGate(args: string[], projectDir = repo): ReadGateRun {
    const [command, ...rest] = args;
    try {
        const o = parseOptions(rest);
        switch (command) {
            case "install-script": {
                const publicKey = readPublicKey(o);
                const scope = scopeOf(o, projectDir);
                if ((!scope.pythons?.length && !scope.venvRoots?.length) || !scope.models?.length) {
                    throw new ReadGateOptionError(
                        "give --python <service.python> and --model <service.model.path> (repeat --model for the drafter's path), or --stack <name>: the gate pins the box-facts read to them",
                    );
                }
                const script = renderInstallScript({
                    publicKey,
                    scope,
                    gatePath: o.gatePath,
                    authorizedKeys: o.authorizedKeys,
                    from: o.from,
                    comment: o.comment,
                    gateText: fs.readFileSync(GATE_FILE, "utf8"),
                });
                const key = parsePublicKey(publicKey);
                return {
                    code: 0,
                    stdout: script,
                    stderr: `sglang-serve: install script for key ${key.fingerprint}, allowed: ${gateArgs(scope).join(" ")}; pipe it into the box: ... | ssh <user>@<box> sh\n`,
                };
            }
            case "remove-script":
                return { code: 0, stdout: renderRemoveKeyScript({ publicKey: readPublicKey(o), authorizedKeys: o.authorizedKeys }), stderr: "" };
            case "line":
                return {
                    code: 0,
                    stdout: `${authorizedKeysLine({ publicKey: readPublicKey(o), scope: scopeOf(o, projectDir), gatePath: o.gatePath, from: o.from, comment: o.comment })}\n`,
                    stderr: "",
                };
            case "print-gate":
                return { code: 0, stdout: renderGate(fs.readFileSync(GATE_FILE, "utf8")), stderr: "" };
            case "check": {
                if (o.rest.length !== 1) throw new ReadGateOptionError("check needs the command as one argument (quote it)");
                const args = [...gateArgs(scopeOf(o, projectDir)), "--check"];
                const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sglang-serve-read-gate-"));
                try {
                    const gate = path.join(dir, "sglang-serve-read-gate");
                    fs.writeFileSync(gate, renderGate(fs.readFileSync(GATE_FILE, "utf8")), { mode: 0o755 });
                    const r = spawnSync(gate, args, {
                        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SSH_ORIGINAL_COMMAND: o.rest[0]! },
                        encoding: "utf8",
                    });
                    if (r.error) return { code: 2, stdout: "", stderr: `cannot run ${gate}: ${r.error.message} (it needs /usr/bin/python3)\n` };
                    return { code: r.status ?? 2, stdout: r.stdout, stderr: r.stderr };
                } finally {
                    fs.rmSync(dir, { recursive: true, force: true });
                }
            }
            default:
                throw new ReadGateOptionError(`unknown command ${JSON.stringify(command ?? "")}: use install-script, remove-script, line, print-gate or check`);
        }
    } catch (e) {
        if (e instanceof ReadGateOptionError) return { code: 2, stdout: "", stderr: `read-gate: ${e.message}\n` };
        throw e;
    }
}

if (require.main === module) {
    const r = runReadGate(process.argv.slice(2));
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    process.exitCode = r.code;
}
