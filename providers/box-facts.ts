import { BoxContradiction, boxContradictions, BoxExpectations, BoxFacts, boxFactsCommand, parseBoxFacts } from "../core/box-facts";
import type { RemoteHost } from "../remote/remote-host";

/** The box's facts, or why they could not be read (a missing python, say). */
export type BoxFactsRead = BoxFacts | { error: string };

/** Reads the box's facts about the declared server (core/box-facts.ts): one command. */
export async function readBoxFacts(remote: RemoteHost, expect: BoxExpectations): Promise<BoxFactsRead> {
    const r = await remote.run(boxFactsCommand(expect.python, expect.modelPath));
    if (r.code !== 0) return { error: `${expect.python} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 300)}` };
    try {
        return parseBoxFacts(r.stdout);
    } catch (e) {
        return { error: (e as Error).message };
    }
}

/** The contradictions between what is declared and what the box says (none when the facts could not be read: see assertBoxServes). */
export function boxFailures(expect: BoxExpectations | undefined, facts: BoxFactsRead | undefined): BoxContradiction[] {
    if (!expect || !facts) return [];
    if ("error" in facts) return [{ property: "service.python", reason: `service.python ${expect.python} cannot run on the box: ${facts.error}` }];
    return boxContradictions(expect, facts);
}

/**
 * Before a rollout touches anything: the box must have what the declared
 * server needs. Throws naming every contradiction; nothing on the box changed.
 */
export async function assertBoxServes(remote: RemoteHost, unitName: string, expect: BoxExpectations | undefined): Promise<BoxFactsRead | undefined> {
    if (!expect) return undefined;
    const facts = await readBoxFacts(remote, expect);
    const failures = boxFailures(expect, facts);
    if (failures.length > 0) {
        throw new Error(
            `[${unitName}] the box cannot serve the declared config; nothing on the box was changed:\n` + failures.map((f) => `  - ${f.reason}`).join("\n"),
        );
    }
    return facts;
}
