/**
 * Proxmox LXC container config (`/etc/pve/lxc/<vmid>.conf`): parsed and
 * rendered without losing anything (comments, repeated `lxc.*` raw keys,
 * `[snapshot]` and `[pve:pending]` sections), a typed view of the settings
 * the stack manages, NVIDIA GPU passthrough lines, and the `pct set` options
 * that bring a container to the declared settings.
 */
import type { ContainerConfig } from "../config/schema";

export type PctLine = { kind: "option"; key: string; value: string } | { kind: "comment"; text: string };

export interface PctSection {
    /** `snapshot-name` or `pve:pending`, without brackets. */
    name: string;
    /** The section's lines, kept verbatim (the stack never edits snapshots). */
    lines: string[];
}

export interface PctConfig {
    /** The current config: comments (at the top: the description) and `key: value` lines in order. */
    main: PctLine[];
    sections: PctSection[];
}

export class PctConfigError extends Error {}

const OPTION_LINE = /^([A-Za-z0-9_.-]+):\s?(.*)$/;

export function parsePctConfig(text: string): PctConfig {
    const main: PctLine[] = [];
    const sections: PctSection[] = [];
    text.split("\n").forEach((raw, index) => {
        const line = raw.replace(/\r$/, "");
        const header = /^\[([^\]]+)\]\s*$/.exec(line);
        if (header) {
            sections.push({ name: header[1], lines: [] });
            return;
        }
        if (sections.length > 0) {
            if (line.trim() !== "") sections[sections.length - 1].lines.push(line);
            return;
        }
        if (line.trim() === "") return;
        if (line.startsWith("#")) {
            main.push({ kind: "comment", text: line.slice(1) });
            return;
        }
        const option = OPTION_LINE.exec(line);
        if (!option) throw new PctConfigError(`line ${index + 1} is not "key: value": ${JSON.stringify(line)}`);
        main.push({ kind: "option", key: option[1], value: option[2] });
    });
    return { main, sections };
}

function renderLine(line: PctLine): string {
    return line.kind === "comment" ? `#${line.text}` : `${line.key}: ${line.value}`;
}

/** The file text as Proxmox writes it: main lines, then each section after a blank line. */
export function renderPctConfig(conf: PctConfig): string {
    const parts = [conf.main.map(renderLine).join("\n")];
    for (const section of conf.sections) parts.push([`[${section.name}]`, ...section.lines].join("\n"));
    return `${parts.filter((p) => p !== "").join("\n\n")}\n`;
}

/** The last value of a (non-repeating) option in the current config. */
export function pctOption(conf: PctConfig, key: string): string | undefined {
    let value: string | undefined;
    for (const line of conf.main) if (line.kind === "option" && line.key === key) value = line.value;
    return value;
}

/** Every value of a repeating raw key (`lxc.mount.entry`), in order. */
export function pctOptions(conf: PctConfig, key: string): string[] {
    return conf.main.flatMap((line) => (line.kind === "option" && line.key === key ? [line.value] : []));
}

/** `name=eth0,bridge=vmbr0,ip=...` as ordered pairs. */
export function parsePropertyString(text: string): [string, string][] {
    if (text.trim() === "") return [];
    return text.split(",").map((part) => {
        const eq = part.indexOf("=");
        return eq === -1 ? [part, ""] : [part.slice(0, eq), part.slice(eq + 1)];
    });
}

export function renderPropertyString(pairs: readonly (readonly [string, string])[]): string {
    return pairs.map(([k, v]) => `${k}=${v}`).join(",");
}

function setProperty(pairs: [string, string][], key: string, value: string): void {
    const existing = pairs.find(([k]) => k === key);
    if (existing) existing[1] = value;
    else pairs.push([key, value]);
}

// ---------------------------------------------------------------------------
// Typed view
// ---------------------------------------------------------------------------

