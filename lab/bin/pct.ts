// pct on the lab's Proxmox host: list, status, config, pending, set, create,
// destroy, start, stop, shutdown, reboot, exec, over LXC like pve-container
// (src/PVE/CLI/pct.pm, src/PVE/API2/LXC/Status.pm): start/stop/shutdown/
// reboot drive lxc-start and lxc-stop, exec is lxc-attach, status is the
// container's LXC command socket. Errors are printed the way PVE's CLI
// handler prints them and exit 255.
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import { currentLab, LabInfo, LAB_ENV } from "../lab-info";
import { confFile, isRunning, readConf, startContainer, stopContainer, writeConf } from "../pve/ct-runtime";
import { emptyConf, PctConf, withPending } from "../pve/pct-conf";
import { isCreateOnly, isHotplug, optionSpec, verifyOption } from "../pve/pct-options";

class PveError extends Error {
    constructor(
        message: string,
        readonly usage?: string,
    ) {
        super(message);
    }
}

const USAGE: Record<string, string> = {
    list: "pct list",
    status: "pct status <vmid> [OPTIONS]",
    config: "pct config <vmid> [OPTIONS]",
    pending: "pct pending <vmid>",
    set: "pct set <vmid> [OPTIONS]",
    create: "pct create <vmid> <ostemplate> [OPTIONS]",
    destroy: "pct destroy <vmid> [OPTIONS]",
    start: "pct start <vmid> [OPTIONS]",
    stop: "pct stop <vmid> [OPTIONS]",
    shutdown: "pct shutdown <vmid> [OPTIONS]",
    reboot: "pct reboot <vmid> [OPTIONS]",
    exec: "pct exec <vmid> [<extra-args>] [OPTIONS]",
};

interface Parsed {
    positional: string[];
    options: Array<[string, string]>;
    extra: string[];
}

/** PVE's Getopt::Long-style parsing: -opt value, --opt value, --opt=value; "--" starts extra args. */
function parseCli(cmd: string, argv: string[], known: (name: string) => boolean, flags: string[] = []): Parsed {
    const out: Parsed = { positional: [], options: [], extra: [] };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i]!;
        if (a === "--") {
            out.extra = argv.slice(i + 1);
            break;
        }
        if (/^--?[a-zA-Z]/.test(a)) {
            const body = a.replace(/^--?/, "");
            const eq = body.indexOf("=");
            const name = eq >= 0 ? body.slice(0, eq) : body;
            if (!known(name)) {
                throw new PveError(`Unknown option: ${name}\n400 unable to parse option`, USAGE[cmd]);
            }
            if (eq >= 0) out.options.push([name, body.slice(eq + 1)]);
            else if (flags.includes(name) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith("-"))) out.options.push([name, "1"]);
            else {
                const v = argv[++i];
                if (v === undefined) throw new PveError(`Option ${name} requires an argument\n400 unable to parse option`, USAGE[cmd]);
                out.options.push([name, v]);
            }
            continue;
        }
        out.positional.push(a);
    }
    return out;
}

function vmidArg(cmd: string, p: Parsed): number {
    const v = p.positional[0];
    if (v === undefined) throw new PveError("400 not enough arguments", USAGE[cmd]);
    if (!/^\d+$/.test(v) || Number(v) < 100)
        throw new PveError(`400 Parameter verification failed.\nvmid: invalid format - value does not look like a valid VM ID\n`, USAGE[cmd]);
    return Number(v);
}

function loadConf(info: LabInfo, vmid: number): PctConf {
    const conf = readConf(info, vmid);
    if (!conf) throw new PveError(`Configuration file 'nodes/${info.host.hostname}/lxc/${vmid}.conf' does not exist`);
    return conf;
}

function running(info: LabInfo, vmid: number): boolean {
    return isRunning(info, vmid);
}

const status = (info: LabInfo, vmid: number): string => (running(info, vmid) ? "running" : "stopped");

