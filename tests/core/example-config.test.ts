/**
 * One example config: Pulumi.kpro5.yaml, the field's stack file. The others
 * derive from it (tests/core/fixtures.ts fieldConfig, and the lab's stacks
 * through lab/stack-file.ts, both read the file) or are held to it here:
 * docs/design.md's "Stack config" block (every key, with kpro5's values and
 * the optional ones) and Pulumi.ct129.yaml (the same server reached directly).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as yaml from "js-yaml";
import { validateStackConfig } from "../../core/config/config";
import { formatConfigIssues } from "../../core/config/issues";
import { isRecord } from "../../core/is-record";
import { rawStackConfig, stackFileSource } from "../../core/config/stack-config-source";
import { committedStackSettings } from "./fixtures";

const repo = path.join(__dirname, "..", "..");

/** The yaml block under docs/design.md's "## Stack config" heading, parsed. */
function designBlock(): { config: Record<string, unknown> } {
    const text = fs.readFileSync(path.join(repo, "docs", "design.md"), "utf8");
    const match = /^## Stack config\b[^\n]*\n[\s\S]*?^```yaml\n([\s\S]*?)^```$/m.exec(text);
    assert.ok(match, 'docs/design.md has no yaml block under "## Stack config"');
    return yaml.load(match[1]) as { config: Record<string, unknown> };
}

/** Every leaf of a config map as [dotted path, value]; a list is one leaf. */
function leaves(value: unknown, prefix = ""): Array<[string, unknown]> {
    if (!isRecord(value)) return [[prefix, value]];
    return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix === "" ? k : `${prefix}.${k}`));
}

describe("one example config: Pulumi.kpro5.yaml", () => {
    it("docs/design.md's Stack config block validates as a stack file (its secrets as stand-ins)", () => {
        const result = validateStackConfig(rawStackConfig(stackFileSource(designBlock(), "0123456789abcdef0123456789abcdef")));
        assert.ok(result.ok, result.ok ? "" : formatConfigIssues(result.issues));
    });

    it("docs/design.md's Stack config block has kpro5's value for every key Pulumi.kpro5.yaml sets", () => {
        const documented = new Map(leaves(designBlock().config));
        const differing = leaves(committedStackSettings("kpro5"))
            .filter(([key, value]) => !documented.has(key) || JSON.stringify(documented.get(key)) !== JSON.stringify(value))
            .map(([key, value]) => `${key}: kpro5 ${JSON.stringify(value)}, docs/design.md ${JSON.stringify(documented.get(key))}`);
        assert.deepEqual(differing, []);
    });

    it("Pulumi.ct129.yaml is kpro5's server reached straight over SSH at its endpoint: only the host's name, address and topology differ, and no container", () => {
        const kpro5 = committedStackSettings("kpro5") as Record<string, Record<string, unknown>>;
        const ct129 = committedStackSettings("ct129") as Record<string, Record<string, unknown>>;
        const host = ct129["sglang-serve:host"];
        assert.equal(host.topology, "direct");
        assert.equal(host.address, kpro5["sglang-serve:service"].endpointHost);
        const expected = structuredClone(kpro5);
        expected["sglang-serve:host"] = { ...kpro5["sglang-serve:host"], name: host.name, address: host.address, topology: "direct" };
        delete expected["sglang-serve:container"];
        assert.deepEqual(ct129, expected);
    });
});