export interface PctView {
    cores?: number;
    memoryMiB?: number;
    swapMiB?: number;
    hostname?: string;
    onboot?: boolean;
    /** `features: nesting=1,keyctl=1` as { nesting: "1", keyctl: "1" }. */
    features: Record<string, string>;
    /** `net0: name=eth0,...` as { net0: { name: "eth0", ... } }. */
    networks: Record<string, Record<string, string>>;
}

function numberOption(conf: PctConfig, key: string): number | undefined {
    const value = pctOption(conf, key);
    return value === undefined || !/^\d+$/.test(value) ? undefined : Number(value);
}

export function pctView(conf: PctConfig): PctView {
    const onboot = pctOption(conf, "onboot");
    const networks: Record<string, Record<string, string>> = {};
    for (const line of conf.main) {
        if (line.kind === "option" && /^net\d+$/.test(line.key)) networks[line.key] = Object.fromEntries(parsePropertyString(line.value));
    }
    const view: PctView = {
        features: Object.fromEntries(parsePropertyString(pctOption(conf, "features") ?? "")),
        networks,
    };
    const assign = <K extends keyof PctView>(key: K, value: PctView[K] | undefined) => {
        if (value !== undefined) view[key] = value;
    };
    assign("cores", numberOption(conf, "cores"));
    assign("memoryMiB", numberOption(conf, "memory"));
    assign("swapMiB", numberOption(conf, "swap"));
    assign("hostname", pctOption(conf, "hostname"));
    assign("onboot", onboot === undefined ? undefined : onboot === "1");
    return view;
}

// ---------------------------------------------------------------------------
// GPU passthrough
// ---------------------------------------------------------------------------

/** Character-device majors from the host's /proc/devices (nvidia is 195; nvidia-uvm varies per boot/driver). */
export interface NvidiaMajors {
    nvidia: number;
    nvidiaUvm: number;
}

const DEVICE_ALLOW_KEYS = ["lxc.cgroup2.devices.allow", "lxc.cgroup.devices.allow"];
const MOUNT_KEY = "lxc.mount.entry";
/** Control devices every CUDA process opens, besides the per-GPU /dev/nvidiaN. */
const NVIDIA_CONTROL_DEVICES = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"];

function bindMount(device: string): string {
    return `/dev/${device} dev/${device} none bind,optional,create=file`;
}

/**
 * The raw lines that pass host GPUs into the container: allow the NVIDIA
 * character majors in the container's cgroup (195:* covers /dev/nvidiaN and
 * /dev/nvidiactl; the uvm major covers nvidia-uvm and nvidia-uvm-tools),
 * and bind-mount each device node.
 */
export function gpuPassthroughLines(gpus: readonly number[], majors: NvidiaMajors): PctLine[] {
    const option = (key: string, value: string): PctLine => ({ kind: "option", key, value });
    const devices = [...[...gpus].sort((a, b) => a - b).map((i) => `nvidia${i}`), ...NVIDIA_CONTROL_DEVICES];
    return [
        option("lxc.cgroup2.devices.allow", `c ${majors.nvidia}:* rwm`),
        option("lxc.cgroup2.devices.allow", `c ${majors.nvidiaUvm}:* rwm`),
        ...devices.map((device) => option(MOUNT_KEY, bindMount(device))),
    ];
}

export interface Passthrough {
    /** GPU indices whose /dev/nvidiaN is passed through (bind-mounted, or a devN entry). */
    gpus: number[];
    /** Character majors allowed with `c <major>:* rwm`. */
    allowedMajors: number[];
    /** /dev/nvidia* device nodes bind-mounted by raw lines, e.g. "nvidiactl". */
    mountedDevices: string[];
    /** /dev/nvidia* device nodes passed by pve-container's `devN:` entries (absent in states written before). */
    devEntries?: string[];
}

/**
 * pve-container's device passthrough (PVE 8.1+: `dev0` to `dev255`,
 * src/PVE/LXC/Config.pm): at every start it stats the host node and writes
 * the cgroup allow line for its major and minor itself, so a major that
 * changes with a driver or kernel update (nvidia-uvm's) needs no edit.
 */
