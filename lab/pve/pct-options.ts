// The subset of pve-container's option schema that `pct create` / `pct set`
// accept in the lab, with PVE's verification messages.

type OptionType =
    | { kind: "integer"; min?: number; max?: number }
    | { kind: "number"; min?: number; max?: number }
    | { kind: "boolean" }
    | { kind: "enum"; values: string[] }
    | { kind: "string"; pattern?: RegExp; keys?: string[] };

interface OptionSpec {
    type: OptionType;
    /** Applied to a running container at once; otherwise written to [pve:pending]. */
    hotplug: boolean;
    createOnly?: boolean;
}

const bool: OptionType = { kind: "boolean" };
const str: OptionType = { kind: "string" };

const OPTIONS: Record<string, OptionSpec> = {
    arch: { type: { kind: "enum", values: ["amd64", "i386", "arm64", "armhf", "riscv32", "riscv64"] }, hotplug: false },
    cmode: { type: { kind: "enum", values: ["shell", "console", "tty"] }, hotplug: false },
    console: { type: bool, hotplug: false },
    cores: { type: { kind: "integer", min: 1, max: 8192 }, hotplug: true },
    cpulimit: { type: { kind: "number", min: 0, max: 8192 }, hotplug: true },
    cpuunits: { type: { kind: "integer", min: 0, max: 500000 }, hotplug: true },
    debug: { type: bool, hotplug: false },
    description: { type: str, hotplug: true },
    features: { type: { kind: "string", keys: ["nesting", "keyctl", "fuse", "mount", "mknod", "force_rw_sys"] }, hotplug: false },
    hookscript: { type: str, hotplug: false },
    hostname: { type: { kind: "string", pattern: /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/ }, hotplug: true },
    lock: {
        type: { kind: "enum", values: ["backup", "create", "destroyed", "disk", "fstrim", "migrate", "mounted", "rollback", "snapshot", "snapshot-delete"] },
        hotplug: true,
    },
    memory: { type: { kind: "integer", min: 16 }, hotplug: true },
    nameserver: { type: str, hotplug: true },
    onboot: { type: bool, hotplug: true },
    ostype: {
        type: { kind: "enum", values: ["debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine", "gentoo", "nixos", "unmanaged"] },
        hotplug: false,
    },
    protection: { type: bool, hotplug: true },
    rootfs: { type: str, hotplug: false },
    searchdomain: { type: str, hotplug: true },
    startup: { type: str, hotplug: true },
    swap: { type: { kind: "integer", min: 0 }, hotplug: true },
    tags: { type: str, hotplug: true },
    template: { type: bool, hotplug: false },
    timezone: { type: str, hotplug: false },
    tty: { type: { kind: "integer", min: 0, max: 6 }, hotplug: false },
    unprivileged: { type: bool, hotplug: false, createOnly: true },
};

const INDEXED: Array<{ re: RegExp; spec: OptionSpec }> = [
    {
        re: /^net([0-9]|[12][0-9]|3[01])$/,
        spec: {
            type: {
                kind: "string",
                keys: ["name", "bridge", "firewall", "gw", "gw6", "hwaddr", "ip", "ip6", "link_down", "mtu", "rate", "tag", "trunks", "type"],
            },
            hotplug: true,
        },
    },
    { re: /^mp([0-9]|[1-9][0-9]|2[0-4][0-9]|25[0-5])$/, spec: { type: str, hotplug: false } },
    { re: /^dev([0-9]|[1-9][0-9]|2[0-4][0-9]|25[0-5])$/, spec: { type: str, hotplug: false } },
    { re: /^unused([0-9]|[1-9][0-9]|2[0-4][0-9]|25[0-5])$/, spec: { type: str, hotplug: true } },
];

export function optionSpec(name: string): OptionSpec | undefined {
    return OPTIONS[name] ?? INDEXED.find((i) => i.re.test(name))?.spec;
}

/** Normalizes a value as PVE stores it, or returns PVE's message for it. */
export function verifyOption(name: string, value: string): { value: string } | { error: string } {
    const spec = optionSpec(name);
    if (!spec) return { error: `${name}: property is not defined in schema and the schema does not allow additional properties` };
    const t = spec.type;
    switch (t.kind) {
        case "integer": {
            if (!/^-?\d+$/.test(value)) return { error: `${name}: type check ('integer') failed - got '${value}'` };
            const n = Number(value);
            if (t.min !== undefined && n < t.min) return { error: `${name}: value must have a minimum value of ${t.min}` };
            if (t.max !== undefined && n > t.max) return { error: `${name}: value must have a maximum value of ${t.max}` };
            return { value: String(n) };
        }
        case "number": {
            if (!/^-?\d+(\.\d+)?$/.test(value)) return { error: `${name}: type check ('number') failed - got '${value}'` };
            const n = Number(value);
            if (t.min !== undefined && n < t.min) return { error: `${name}: value must have a minimum value of ${t.min}` };
            if (t.max !== undefined && n > t.max) return { error: `${name}: value must have a maximum value of ${t.max}` };
            return { value };
        }
        case "boolean": {
            const v = value.toLowerCase();
            if (["1", "on", "yes", "true"].includes(v)) return { value: "1" };
            if (["0", "off", "no", "false"].includes(v)) return { value: "0" };
            return { error: `${name}: type check ('boolean') failed - got '${value}'` };
        }
        case "enum":
            if (!t.values.includes(value)) return { error: `${name}: value '${value}' does not have a value in the enumeration '${t.values.join(", ")}'` };
            return { value };
        case "string": {
            if (t.pattern && !t.pattern.test(value)) return { error: `${name}: value does not match the regex pattern` };
            if (t.keys) {
                for (const part of value.split(",")) {
                    const key = part.includes("=") ? part.slice(0, part.indexOf("=")) : part;
                    if (!t.keys.includes(key))
                        return {
                            error: `${name}: invalid format - format error\n${name}.${key}: property is not defined in schema and the schema does not allow additional properties`,
                        };
                }
                if (name.startsWith("net") && !value.split(",").some((p) => p.startsWith("name="))) {
                    return { error: `${name}: invalid format - format error\n${name}.name: property is missing and it is not optional` };
                }
            }
            return { value };
        }
        default: {
            const never: never = t;
            return never;
        }
    }
}

export function isHotplug(name: string): boolean {
    return optionSpec(name)?.hotplug ?? false;
}

export function isCreateOnly(name: string): boolean {
    return optionSpec(name)?.createOnly ?? false;
}