function verifyAll(cmd: string, options: Array<[string, string]>, creating: boolean): Array<[string, string]> {
    const errors: string[] = [];
    const out: Array<[string, string]> = [];
    for (const [k, v] of options) {
        if (
            k === "delete" ||
            k === "digest" ||
            k === "start" ||
            k === "storage" ||
            k === "force" ||
            k === "purge" ||
            k === "password" ||
            k === "ssh-public-keys"
        ) {
            out.push([k, v]);
            continue;
        }
        if (!creating && isCreateOnly(k)) {
            errors.push(`${k}: unable to modify read-only option`);
            continue;
        }
        const r = verifyOption(k, v);
        if ("error" in r) errors.push(r.error);
        else out.push([k, r.value]);
    }
    if (errors.length > 0) throw new PveError(`400 Parameter verification failed.\n${errors.join("\n")}\n`, USAGE[cmd]);
    return out;
}

function printConf(conf: PctConf): string {
    let s = "";
    for (const k of [...conf.options.keys(), ...(conf.description ? ["description"] : [])].sort()) {
        s += k === "description" ? `description: ${conf.description.replace(/\n/g, "%0A")}\n` : `${k}: ${conf.options.get(k)}\n`;
    }
    for (const [k, v] of conf.lxc) s += `${k}: ${v}\n`;
    return s;
}