const DEV_KEY = /^dev(\d+)$/;
const MAX_DEV_ENTRIES = 256;
const NVIDIA_DEVICE_PATH = /^\/dev\/(nvidia[\w-]*)$/;

/** The device path of a `devN` value (`/dev/nvidia0,mode=0666` or `path=/dev/nvidia0,...`: path is its default key). */
export function devEntryPath(value: string): string | undefined {
    for (const part of value.split(",")) {
        const eq = part.indexOf("=");
        if (eq < 0) return part.trim();
        if (part.slice(0, eq).trim() === "path") return part.slice(eq + 1).trim();
    }
    return undefined;
}

/** The NVIDIA device a `devN` value passes (`nvidia0`, `nvidia-uvm`), if it passes one. */
function devEntryNvidia(value: string): string | undefined {
    return NVIDIA_DEVICE_PATH.exec(devEntryPath(value) ?? "")?.[1];
}

/** How a Proxmox release passes GPUs best: `devN` entries from PVE 8.2 (`pveversion`'s 8.2.x), raw `lxc.*` lines before it or when unknown. */
export function passthroughForm(proxmoxVersion: string | undefined): "devN" | "raw" {
    const m = /^(\d+)\.(\d+)/.exec(proxmoxVersion ?? "");
    return m && (Number(m[1]) > 8 || (Number(m[1]) === 8 && Number(m[2]) >= 2)) ? "devN" : "raw";
}

export function passthroughFromConfig(conf: PctConfig): Passthrough {
    const allowedMajors: number[] = [];
    for (const key of DEVICE_ALLOW_KEYS) {
        for (const value of pctOptions(conf, key)) {
            const m = /^c (\d+):\* [rwm]+$/.exec(value.trim());
            if (m) allowedMajors.push(Number(m[1]));
        }
    }
    const mountedDevices: string[] = [];
    for (const value of pctOptions(conf, MOUNT_KEY)) {
        const m = /^\/dev\/(nvidia[\w-]*)\s/.exec(value.trim());
        if (m) mountedDevices.push(m[1]);
    }
    const devEntries: string[] = [];
    for (const line of conf.main) {
        if (line.kind !== "option" || !DEV_KEY.test(line.key)) continue;
        const name = devEntryNvidia(line.value);
        if (name !== undefined) devEntries.push(name);
    }
    const gpus = [...new Set([...mountedDevices, ...devEntries])].flatMap((d) => (/^nvidia\d+$/.test(d) ? [Number(d.slice(6))] : [])).sort((a, b) => a - b);
    return { gpus, allowedMajors, mountedDevices, devEntries };
}

/** The NVIDIA device nodes the container needs for `gpus`: their /dev/nvidiaN and the control devices. */
function wantedDevices(gpus: readonly number[]): string[] {
    return [...[...gpus].sort((a, b) => a - b).map((i) => `nvidia${i}`), ...NVIDIA_CONTROL_DEVICES];
}

/**
 * Whether a passthrough read from the box is the one for `gpus`, in either
 * form: exactly their /dev/nvidiaN and the control devices passed, by `devN`
 * entries or bind mounts, and the NVIDIA majors allowed for those bind-mounted
 * by raw lines (a `devN` entry's allow line is pve-container's). A missing
 * control device (nvidia-uvm-tools) is drift too, not only a missing GPU.
 */
export function passthroughMatches(live: Passthrough, gpus: readonly number[], majors: NvidiaMajors): boolean {
    const byDev = live.devEntries ?? [];
    const passed = [...new Set([...live.mountedDevices, ...byDev])].sort();
    if (JSON.stringify(passed) !== JSON.stringify(wantedDevices(gpus).sort())) return false;
    const rawOnly = live.mountedDevices.filter((d) => !byDev.includes(d));
    const needs = [
        ...(rawOnly.some((d) => !d.startsWith("nvidia-uvm")) ? [majors.nvidia] : []),
        ...(rawOnly.some((d) => d.startsWith("nvidia-uvm")) ? [majors.nvidiaUvm] : []),
    ];
    return needs.every((m) => live.allowedMajors.includes(m));
}

