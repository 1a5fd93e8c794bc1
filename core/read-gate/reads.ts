// The reads the read-only gate (gate/sglang-serve-read-gate) allows, as the
// stack's own builders render them: each read is rendered here by the real
// builder with placeholder parameters, and the install script carries the
// result to the box, where the gate matches a received command byte for byte
// against these templates, each parameter within its alphabet (and, for
// vmid, python and model, within the values the key's line pins). The gate
// holds no copy of any read, so the two cannot drift (issue 22, Deliver 7).
import { boxFactsCommand } from "../box/box-facts";
import { manifestCheckArgv } from "../weights/manifest";
import { containerReadScript, gpuFactsScript } from "../box/host-reads";
import { serverInfoReadArgv } from "../sglang/server-info-read";
import { remoteArgv } from "../shell";
import { renderUnitReadScript, unitPaths } from "../unit/unit-read";

/** The most units one unit read may name (a stack's services on one box, read together). */
export const GATE_MAX_UNITS = 16;

/** A template part: literal text, or a parameter by name. */
export type TemplatePart = string | { param: string };

/** One read: its argv as templates, one per argv word. */
export interface GateRead {
    /** What the gate logs and answers for it: gpu-facts, container-read, unit-read, server-info, box-facts. */
    shape: string;
    /** host: sent to the Proxmox host (or the direct box) as is; server: where the server runs (after `pct exec <vmid> --` for a --vmid key). */
    where: "host" | "server";
    /** Only for a --vmid key (a Proxmox host): pct commands are no read of a direct box. */
    pctOnly?: boolean;
    /**
     * The box-facts read whose launcher runs the python only in a venv that
     * carries the stack's staged marker (core/box/box-facts.ts): the only one the
     * gate allows for a python it allows through --venv-root.
     */
    stagedVenv?: boolean;
    argv: TemplatePart[][];
}

export interface GateReads {
    /** GATE_MAX_UNITS, for the gate's message. */
    maxUnits: number;
    /** Each parameter's alphabet (a regular expression, the same in JavaScript and Python). */
    params: Record<string, string>;
    /** The argv before a server read for a --vmid key: `pct exec <vmid> --`. */
    inContainer: TemplatePart[][];
    reads: GateRead[];
}

/**
 * The parameters' alphabets. A parameter whose name ends in digits (name0,
 * name1) takes the alphabet of its base name. vmid, python and model must
 * also be one of the values the key's line gives (--vmid, --python, --model).
 */
export const GATE_PARAMS: Record<string, string> = {
    marker: "sglang-serve-[0-9a-f]{16}",
    vmid: "[1-9][0-9]{2,8}",
    name: "[a-z][a-z0-9-]{0,39}",
    timeout: "[1-9][0-9]{0,3}",
    python: "/[A-Za-z0-9._/+-]{1,255}",
    model: "/[A-Za-z0-9._/+-]{1,255}",
};

/** Two sets of placeholder values: a template is what both renderings have in common. */
const VARIANTS = [
    {
        marker: "sglang-serve-a1b2c3d4e5f6a7b8",
        vmid: 918273645,
        timeout: 3571,
        name: (k: number) => `zq${k}xazq`,
        python: "/zqpa/bin/python3",
        model: "/zqma",
    },
    {
        marker: "sglang-serve-8b7a6f5e4d3c2b1a",
        vmid: 827364519,
        timeout: 3583,
        name: (k: number) => `zq${k}xbzq`,
        python: "/zqpb/bin/python3",
        model: "/zqmb",
    },
] as const;

type Variant = (typeof VARIANTS)[number];

/** The placeholder values of one variant, by parameter name, for `units` unit names. */
function valuesOf(v: Variant, units: number): Map<string, string> {
    const m = new Map<string, string>([
        ["marker", v.marker],
        ["vmid", String(v.vmid)],
        ["timeout", String(v.timeout)],
        ["python", v.python],
        ["model", v.model],
    ]);
    for (let k = 0; k < units; k++) {
        m.set(`name${k}`, v.name(k));
    }
    return m;
}

