/**
 * What the config rules find: issues (each naming the Pulumi key, the value
 * and the fix), warnings and notices, and how findings written about one
 * server's sections are filed under the keys they are declared at.
 */
import type { ConfigIssue } from "./issues";
import { CONFIG_NAMESPACE } from "./namespace";

export class Findings {
    readonly issues: ConfigIssue[] = [];
    readonly warnings: string[] = [];
    /** Per issue, the other keys its verdict rests on (to drop it when one of them was invalid). */
    readonly dependsOn = new Map<ConfigIssue, readonly string[]>();
    issue(path: string, value: unknown, message: string, dependsOn: readonly string[] = []): void {
        const issue = { path, value, message };
        this.issues.push(issue);
        this.dependsOn.set(issue, dependsOn);
    }
    warn(message: string): void {
        this.warnings.push(message);
    }
    /** What the preview says without it being a problem (an info line). */
    readonly notices: string[] = [];
    note(message: string): void {
        this.notices.push(message);
    }

    /**
     * Adds these findings, written about the sections of a stack of one box
     * and one server (`host`, `container`, `service`), to `f` as findings
     * about the keys they stand for here (`servers[1]`, `boxes[0].host`): the
     * rules are written once, for those sections. `renames` maps a section
     * to its key; paths are renamed where they start with it, messages where
     * they name a key under it (`service.port`, `sglang-serve:host.address`).
     */
    copyInto(f: Findings, renames: Readonly<Record<string, string>>): void {
        const pairs = Object.entries(renames).filter(([from, to]) => from !== to);
        const path = (p: string) => {
            const pair = pairs.find(([from]) => p === from || p.startsWith(`${from}.`) || p.startsWith(`${from}[`));
            return pair ? pair[1] + p.slice(pair[0].length) : p;
        };
        // A key under the section (`service.port`), or the section as a Pulumi key (`sglang-serve:container`).
        const text = (t: string) =>
            pairs.reduce(
                (out, [from, to]) => out.replace(new RegExp(`(?<![\\w.-])${from}(?=\\.[A-Za-z]|\\[)|(?<=${CONFIG_NAMESPACE}:)${from}\\b`, "g"), to),
                t,
            );
        for (const issue of this.issues) f.issue(path(issue.path), issue.value, text(issue.message), (this.dependsOn.get(issue) ?? []).map(path));
        this.warnings.forEach((w) => f.warn(text(w)));
        this.notices.forEach((n) => f.note(text(n)));
    }
}