/**
 * Whether the config's passthrough must be edited for `gpus` in `form`: a
 * passthrough that is not the declared one; a raw one whose lines are not
 * exactly the stack's too (raw form only). A config that passes the declared
 * GPUs in either form is kept as it is (adopted without a restart).
 */
export function passthroughNeedsEdit(conf: PctConfig, gpus: readonly number[], majors: NvidiaMajors, form: "devN" | "raw"): boolean {
    const live = passthroughFromConfig(conf);
    if (!passthroughMatches(live, gpus, majors)) return true;
    if (form === "devN" || (live.devEntries ?? []).length > 0) return false;
    const diff = passthroughDiff(conf, gpus, majors);
    return diff.missing.length > 0 || diff.extra.length > 0;
}

/** An NVIDIA passthrough line: a cgroup allow for an NVIDIA major, or a bind mount of /dev/nvidia*. */
function isNvidiaLine(line: PctLine, majors: NvidiaMajors): boolean {
    if (line.kind !== "option") return false;
    if (DEVICE_ALLOW_KEYS.includes(line.key)) {
        const m = /^c (\d+):/.exec(line.value.trim());
        return m !== null && [majors.nvidia, majors.nvidiaUvm].includes(Number(m[1]));
    }
    return line.key === MOUNT_KEY && /^\/dev\/nvidia/.test(line.value.trim());
}

/** Passthrough lines to add and to remove so the config passes exactly `gpus`. */
export function passthroughDiff(conf: PctConfig, gpus: readonly number[], majors: NvidiaMajors): { missing: PctLine[]; extra: PctLine[] } {
    const key = (l: PctLine) => renderLine(l).replace(/\s+/g, " ").trim();
    const wanted = gpuPassthroughLines(gpus, majors);
    const present = conf.main.filter((l) => isNvidiaLine(l, majors));
    const presentKeys = new Set(present.map(key));
    const wantedKeys = new Set(wanted.map(key));
    return {
        missing: wanted.filter((l) => !presentKeys.has(key(l))),
        extra: present.filter((l) => !wantedKeys.has(key(l))),
    };
}

/** The config with its NVIDIA passthrough lines replaced by those for `gpus` (other raw lines and snapshots untouched). */
export function withGpuPassthrough(conf: PctConfig, gpus: readonly number[], majors: NvidiaMajors): PctConfig {
    return {
        main: [...conf.main.filter((l) => !isNvidiaLine(l, majors)), ...gpuPassthroughLines(gpus, majors)],
        sections: conf.sections.map((s) => ({ name: s.name, lines: [...s.lines] })),
    };
}

// ---------------------------------------------------------------------------
// pct set
// ---------------------------------------------------------------------------

export interface PctChange {
    /** The config key, e.g. `container.memoryMiB`. */
    field: string;
    /** The `pct set` option, e.g. `-memory`. */
    option: string;
    declared: string;
    actual: string | undefined;
    /**
     * Whether a running container must restart for the change to take effect.
     * Proxmox applies cores, memory and swap to a running container's cgroup,
     * onboot only matters at host boot, and network changes are hot-plugged;
     * hostname and features are kept pending until the next start.
     */
    needsRestart: boolean;
}

export interface PctSetPlan {
    /** `pct set <vmid> -cores N ...`, or undefined when nothing differs. */
    argv: string[] | undefined;
    changes: PctChange[];
    needsRestart: boolean;
}