/** Splits rendered words at the placeholder values: literal text and parameters. */
function toTemplate(words: readonly string[], values: Map<string, string>): TemplatePart[][] {
    const byValue = new Map([...values].map(([name, value]) => [value, name]));
    const pattern = new RegExp(
        [...byValue.keys()]
            .sort((a, b) => b.length - a.length)
            .map(escapeRegExp)
            .join("|"),
        "g",
    );
    return words.map((word) => {
        const parts: TemplatePart[] = [];
        let at = 0;
        for (const m of word.matchAll(pattern)) {
            if (m.index > at) parts.push(word.slice(at, m.index));
            parts.push({ param: byValue.get(m[0])! });
            at = m.index + m[0].length;
        }
        if (at < word.length) parts.push(word.slice(at));
        return parts;
    });
}

function escapeRegExp(text: string): string {
    return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/**
 * The read's template, from the builder rendered with both variants; throws
 * when they differ beyond the placeholders (a placeholder value that also
 * occurs as literal text, or a parameter that changes the read's shape).
 */
function templateOf(what: string, units: number, render: (v: Variant, values: Map<string, string>) => string[]): TemplatePart[][] {
    const [a, b] = VARIANTS.map((v) => {
        const values = valuesOf(v, units);
        return toTemplate(render(v, values), values);
    });
    if (JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`the read gate's template of ${what} depends on more than its parameters`);
    return a!;
}

function unitRequests(v: Variant, units: number) {
    return Array.from({ length: units }, (_, k) => {
        const unitName = `sglang-${v.name(k)}.service`;
        const paths = unitPaths(unitName);
        // No expected digest: the read-only key learns only whether the env file is there, and cannot send a
        // digest of its choosing to learn whether the 0600 file matches it (issue 34 finding 8). Only the
        // deploy key's reads, which the gate never sees, compare the file with the declared one.
        return { unitName, unitPath: paths.unit, environmentFilePath: paths.environmentFile, expectedEnvironmentHash: "" };
    });
}

/** Every read a refresh sends, rendered by the stack's builders with placeholders. */
export function gateReads(): GateReads {
    const reads: GateRead[] = [
        { shape: "gpu-facts", where: "host", argv: templateOf("gpu-facts", 0, (v) => ["sh", "-c", gpuFactsScript(v.marker)]) },
        {
            shape: "container-read",
            where: "host",
            pctOnly: true,
            argv: templateOf("container-read", 0, (v) => ["sh", "-c", containerReadScript(v.vmid, v.marker)]),
        },
    ];
    for (let n = 1; n <= GATE_MAX_UNITS; n++) {
        reads.push({
            shape: "unit-read",
            where: "server",
            argv: templateOf(`unit-read of ${n}`, n, (v) => ["sh", "-c", renderUnitReadScript(unitRequests(v, n), v.marker)]),
        });
    }
    reads.push(
        {
            shape: "server-info",
            where: "server",
            argv: templateOf("server-info", 1, (v) => {
                const [u] = unitRequests(v, 1);
                return serverInfoReadArgv({ unitPath: u!.unitPath, environmentFilePath: u!.environmentFilePath, timeoutSeconds: v.timeout });
            }),
        },
        { shape: "box-facts", where: "server", argv: templateOf("box-facts", 0, (v) => boxFactsCommand(v.python, v.model)) },
        {
            shape: "box-facts",
            where: "server",
            stagedVenv: true,
            argv: templateOf("box-facts of a staged venv", 0, (v) => boxFactsCommand(v.python, v.model, true)),
        },
        // A staged revision folder against its manifest (issue 33 item 8): the refresh's sizes and mtimes, and drift --verify's
        // sha256s; only in a folder the key's line pins (--model: the served revision folder, which service.model.path holds).
        { shape: "manifest-check", where: "server", argv: templateOf("manifest-check", 0, (v) => manifestCheckArgv(v.model, false)) },
        { shape: "manifest-check", where: "server", argv: templateOf("manifest-check --verify", 0, (v) => manifestCheckArgv(v.model, true)) },
    );
    return {
        maxUnits: GATE_MAX_UNITS,
        params: GATE_PARAMS,
        inContainer: templateOf("pct exec", 0, (v) => remoteArgv("pct-exec", v.vmid, [])),
        reads,
    };
}