async function run(info: LabInfo, argv: string[]): Promise<number> {
    const cmd = argv[0];
    const rest = argv.slice(1);
    const known = (extra: string[]) => (n: string) => extra.includes(n);
    switch (cmd) {
        case "list": {
            parseCli("list", rest, known([]));
            const files = fs.readdirSync(info.mounts.host["/etc/pve/lxc"]!).filter((f) => /^\d+\.conf$/.test(f));
            const ids = files.map((f) => Number(f.replace(".conf", ""))).sort((a, b) => a - b);
            let out = `${"VMID".padEnd(10)} ${"Status".padEnd(10)} ${"Lock".padEnd(12)} ${"Name".padEnd(20)}\n`;
            for (const id of ids) {
                const c = readConf(info, id);
                out += `${String(id).padEnd(10)} ${status(info, id).padEnd(10)} ${(c?.options.get("lock") ?? "").padEnd(12)} ${(c?.options.get("hostname") ?? `CT${id}`).padEnd(20)}\n`;
            }
            process.stdout.write(ids.length > 0 ? out : "");
            return 0;
        }
        case "status": {
            const p = parseCli("status", rest, known(["verbose"]), ["verbose"]);
            const vmid = vmidArg("status", p);
            loadConf(info, vmid);
            process.stdout.write(`status: ${status(info, vmid)}\n`);
            return 0;
        }
        case "config": {
            const p = parseCli("config", rest, known(["current", "snapshot"]), ["current"]);
            const vmid = vmidArg("config", p);
            const conf = loadConf(info, vmid);
            const current = p.options.some(([k, v]) => k === "current" && v !== "0");
            process.stdout.write(printConf(current ? conf : withPending(conf)));
            return 0;
        }
        case "pending": {
            const p = parseCli("pending", rest, known([]));
            const vmid = vmidArg("pending", p);
            const conf = loadConf(info, vmid);
            let out = "";
            const keys = [...new Set([...conf.options.keys(), ...conf.pending.keys()])].sort();
            for (const k of keys) {
                if (conf.options.has(k)) out += `cur ${k}: ${conf.options.get(k)}\n`;
                if (conf.pending.has(k)) out += `new ${k}: ${conf.pending.get(k)}\n`;
                if (conf.pendingDelete.includes(k)) out += `del ${k}: ${conf.options.get(k) ?? ""}\n`;
            }
            process.stdout.write(out);
            return 0;
        }
        case "set": {
            const p = parseCli("set", rest, (n) => optionSpec(n) !== undefined || ["delete", "digest", "revert"].includes(n));
            const vmid = vmidArg("set", p);
            const opts = verifyAll("set", p.options, false);
            const conf = loadConf(info, vmid);
            if (conf.options.get("lock")) throw new PveError(`CT is locked (${conf.options.get("lock")})`);
            const live = running(info, vmid);
            for (const [k, v] of opts) {
                if (k === "digest") continue;
                if (k === "delete") {
                    for (const d of v.split(/[,;\s]+/).filter(Boolean)) {
                        if (!optionSpec(d))
                            throw new PveError(`400 Parameter verification failed.\ndelete: invalid format - ${d}: unknown option\n`, USAGE.set);
                        if (live && !isHotplug(d)) {
                            if (!conf.pendingDelete.includes(d)) conf.pendingDelete.push(d);
                        } else conf.options.delete(d);
                    }
                    continue;
                }
                if (live && !isHotplug(k)) {
                    conf.pending.set(k, v);
                    conf.pendingDelete = conf.pendingDelete.filter((d) => d !== k);
                } else {
                    conf.options.set(k, v);
                    conf.pending.delete(k);
                }
            }
            writeConf(info, vmid, conf);
            return 0;
        }
        case "create": {
            const p = parseCli(
                "create",
                rest,
                (n) => optionSpec(n) !== undefined || ["storage", "start", "password", "ssh-public-keys", "force", "unique", "pool", "restore"].includes(n),
            );
            const vmid = vmidArg("create", p);
            const template = p.positional[1];
            if (!template) throw new PveError("400 not enough arguments", USAGE.create);
            const opts = verifyAll("create", p.options, true);
            if (fs.existsSync(confFile(info, vmid)))
                throw new PveError(`unable to create CT ${vmid} - CT ${vmid} already exists on node '${info.host.hostname}'`);
            const conf = emptyConf();
            const ostype = /(debian|ubuntu|centos|fedora|alpine|archlinux|devuan|gentoo|opensuse|nixos)/.exec(template)?.[1] ?? "unmanaged";
            const storage = opts.find(([k]) => k === "storage")?.[1] ?? "local-lvm";
            conf.options.set("arch", "amd64");
            conf.options.set("hostname", `CT${vmid}`);
            conf.options.set("memory", "512");
            conf.options.set("swap", "512");
            conf.options.set("ostype", ostype);
            conf.options.set("rootfs", `${storage}:vm-${vmid}-disk-0,size=8G`);
            for (const [k, v] of opts) {
                if (["storage", "start", "password", "ssh-public-keys", "force", "unique", "pool", "restore", "digest", "delete"].includes(k)) continue;
                if (k === "rootfs") {
                    const m = /^([^:,]+):(\d+(?:\.\d+)?)$/.exec(v);
                    conf.options.set("rootfs", m ? `${m[1]}:vm-${vmid}-disk-0,size=${m[2]}G` : v);
                } else if (k === "description") conf.description = v;
                else conf.options.set(k, v);
            }
            writeConf(info, vmid, conf);
            process.stdout.write(
                `  Logical volume "vm-${vmid}-disk-0" created.\nextracting archive '${template}'\nTotal bytes read: 524288000 (500MiB, 100MiB/s)\nDetected container architecture: amd64\nCreating SSH host key 'ssh_host_ed25519_key' - this may take some time ...\ndone: SHA256:lab ${"root"}@${conf.options.get("hostname")}\n`,
            );
            if (opts.some(([k, v]) => k === "start" && v !== "0")) await startContainer(info, vmid);
            return 0;
        }
        case "destroy": {
            const p = parseCli("destroy", rest, known(["purge", "force", "destroy-unreferenced-disks"]), ["purge", "force"]);
            const vmid = vmidArg("destroy", p);
            const conf = loadConf(info, vmid);
            if (running(info, vmid)) throw new PveError(`unable to destroy CT ${vmid} - container is running`);
            if (conf.options.get("protection") === "1") throw new PveError(`can't remove CT ${vmid} - protection mode enabled`);
            fs.rmSync(confFile(info, vmid));
            process.stdout.write(`  Logical volume "vm-${vmid}-disk-0" successfully removed.\n`);
            return 0;
        }
        case "start": {
            const p = parseCli("start", rest, known(["skiplock", "debug"]), ["skiplock", "debug"]);
            const vmid = vmidArg("start", p);
            loadConf(info, vmid);
            if (running(info, vmid)) throw new PveError(`CT ${vmid} already running`);
            await startContainer(info, vmid);
            return 0;
        }
        case "stop":
        case "shutdown":
        case "reboot": {
            const p = parseCli(cmd, rest, known(["skiplock", "timeout", "forceStop", "overrule-shutdown"]), ["skiplock", "forceStop", "overrule-shutdown"]);
            const vmid = vmidArg(cmd, p);
            loadConf(info, vmid);
            if (!running(info, vmid)) throw new PveError(`CT ${vmid} not running`);
            const timeout = p.options.find(([k]) => k === "timeout")?.[1];
            const forceStop = p.options.some(([k, v]) => k === "forceStop" && v !== "0");
            // vm_stop($vmid, 1) | vm_stop($vmid, 0, $timeout // 60, $forceStop) | vm_reboot: stop (killing after the timeout), start.
            if (cmd === "stop") await stopContainer(info, vmid, { kill: true });
            else
                await stopContainer(info, vmid, {
                    kill: false,
                    timeoutSeconds: timeout !== undefined ? Number(timeout) : 60,
                    killAfterTimeout: cmd === "reboot" || forceStop,
                });
            if (cmd === "reboot") await startContainer(info, vmid);
            return 0;
        }
        case "exec": {
            const dd = rest.indexOf("--");
            const before = dd >= 0 ? rest.slice(0, dd) : rest;
            const extraAfter = dd >= 0 ? rest.slice(dd + 1) : [];
            const p = parseCli("exec", before, known(["keep-env"]), ["keep-env"]);
            const vmid = vmidArg("exec", p);
            const command = [...p.positional.slice(1), ...extraAfter];
            loadConf(info, vmid);
            if (!running(info, vmid)) throw new PveError(`container '${vmid}' not running!`);
            // PVE: die "missing command" (without a newline, so Perl adds " at .../pct.pm line N.").
            if (command.length === 0) throw new PveError("missing command");
            if (vmid !== info.vmid) throw new PveError(`lab: CT ${vmid} is a config file only; only CT ${info.vmid} runs commands`);
            // --keep-env defaults to 1 in PVE 8: lxc-attach passes pct's environment into the container.
            const keepEnv = p.options.find(([k]) => k === "keep-env")?.[1] !== "0";
            const env: NodeJS.ProcessEnv = { ...process.env };
            // What the lab's pct shim added is not part of the caller's environment.
            delete env[LAB_ENV];
            delete env.SGLANG_LAB_ARGV0;
            return await new Promise<number>((resolve) => {
                const child = spawn("lxc-attach", ["-n", String(vmid), keepEnv ? "--keep-env" : "--clear-env", "--", ...command], { stdio: "inherit", env });
                for (const s of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(s, () => child.kill(s));
                child.on("error", (e) => {
                    process.stderr.write(`lxc-attach: ${vmid}: ${e.message}\n`);
                    resolve(255);
                });
                child.on("exit", (code, signal) => resolve(signal ? 128 + (os.constants.signals[signal] ?? 0) : (code ?? 255)));
            });
        }
        case "help":
        case undefined:
            process.stdout.write(
                `USAGE: pct <COMMAND> [ARGS] [OPTIONS]\n${Object.values(USAGE)
                    .map((u) => `       ${u}`)
                    .join("\n")}\n`,
            );
            return cmd === undefined ? 255 : 0;
        default:
            process.stderr.write(
                `ERROR: unknown command 'pct ${cmd}'\nUSAGE: pct <COMMAND> [ARGS] [OPTIONS]\n${Object.values(USAGE)
                    .map((u) => `       ${u}`)
                    .join("\n")}\n`,
            );
            return 255;
    }
}

async function main(): Promise<void> {
    const info = currentLab();
    try {
        process.exitCode = await run(info, process.argv.slice(2));
    } catch (e) {
        if (e instanceof PveError) {
            process.stderr.write(e.message.endsWith("\n") ? e.message : `${e.message}\n`);
            if (e.usage) process.stderr.write(`${e.usage}\n`);
        } else process.stderr.write(`${(e as Error).message}\n`);
        process.exitCode = 255;
    }
}

void main();