/** Declared features over the live ones: undeclared live features (fuse=1, ...) are kept. */
function desiredFeatures(declared: NonNullable<ContainerConfig["features"]>, live: string | undefined): string {
    const pairs = parsePropertyString(live ?? "");
    for (const [name, on] of Object.entries(declared)) {
        if (on !== undefined) setProperty(pairs, name, on ? "1" : "0");
    }
    return renderPropertyString(pairs);
}

/** Declared network settings over the live net0: the MAC address, type and firewall flag are kept. */
function desiredNet0(declared: NonNullable<ContainerConfig["network"]>, live: string | undefined): string {
    const pairs = parsePropertyString(live ?? "");
    setProperty(pairs, "name", declared.name);
    setProperty(pairs, "bridge", declared.bridge);
    setProperty(pairs, "ip", declared.ip);
    if (declared.gateway !== undefined) setProperty(pairs, "gw", declared.gateway);
    return renderPropertyString(pairs);
}

function sameProperties(a: string, b: string | undefined): boolean {
    if (b === undefined) return false;
    const norm = (s: string) => JSON.stringify(Object.fromEntries(parsePropertyString(s).sort(([x], [y]) => x.localeCompare(y))));
    return norm(a) === norm(b);
}

/**
 * The `pct set` options for the declared settings that differ from the live
 * config (settings the config leaves out are not managed), and whether any
 * needs a restart. GPU passthrough lines are raw `lxc.*` keys that `pct set`
 * cannot write: see passthroughDiff / withGpuPassthrough (they need a restart).
 */
export function pctSetArgs(desired: ContainerConfig, live: PctConfig): PctSetPlan {
    const changes: PctChange[] = [];
    const consider = (
        field: string,
        option: string,
        declared: string | undefined,
        actual: string | undefined,
        needsRestart: boolean,
        same = declared === actual,
    ) => {
        if (declared === undefined || same) return;
        changes.push({ field, option, declared, actual, needsRestart });
    };
    const bool = (b: boolean | undefined) => (b === undefined ? undefined : b ? "1" : "0");
    consider("container.cores", "-cores", desired.cores?.toString(), pctOption(live, "cores"), false);
    consider("container.memoryMiB", "-memory", desired.memoryMiB?.toString(), pctOption(live, "memory"), false);
    consider("container.swapMiB", "-swap", desired.swapMiB?.toString(), pctOption(live, "swap"), false);
    consider("container.onboot", "-onboot", bool(desired.onboot), pctOption(live, "onboot") ?? "0", false);
    consider("container.hostname", "-hostname", desired.hostname, pctOption(live, "hostname"), true);
    if (desired.features) {
        const liveFeatures = pctOption(live, "features");
        const want = desiredFeatures(desired.features, liveFeatures);
        consider("container.features", "-features", want, liveFeatures, true, sameProperties(want, liveFeatures));
    }
    if (desired.network) {
        const liveNet = pctOption(live, "net0");
        const want = desiredNet0(desired.network, liveNet);
        consider("container.network", "-net0", want, liveNet, false, sameProperties(want, liveNet));
    }
    const argv = changes.length === 0 ? undefined : ["pct", "set", String(desired.vmid), ...changes.flatMap((c) => [c.option, c.declared])];
    return { argv, changes, needsRestart: changes.some((c) => c.needsRestart) };
}

// ---------------------------------------------------------------------------
// In-place edit of the raw file
// ---------------------------------------------------------------------------
//
// The file as it is on the host (`/etc/pve/lxc/<vmid>.conf`), not `pct config`
// (which prints the current section only, regenerated): the passthrough lines
// are raw `lxc.*` keys `pct set` cannot write, so they are edited in the file,
// touching nothing else. Every other byte stays: comments (the description),
// the order of the lines, `[snapshot]` sections (whose `parent:` chain the
// main section's `parent:` points into) and `[pve:pending]` (changes waiting
// for the next start). Text here is the file's bytes one-to-one as latin1
// characters, so nothing is re-encoded.

