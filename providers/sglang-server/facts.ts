import { BoxContradiction, boxContradictions, BoxExpectations, BoxFactsRead, boxFactsCommand, drafterPath, parseBoxFacts } from "../../core/box/box-facts";
import type { RemoteHost } from "../../remote/remote-host";
import type { ProviderRun } from "../provider-run";
import type { ServiceOutputs, ServiceProps } from "./props";
import type { VenvPlan } from "../../core/venv/venv-layout";

/** The box's facts, or why they could not be read (a missing python, say). */

/** Reads the box's facts about the declared server (core/box/box-facts.ts): one command. */
export async function readBoxFacts(remote: RemoteHost, expect: BoxExpectations): Promise<BoxFactsRead> {
    // A venv the stack stages runs only with the stack's marker in it (the read-only gate allows a --venv-root python only so).
    const r = await remote.run(boxFactsCommand(expect.python, expect.modelPath, expect.stagedVenv !== undefined));
    if (r.code !== 0) return { error: `${expect.python} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 300)}` };
    try {
        return parseBoxFacts(r.stdout);
    } catch (e) {
        return { error: (e as Error).message };
    }
}

/** The drafter folder's facts (its config.json, its digest): the same read as the model's, on the drafter's folder. Undefined without a drafter. */
export async function readDrafterFacts(remote: RemoteHost, expect: BoxExpectations | undefined): Promise<BoxFactsRead | undefined> {
    const path = drafterPath(expect);
    if (!expect || path === undefined) return undefined;
    return readBoxFacts(remote, { ...expect, modelPath: path });
}

/**
 * The drafter folder's digest now (core/box/box-facts.ts folderDigest). Undefined
 * without a drafter, or when the folder cannot be read (the rollout's own
 * checks say why).
 */
export async function readDrafterDigest(remote: RemoteHost, expect: BoxExpectations | undefined): Promise<string | undefined> {
    const facts = await readDrafterFacts(remote, expect);
    return facts === undefined || "error" in facts ? undefined : facts.folderDigest;
}

/**
 * The box's facts for the preview's check of `news`: those the refresh read
 * (olds.boxFacts), which are about the old python and model folder. When the
 * declared python or model path changed (an upgrade into another venv, a new
 * model), the facts are read again for the new ones, so the preview judges the
 * venv and folder the rollout will start, not the ones it replaces. Nothing is
 * read when the refresh read nothing (a first preview, a box not reached).
 */
export async function boxFactsForCheck(run: ProviderRun, olds: Partial<ServiceOutputs>, news: ServiceProps): Promise<BoxFactsRead | undefined> {
    const read = olds.boxFacts;
    const before = olds.expectBox;
    const expect = news.expectBox;
    if (!read || !before || !expect) return read;
    if (before.python === expect.python && before.modelPath === expect.modelPath) return read;
    return readBoxFacts(run.remoteFor(news.connection, "server"), expect);
}

/**
 * Whether the rollout stages the declared release's venv before it stops
 * anything (remote/venv-staging.ts): service.venv, and the box's facts say its
 * python is not there yet or its staging was cut short (the contradictions
 * let that through only for a venv the stack stages).
 */
export function stagesRelease(props: ServiceProps, facts: BoxFactsRead | undefined): props is ServiceProps & { venv: VenvPlan } {
    return props.venv !== undefined && facts !== undefined && !("error" in facts) && (facts.python === "missing" || facts.python === "staging");
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
