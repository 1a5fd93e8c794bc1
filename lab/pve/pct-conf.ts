// Proxmox VE container config (/etc/pve/lxc/<vmid>.conf): parse and render the
// way pve-container's write_pct_config does: description as leading '#'
// comments, then "key: value" sorted by key, then the raw lxc.* entries in
// their order, then sections ([pve:pending], snapshots).

export interface PctConf {
    description: string;
    options: Map<string, string>;
    lxc: Array<[string, string]>;
    /** [pve:pending] values, and the option names pending deletion. */
    pending: Map<string, string>;
    pendingDelete: string[];
    /** Other sections (snapshots), kept as they were. */
    tail: string;
}

export function emptyConf(): PctConf {
    return { description: "", options: new Map(), lxc: [], pending: new Map(), pendingDelete: [], tail: "" };
}

function decodeComment(s: string): string {
    return s.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

function encodeComment(s: string): string {
    return s.replace(/[%\r\n]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

export function parsePctConf(text: string): PctConf {
    const conf = emptyConf();
    const descr: string[] = [];
    let section: "main" | "pending" | "other" = "main";
    const tail: string[] = [];
    for (const line of text.split("\n")) {
        const sec = /^\[([^\]]+)\]\s*$/.exec(line);
        if (sec) {
            section = sec[1] === "pve:pending" ? "pending" : "other";
            if (section === "other") tail.push(line);
            continue;
        }
        if (section === "other") {
            tail.push(line);
            continue;
        }
        if (section === "main" && line.startsWith("#")) {
            descr.push(decodeComment(line.slice(1)));
            continue;
        }
        if (line.trim() === "") continue;
        const m = /^([a-z][a-z0-9_.-]*):\s*(.*)$/.exec(line);
        if (!m) continue;
        const [, key, value] = m as unknown as [string, string, string];
        if (section === "pending") {
            if (key === "delete") conf.pendingDelete = value.split(/[,;\s]+/).filter(Boolean);
            else conf.pending.set(key, value);
        } else if (key.startsWith("lxc.")) {
            conf.lxc.push([key, value]);
        } else {
            conf.options.set(key, value);
        }
    }
    conf.description = descr.join("\n");
    while (tail.length > 0 && tail[tail.length - 1] === "") tail.pop();
    conf.tail = tail.join("\n");
    return conf;
}

export function renderPctConf(conf: PctConf): string {
    let out = "";
    if (conf.description) for (const l of conf.description.split("\n")) out += `#${encodeComment(l)}\n`;
    for (const key of [...conf.options.keys()].sort()) out += `${key}: ${conf.options.get(key)}\n`;
    for (const [k, v] of conf.lxc) out += `${k}: ${v}\n`;
    if (conf.pending.size > 0 || conf.pendingDelete.length > 0) {
        out += "\n[pve:pending]\n";
        if (conf.pendingDelete.length > 0) out += `delete: ${conf.pendingDelete.join(",")}\n`;
        for (const key of [...conf.pending.keys()].sort()) out += `${key}: ${conf.pending.get(key)}\n`;
    }
    if (conf.tail) out += `\n${conf.tail}\n`;
    return out;
}

/** The config with pending changes applied (what `pct config` shows without --current). */
export function withPending(conf: PctConf): PctConf {
    const options = new Map(conf.options);
    for (const k of conf.pendingDelete) options.delete(k);
    for (const [k, v] of conf.pending) options.set(k, v);
    return { ...conf, options, pending: new Map(), pendingDelete: [] };
}

export interface NvidiaDevice {
    /** e.g. nvidia0, nvidiactl, nvidia-uvm */
    name: string;
    major: number;
    minor: number;
}

/** The NVIDIA device nodes of a host with `gpuCount` GPUs. */
export function nvidiaDevices(gpuCount: number, majors: { nvidia: number; nvidiaUvm: number }): NvidiaDevice[] {
    const devs: NvidiaDevice[] = [];
    for (let i = 0; i < gpuCount; i++) devs.push({ name: `nvidia${i}`, major: majors.nvidia, minor: i });
    devs.push({ name: "nvidiactl", major: majors.nvidia, minor: 255 });
    devs.push({ name: "nvidia-uvm", major: majors.nvidiaUvm, minor: 0 });
    devs.push({ name: "nvidia-uvm-tools", major: majors.nvidiaUvm, minor: 1 });
    return devs;
}

/** The raw lxc.* lines that pass the given devices through (as the field container has them). */
export function passthroughEntries(devs: NvidiaDevice[]): Array<[string, string]> {
    const majors = [...new Set(devs.map((d) => d.major))];
    return [
        ...majors.map((m): [string, string] => ["lxc.cgroup2.devices.allow", `c ${m}:* rwm`]),
        ...devs.map((d): [string, string] => ["lxc.mount.entry", `/dev/${d.name} dev/${d.name} none bind,optional,create=file`]),
    ];
}