/** A line that starts a section, as pve-container's parse_pct_config reads it. */
const SECTION_HEADER = /^(\[pve:pending\]|\[[a-z][a-z0-9_-]+\])\s*$/i;
/** A raw LXC key line, `lxc.key: value` or `lxc.key = value` (parse_pct_config accepts both). */
const LXC_LINE = /^(lxc\.[a-z0-9_.-]+)(?::|\s*=)\s*(.*?)\s*$/;

/** The file's lines, each with its own line terminator (the last one may have none). */
function linesWithEndings(text: string): string[] {
    return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function withoutEnding(line: string): string {
    return line.replace(/\r?\n$/, "");
}

/** The main (current) section's text and everything from the first section header on, verbatim: main + rest === text. */
export function splitPctConfigText(text: string): { main: string; rest: string } {
    const lines = linesWithEndings(text);
    const first = lines.findIndex((line) => SECTION_HEADER.test(withoutEnding(line)));
    if (first === -1) return { main: text, rest: "" };
    return { main: lines.slice(0, first).join(""), rest: lines.slice(first).join("") };
}

/** The `lock:` value of the current config (backup, migrate, snapshot, ...), or undefined when unlocked. */
export function pctConfigLock(text: string): string | undefined {
    for (const line of linesWithEndings(splitPctConfigText(text).main)) {
        const m = /^lock:\s*(.*?)\s*$/.exec(withoutEnding(line));
        if (m && m[1] !== "") return m[1];
    }
    return undefined;
}

export class PctLockedError extends Error {
    constructor(
        readonly vmid: number,
        readonly lock: string,
    ) {
        super(
            `container ${vmid} is locked (${lock}): its config has "lock: ${lock}", which Proxmox sets while a ` +
                `${lockActivity(lock)} runs (pct refuses it as "CT is locked (${lock})"); nothing was changed. ` +
                `Run up again when it has finished; if no such task runs (a lock left by a crash), clear it on the host with \`pct unlock ${vmid}\`.`,
        );
    }
}

function lockActivity(lock: string): string {
    switch (lock) {
        case "backup":
            return "backup (vzdump)";
        case "migrate":
            return "migration";
        case "snapshot":
        case "snapshot-delete":
        case "rollback":
            return `snapshot task (${lock})`;
        default:
            return `task (${lock})`;
    }
}

export interface PassthroughEdit {
    /** The new file text; equal to the input when nothing changes. */
    text: string;
    /** Passthrough lines taken out of the main section, as they were written. */
    removed: string[];
    /** Passthrough lines added at the end of the main section. */
    added: string[];
}

/**
 * The file text with the main section's NVIDIA passthrough lines brought to
 * exactly those for `gpus`: lines that should not be there are taken out,
 * missing ones are added after the main section's last line, and every other
 * byte (other lines, sections, blank lines, comments) is left as it is. A
 * passthrough line already there stays as written (even as `lxc.x = v`).
 * Throws PctLockedError for a config that has a `lock:` entry.
 */
export function editPassthroughInPlace(
    text: string,
    vmid: number,
    gpus: readonly number[],
    majors: NvidiaMajors,
    form: "devN" | "raw" = "raw",
): PassthroughEdit {
    const lock = pctConfigLock(text);
    if (lock !== undefined) throw new PctLockedError(vmid, lock);
    if (form === "devN") return editDevEntriesInPlace(text, gpus, majors);
    const { main, rest } = splitPctConfigText(text);
    const lines = linesWithEndings(main);
    const normalized = (key: string, value: string) => `${key}: ${value}`.replace(/\s+/g, " ").trim();
    const wanted = gpuPassthroughLines(gpus, majors).map(renderLine);
    const wantedKeys = new Set(wanted.map((l) => l.replace(/\s+/g, " ")));
    const present = new Set<string>();
    const removed: string[] = [];
    const kept = lines.filter((line) => {
        const m = LXC_LINE.exec(withoutEnding(line));
        if (!m) return true;
        const option: PctLine = { kind: "option", key: m[1], value: m[2] };
        if (!isNvidiaLine(option, majors)) return true;
        const key = normalized(m[1], m[2]);
        if (wantedKeys.has(key)) {
            present.add(key);
            return true;
        }
        removed.push(withoutEnding(line));
        return false;
    });
    const added = wanted.filter((l) => !present.has(l.replace(/\s+/g, " ")));
    if (added.length > 0) {
        // After the last non-blank line of the main section, so the blank line before `[snapshot]` stays where it is.
        let at = kept.length;
        while (at > 0 && withoutEnding(kept[at - 1]).trim() === "") at--;
        const eol = kept.find((l) => l.endsWith("\r\n")) ? "\r\n" : "\n";
        if (at > 0 && !/\n$/.test(kept[at - 1])) kept[at - 1] += eol;
        kept.splice(at, 0, ...added.map((l) => `${l}${eol}`));
    }
    return { text: kept.join("") + rest, removed, added };
}

/**
 * The `devN` form of editPassthroughInPlace (PVE 8.2+): the NVIDIA raw lines
 * (allow lines for their majors, bind mounts of /dev/nvidia*) and the `devN`
 * entries of NVIDIA devices not declared are taken out, a declared device's
 * entry already there stays as written, and the missing ones are added as
 * `devK: /dev/<device>` with the lowest free K, where Proxmox's writer puts
 * them (options in key order, raw `lxc.*` lines last). Every other byte is
 * left as it is.
 */
function editDevEntriesInPlace(text: string, gpus: readonly number[], majors: NvidiaMajors): PassthroughEdit {
    const { main, rest } = splitPctConfigText(text);
    const wanted = wantedDevices(gpus);
    const present = new Set<string>();
    const used = new Set<number>();
    const removed: string[] = [];
    const kept = linesWithEndings(main).filter((line) => {
        const bare = withoutEnding(line);
        const raw = LXC_LINE.exec(bare);
        if (raw) {
            if (!isNvidiaLine({ kind: "option", key: raw[1], value: raw[2] }, majors)) return true;
            removed.push(bare);
            return false;
        }
        const option = OPTION_LINE.exec(bare);
        const index = option ? DEV_KEY.exec(option[1]) : null;
        if (!option || !index) return true;
        const device = devEntryNvidia(option[2]);
        if (device === undefined || (wanted.includes(device) && !present.has(device))) {
            if (device !== undefined) present.add(device);
            used.add(Number(index[1]));
            return true;
        }
        removed.push(bare);
        return false;
    });
    const missing = wanted.filter((d) => !present.has(d));
    const added: string[] = [];
    let next = 0;
    for (const device of missing) {
        while (used.has(next)) next++;
        if (next >= MAX_DEV_ENTRIES) throw new PctConfigError(`no free devN entry (dev0 to dev${MAX_DEV_ENTRIES - 1}) for /dev/${device}`);
        used.add(next);
        added.push(`dev${next}: /dev/${device}`);
    }
    const eol = kept.find((l) => l.endsWith("\r\n")) ? "\r\n" : "\n";
    for (const entry of added) {
        // Where Proxmox's own writer (sorted keys, raw lxc.* lines last) would put it.
        const key = entry.slice(0, entry.indexOf(":"));
        let at = kept.findIndex((l) => {
            const bare = withoutEnding(l);
            if (LXC_LINE.test(bare)) return true;
            const option = OPTION_LINE.exec(bare);
            return option !== null && !bare.startsWith("#") && option[1] > key;
        });
        if (at < 0) {
            at = kept.length;
            while (at > 0 && withoutEnding(kept[at - 1]).trim() === "") at--;
        }
        if (at > 0 && !/\n$/.test(kept[at - 1])) kept[at - 1] += eol;
        kept.splice(at, 0, `${entry}${eol}`);
    }
    return { text: kept.join("") + rest, removed, added };
}
